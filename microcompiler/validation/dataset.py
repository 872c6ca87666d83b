"""Real samples for ``validate --dataset FILE|DIR [--labels FILE]`` (docs/validate.md), and the labels'
metrics: the one place the command and ``microcompiler.api.validate`` get them from.

The samples come from an ``.npz`` archive (one array per model input, named after the input, or
``x`` / ``input0``, ``input1``, ... ; the first axis counts the samples; an optional ``y`` or
``labels`` array holds the classes), a ``.csv`` file (one-input models: a sample per row, its values
flattened in the input's order) or a directory of per-sample files (``.npy``, ``.npz``, images:
``sample_files.py``). Real-valued data for a quantized input is quantized with the input's scale and
zero point, as the firmware's caller would. Labels come with the archive or from ``--labels``
(``.npy``, text with one integer class per line in the samples' order, or ``filename,label`` rows
for a directory).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from microcompiler.codegen.model_info import TensorInfo
from microcompiler.errors import MicrocompilerError
from microcompiler.inputs import check_input, quantize_input
from microcompiler.ir import np_dtype
from microcompiler.user_files import MAX_INPUT_BYTES, load_npy, read_user_file
from microcompiler.validation.metrics import label_metrics
from microcompiler.validation.runner import Sample
from microcompiler.validation.sample_files import input_array, load_directory, npz_arrays

LABEL_KEYS = ("y", "labels")
MAX_SAMPLES = 100_000  # samples in one validation
MAX_CLASSES = 4096  # the confusion matrix is classes x classes
DEFAULT_PIXEL_RANGE = (0.0, 1.0)


def samples_and_labels(
    inputs_meta: list[TensorInfo],
    *,
    dataset: str | Path | None = None,
    labels: str | Path | None = None,
    otherwise: Callable[[], list[Sample]],
    pixel_range: tuple[float, float] = DEFAULT_PIXEL_RANGE,
    outputs_meta: list[TensorInfo] | None = None,
) -> tuple[list[Sample], np.ndarray | None]:
    """The samples (from ``dataset``, else ``otherwise()``) and their labels (from ``labels``, else
    the archive's own, else None), checked one per sample and, with ``outputs_meta``, each a class
    of the model's first output (0 to its size - 1): before anything runs."""
    classes = class_count(outputs_meta) if labels is not None or dataset is not None else None
    found, files = None, None
    if dataset is not None:
        samples, found = load_dataset(str(dataset), inputs_meta, pixel_range)
        files = [s.source for s in samples] if Path(dataset).is_dir() else None
    else:
        samples = otherwise()
    if labels is not None:
        return samples, load_labels(str(labels), len(samples), files, classes)
    if found is not None:
        return samples, check_labels(found, len(samples), f"the labels in {dataset}", classes)
    return samples, None


def class_count(outputs_meta: list[TensorInfo] | None) -> int | None:
    """The classes labels may name: the size of the model's first output (its class scores)."""
    if not outputs_meta:
        return None
    return int(np.prod([int(d) for d in outputs_meta[0].shape], dtype=np.int64))


def add_label_metrics(report: dict, collected: dict, labels: np.ndarray | None) -> dict:
    """``report["labels"]``: top-1 accuracy and confusion of every source (the device's modes, TFLite
    Micro, the float model) against ``labels``; the report unchanged without labels."""
    if labels is not None:
        report["labels"] = {
            source: label_metrics([outs[0] for outs in collected[source]], labels)
            for source in [*report["modes"], "tflm", "ort", "float"]
            if source in collected
        }
    return report


def load_dataset(
    path: str,
    inputs_meta: list[TensorInfo],
    pixel_range: tuple[float, float] = DEFAULT_PIXEL_RANGE,
    what: str = "--dataset",
) -> tuple[list[Sample], np.ndarray | None]:
    """(samples, labels from the archive or None)."""
    if Path(path).is_dir():
        per_file = load_directory(Path(path), inputs_meta, _sample, pixel_range, what)
        return [Sample(inputs, name) for name, inputs in per_file], None
    suffix = Path(path).suffix.lower()
    if suffix == ".npz":
        return _from_npz(path, inputs_meta)
    if suffix in (".csv", ".txt"):
        return _from_csv(path, inputs_meta), None
    raise MicrocompilerError(
        f"{what} {path}: give an .npz archive (one array per model input, the first axis "
        "counting the samples), a .csv file (one sample per row) or a directory of per-sample "
        ".npy, .npz or image files"
    )


def _from_npz(path: str, inputs_meta: list[TensorInfo]) -> tuple[list[Sample], np.ndarray | None]:
    data = read_user_file(path, "dataset", MAX_INPUT_BYTES)
    most = MAX_SAMPLES * max(int(np.prod(m.shape)) for m in inputs_meta)  # the samples of the largest input
    arrays = npz_arrays(data, path, MAX_INPUT_BYTES, "save it with numpy.savez('data.npz', x=inputs, y=labels)", most)
    labels = next((arrays.pop(k) for k in LABEL_KEYS if k in arrays), None)
    columns = [(*input_array(arrays, k, meta, len(inputs_meta), path), meta) for k, meta in enumerate(inputs_meta)]
    counts = {len(a) if a.ndim else 0 for _, a, _ in columns}
    if len(counts) != 1 or 0 in counts:
        raise MicrocompilerError(
            f"--dataset {path}: the input arrays hold different numbers of samples "
            f"({', '.join(f'{n}: {len(a) if a.ndim else 0}' for n, a, _ in columns)}); the first axis counts them"
        )
    n = counts.pop()
    samples = [
        Sample([_sample(a[s], meta, f"{path}:{name}[{s}]") for name, a, meta in columns], f"sample {s}")
        for s in range(n)
    ]
    return samples, labels


def _from_csv(path: str, inputs_meta: list[TensorInfo]) -> list[Sample]:
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
    size = int(np.prod(meta.shape))
    samples = []
    for k, line in enumerate(rows):
        try:
            values = np.array([float(v) for v in line.replace(";", ",").split(",")], dtype=np.float64)
        except ValueError:
            raise MicrocompilerError(f"--dataset {path}: row {k + 1} is not numbers separated by commas") from None
        if values.size != size:
            raise MicrocompilerError(
                f"--dataset {path}: row {k + 1} has {values.size} values but the model input "
                f"'{meta.name}' has {size} ({list(meta.shape)})"
            )
        samples.append(Sample([_sample(values.reshape(meta.shape), meta, f"{path} row {k + 1}")], f"row {k + 1}"))
    if not samples:
        raise MicrocompilerError(f"--dataset {path} has no rows")
    return samples


def _numeric(line: str) -> bool:
    try:
        [float(v) for v in line.replace(";", ",").split(",")]
    except ValueError:
        return False
    return True


def _sample(array: np.ndarray, meta: TensorInfo, source: str) -> np.ndarray:
    want = np.dtype(np_dtype(meta.dtype))
    if array.dtype.kind == "f" and want.kind in "iu":
        array = quantize_input(array, meta, source)  # real values for a quantized input
    elif array.dtype.kind in "iu" and want.kind == "f":
        array = array.astype(want)
    elif array.dtype.kind == "f" and want.kind == "f":
        array = array.astype(want)
    return check_input(array, meta, source)


def load_labels(path: str, count: int, files: list[str] | None = None, classes: int | None = None) -> np.ndarray:
    """One integer class per sample: from .npy, from text with one class per line (the first
    comma-separated field) in the samples' order, or, for the ``files`` of a directory, from
    ``filename,label`` rows in any order. A first line that is not a class is a header."""
    data = read_user_file(path, "labels", MAX_INPUT_BYTES)
    if Path(path).suffix.lower() == ".npy":
        if data[:4] == b"PK\x03\x04":
            raise MicrocompilerError(f"--labels {path} is an .npz archive; save the labels with numpy.save")
        labels = load_npy(data, f"--labels {path}", "save the labels with numpy.save", count)
        return check_labels(labels, count, f"--labels {path}", classes)
    rows = [[f.strip() for f in line.split(",")] for line in data.decode("utf-8", "replace").splitlines()]
    rows = [r for r in rows if any(r)]
    if rows and not _integer(rows[0][-1]):
        rows = rows[1:]  # a header: "label", "filename,label"
    if rows and len(rows[0]) >= 2 and not _integer(rows[0][0]):
        return check_labels(_labels_by_file(path, rows, files), count, f"--labels {path}", classes)
    if not all(_integer(r[0]) for r in rows):
        bad = next(k for k, r in enumerate(rows) if not _integer(r[0]))
        raise MicrocompilerError(
            f"--labels {path}: line {bad + 1} ('{','.join(rows[bad])[:40]}') is not an integer class; give one "
            "integer class per line, or 'filename,label' rows for a directory of samples"
        )
    values = [_class(r[0], classes, f"--labels {path}: line {k + 1}") for k, r in enumerate(rows)]
    return check_labels(np.array(values, dtype=np.int64), count, f"--labels {path}", classes)


def _integer(text: str) -> bool:
    return text.lstrip("+-").isdigit()


def _class(text: str, classes: int | None, where: str) -> int:
    """A class number from text, refused in one line before it becomes a number numpy cannot hold."""
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > 18 or (classes is not None and not 0 <= int(text) < classes):
        raise MicrocompilerError(f"{where}: class {text[:30]} is not one of the model's {_range(classes)}")
    return int(text)


def _range(classes: int | None) -> str:
    return "classes" if classes is None else f"{classes:,} classes (0 to {classes - 1:,})"


def _labels_by_file(path: str, rows: list[list[str]], files: list[str] | None) -> np.ndarray:
    """The classes of ``files`` from ``filename,label`` rows (a file named with its folder matches too)."""
    if files is None:
        raise MicrocompilerError(
            f"--labels {path} gives 'filename,label' rows, but the samples are not files of a directory; "
            "give one integer class per line, in the samples' order"
        )
    by_name: dict[str, int] = {}
    for k, row in enumerate(rows):
        if len(row) != 2 or not _integer(row[1]):
            raise MicrocompilerError(
                f"--labels {path}: line {k + 1} ('{','.join(row)[:40]}') is not 'filename,label' with an integer class"
            )
        name = Path(row[0]).name
        if name in by_name and by_name[name] != int(row[1]):
            raise MicrocompilerError(f"--labels {path} gives {name} two classes ({by_name[name]} and {row[1]})")
        by_name[name] = _class(row[1], None, f"--labels {path}: line {k + 1}")
    missing = [f for f in files if f not in by_name]
    if missing:
        more = f" and {len(missing) - 1:,} more" if len(missing) > 1 else ""
        raise MicrocompilerError(
            f"--labels {path} has no label for {missing[0]}{more}; give one 'filename,label' row per sample file"
        )
    return np.array([by_name[f] for f in files], dtype=np.int64)


def check_labels(labels: np.ndarray, count: int, what: str, classes: int | None = None) -> np.ndarray:
    """One integer class per sample, each 0 to ``classes`` - 1 (the model's first output's size)."""
    labels = labels.reshape(-1) if labels.ndim <= 1 or labels.shape[1:] == (1,) * (labels.ndim - 1) else labels
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise MicrocompilerError(
            f"{what}: give one integer class per sample (shape {list(labels.shape)}, dtype {labels.dtype})"
        )
    if len(labels) != count:
        raise MicrocompilerError(f"{what} has {len(labels)} labels for {count} samples; give one per sample")
    if classes is not None and classes > MAX_CLASSES:
        raise MicrocompilerError(
            f"{what}: labels need the model's first output to be class scores, but it has {classes:,} values "
            f"(more than {MAX_CLASSES:,} classes); leave out the labels"
        )
    if len(labels):
        low, high = int(labels.min()), int(labels.max())  # Python ints: a uint64 does not wrap
        limit = classes if classes is not None else MAX_CLASSES
        bad = low if low < 0 else high if high >= limit else None
        if bad is not None:
            raise MicrocompilerError(f"{what}: class {bad} is not one of the model's {_range(limit)}")
    return labels.astype(np.int64)
