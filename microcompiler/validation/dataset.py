"""A real dataset for ``validate --dataset FILE [--labels FILE]`` (docs/validate.md).

The samples come from an ``.npz`` archive (one array per model input, named after the input, or
``x`` / ``input0``, ``input1``, ... ; the first axis counts the samples; an optional ``y`` or
``labels`` array holds the classes), a ``.csv`` file (one-input models: a sample per row, its values
flattened in the input's order) or a directory of ``.npy`` files (one per sample). Real-valued data
for a quantized input is quantized with the input's scale and zero point, as the firmware's caller
would. Labels come with the archive or from ``--labels`` (``.npy``, or text/CSV with one integer
class per line).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from microcompiler.errors import MicrocompilerError
from microcompiler.inputs import check_input, quantize_input
from microcompiler.ir import np_dtype
from microcompiler.user_files import MAX_INPUT_BYTES, read_user_file
from microcompiler.validation.runner import Sample

LABEL_KEYS = ("y", "labels")


def load_dataset(path: str, inputs_meta: list[dict]) -> tuple[list[Sample], np.ndarray | None]:
    """(samples, labels from the archive or None)."""
    suffix = Path(path).suffix.lower()
    if suffix == ".npz":
        return _from_npz(path, inputs_meta)
    if suffix in (".csv", ".txt"):
        return _from_csv(path, inputs_meta), None
    raise MicrocompilerError(
        f"--dataset {path}: give an .npz archive (one array per model input, the first axis "
        "counting the samples) or a .csv file (one sample per row); a directory of .npy "
        "files goes to --inputs DIR"
    )


def _from_npz(path: str, inputs_meta: list[dict]) -> tuple[list[Sample], np.ndarray | None]:
    data = read_user_file(path, "dataset", MAX_INPUT_BYTES)
    try:
        archive = np.load(io.BytesIO(data), allow_pickle=False)
        arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError, EOFError):
        raise MicrocompilerError(
            f"--dataset {path} is not a readable .npz archive; save it with numpy.savez('data.npz', x=inputs, y=labels)"
        ) from None
    labels = next((arrays.pop(k) for k in LABEL_KEYS if k in arrays), None)
    columns = []
    for k, meta in enumerate(inputs_meta):
        names = [meta["name"], f"input{k}"] + (["x", "inputs", "arr_0"] if len(inputs_meta) == 1 else [])
        found = next((n for n in names if n in arrays), None)
        if found is None:
            raise MicrocompilerError(
                f"--dataset {path} has no array for model input {k} ('{meta['name']}'); name "
                f"it '{meta['name']}' or 'input{k}' (arrays there: {', '.join(arrays) or 'none'})"
            )
        columns.append((found, arrays[found], meta))
    counts = {len(a) if a.ndim else 0 for _, a, _ in columns}
    if len(counts) != 1 or 0 in counts:
        raise MicrocompilerError(
            f"--dataset {path}: the input arrays hold different numbers of samples "
            f"({', '.join(f'{n}: {len(a)}' for n, a, _ in columns)}); the first axis counts them"
        )
    n = counts.pop()
    samples = [
        Sample([_sample(a[s], meta, f"{path}:{name}[{s}]") for name, a, meta in columns], f"sample {s}")
        for s in range(n)
    ]
    return samples, labels


def _from_csv(path: str, inputs_meta: list[dict]) -> list[Sample]:
    if len(inputs_meta) != 1:
        raise MicrocompilerError(
            f"--dataset {path}: a CSV file holds one input per row, but the model has "
            f"{len(inputs_meta)} inputs; use an .npz archive with one array per input"
        )
    meta = inputs_meta[0]
    text = read_user_file(path, "dataset", MAX_INPUT_BYTES).decode("utf-8", "replace")
    rows = [line for line in text.splitlines() if line.strip()]
    if rows and not _numeric(rows[0]):
        rows = rows[1:]  # a header
    size = int(np.prod(meta["shape"]))
    samples = []
    for k, line in enumerate(rows):
        try:
            values = np.array([float(v) for v in line.replace(";", ",").split(",")], dtype=np.float64)
        except ValueError:
            raise MicrocompilerError(f"--dataset {path}: row {k + 1} is not numbers separated by commas") from None
        if values.size != size:
            raise MicrocompilerError(
                f"--dataset {path}: row {k + 1} has {values.size} values but the model input "
                f"'{meta['name']}' has {size} ({meta['shape']})"
            )
        samples.append(Sample([_sample(values.reshape(meta["shape"]), meta, f"{path} row {k + 1}")], f"row {k + 1}"))
    if not samples:
        raise MicrocompilerError(f"--dataset {path} has no rows")
    return samples


def _numeric(line: str) -> bool:
    try:
        [float(v) for v in line.replace(";", ",").split(",")]
    except ValueError:
        return False
    return True


def _sample(array: np.ndarray, meta: dict, source: str) -> np.ndarray:
    want = np.dtype(np_dtype(meta["dtype"]))
    if array.dtype.kind == "f" and want.kind in "iu":
        array = quantize_input(array, meta)  # real values for a quantized input
    elif array.dtype.kind in "iu" and want.kind == "f":
        array = array.astype(want)
    elif array.dtype.kind == "f" and want.kind == "f":
        array = array.astype(want)
    return check_input(array, meta, source)


def load_labels(path: str, count: int) -> np.ndarray:
    """One integer class per sample, from .npy or a text/CSV file (one per line)."""
    data = read_user_file(path, "labels", MAX_INPUT_BYTES)
    if Path(path).suffix.lower() == ".npy":
        try:
            labels = np.load(io.BytesIO(data), allow_pickle=False)
        except (OSError, ValueError, EOFError):
            raise MicrocompilerError(f"--labels {path} is not a .npy array; save it with numpy.save") from None
    else:
        lines = [line.split(",")[0].strip() for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
        if lines and not lines[0].lstrip("-").isdigit():
            lines = lines[1:]  # a header
        try:
            labels = np.array([int(v) for v in lines])
        except ValueError:
            raise MicrocompilerError(f"--labels {path}: give one integer class per line") from None
    return check_labels(np.asarray(labels), count, f"--labels {path}")


def check_labels(labels: np.ndarray, count: int, what: str) -> np.ndarray:
    labels = labels.reshape(-1) if labels.ndim <= 1 or labels.shape[1:] == (1,) * (labels.ndim - 1) else labels
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise MicrocompilerError(
            f"{what}: give one integer class per sample (shape {list(labels.shape)}, dtype {labels.dtype})"
        )
    if len(labels) != count:
        raise MicrocompilerError(f"{what} has {len(labels)} labels for {count} samples; give one per sample")
    return labels.astype(np.int64)
