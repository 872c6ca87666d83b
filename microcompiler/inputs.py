"""Model inputs: loaded from .npy files or made from a fixed seed, checked against the model."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from microcompiler.codegen.model_info import TensorInfo
from microcompiler.errors import MicrocompilerError
from microcompiler.ir import np_dtype
from microcompiler.user_files import MAX_INPUT_BYTES, load_npy, load_npz, read_user_file

DEFAULT_SEED = 0


def random_inputs(inputs: Sequence[TensorInfo], seed: int = DEFAULT_SEED) -> list[np.ndarray]:
    """One seeded random array per model input, covering the dtype's full range (floats in [-1, 1))."""
    rng = np.random.default_rng(seed)
    arrays = []
    for meta in inputs:
        dtype = np.dtype(np_dtype(meta.dtype))
        if dtype.kind == "f":
            arrays.append(rng.uniform(-1.0, 1.0, size=meta.shape).astype(dtype))
        elif dtype.kind == "b":
            arrays.append(rng.integers(0, 2, size=meta.shape).astype(dtype))
        else:
            info = np.iinfo(dtype)
            arrays.append(rng.integers(info.min, info.max, size=meta.shape, endpoint=True, dtype=dtype))
    return arrays


def same_shape(given: Sequence[int], wanted: Sequence[int]) -> bool:
    """Whether an array of shape ``given`` is the model's ``wanted`` shape, up to leading 1s.

    ``[49, 10, 1]`` is ``[1, 49, 10, 1]``; ``[1, 10, 49, 1]`` is not, though it has as many elements.
    """

    def core(shape: Sequence[int]) -> list[int]:
        shape = [int(d) for d in shape]
        while shape and shape[0] == 1:
            shape = shape[1:]
        return shape

    return core(given) == core(wanted)


def check_input(arr: np.ndarray, meta: TensorInfo, source: str) -> np.ndarray:
    """The array in the model input's exact shape, or a one-line error naming what differs."""
    want = np.dtype(np_dtype(meta.dtype))
    if not same_shape(arr.shape, meta.shape):
        raise MicrocompilerError(
            f"{source} has shape {list(arr.shape)} but the model input '{meta.name}' "
            f"needs {list(meta.shape)} (only leading 1s may differ); transpose or reshape "
            "it yourself if that is what you mean"
        )
    if arr.dtype != want:
        if arr.dtype.kind == "f" and want.kind in "iu" and meta.scale is not None:
            info = np.iinfo(want)
            raise MicrocompilerError(
                f"{source} holds real values ({arr.dtype}) but the model input '{meta.name}' is quantized "
                f"{want} (scale {meta.scale:g}, zero point {meta.zero_point}); quantize it: "
                f"np.clip(np.round(x / {meta.scale:g}) + {meta.zero_point}, {info.min}, {info.max})"
                f".astype(np.{want})"
            )
        raise MicrocompilerError(
            f"{source} has dtype {arr.dtype} but the model input '{meta.name}' "
            f"needs {want}; convert it with arr.astype(np.{want})"
        )
    return arr.reshape(meta.shape)


def quantize_input(x: np.ndarray, meta: TensorInfo, source: str = "the real values") -> np.ndarray:
    """Real values for a quantized input: round(x / scale) + zero point, saturated to the input's type
    (what TFLM's QUANTIZE computes, and what a firmware's caller does with a sensor's values). NaN and
    infinities have no quantized value: refused in one line naming the first."""
    want = np.dtype(np_dtype(meta.dtype))
    if meta.scale is None or meta.zero_point is None:
        raise MicrocompilerError(
            f"the model input '{meta.name}' is {want} without a scale: give it {want} values, not real ones"
        )
    finite = np.isfinite(x)
    if not finite.all():
        at = np.unravel_index(int(np.argmin(finite)), x.shape) if x.ndim else ()
        value = x[at] if x.ndim else x
        raise MicrocompilerError(
            f"{source} holds {value} at {list(map(int, at))} ({int(finite.size - finite.sum()):,} value(s) NaN or "
            f"infinite) for the quantized model input '{meta.name}'; a quantized input takes finite real values: "
            "clean the data (e.g. np.nan_to_num) first"
        )
    info = np.iinfo(want)
    q = np.round(x.astype(np.float64) / float(meta.scale)) + int(meta.zero_point)
    return np.clip(q, info.min, info.max).astype(want)


def load_array(path: str, max_elements: int | None = None) -> np.ndarray:
    """One array from a .npy file, or a one-line error that says what the file is instead. The
    header is checked before anything is allocated: its data must be in the file and hold at most
    ``max_elements`` values (the model input's size)."""
    fix = "save the array with numpy.save('x.npy', array)"
    data = read_user_file(path, "input", MAX_INPUT_BYTES)
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):  # an .npz archive holds several arrays
        names = list(load_npz(data, f"input {path}", MAX_INPUT_BYTES, fix, max_elements))
        raise MicrocompilerError(
            f"input {path} is an .npz archive ({len(names)} arrays: "
            f"{', '.join(names[:4])}{', ...' if len(names) > 4 else ''}); pass one .npy file "
            "per model input: numpy.save('x.npy', array)"
        )
    if not data:
        raise MicrocompilerError(f"input {path} is empty or truncated; {fix}")
    return load_npy(data, f"input {path}", fix, max_elements)


def load_inputs(paths: list[str], inputs_meta: Sequence[TensorInfo]) -> list[np.ndarray]:
    if len(paths) != len(inputs_meta):
        raise MicrocompilerError(
            f"the model has {len(inputs_meta)} input(s) but {len(paths)} --input file(s) "
            "were given; pass one .npy file per input"
        )
    return [check_input(load_array(path, _size(meta)), meta, f"input {path}") for path, meta in zip(paths, inputs_meta)]


def _size(meta: TensorInfo) -> int:
    return int(np.prod([int(d) for d in meta.shape], dtype=np.int64))


# ---- Sequences: one input set per inference, for models that keep state (docs/state.md) ----


def random_input_steps(inputs_meta: Sequence[TensorInfo], steps: int) -> list[list[np.ndarray]]:
    """``steps`` seeded random input sets; the first is ``random_inputs``' default input."""
    return [random_inputs(inputs_meta, seed=DEFAULT_SEED + s) for s in range(steps)]


def load_input_steps(
    paths: list[str], inputs_meta: Sequence[TensorInfo], steps: int | None = None
) -> list[list[np.ndarray]]:
    """The input sets of a run of one or more inferences, from ``--input`` files.

    Without ``steps``: one .npy file per model input and step, in step order (step 0's inputs, then
    step 1's, ...); a single step is the usual one file per input. With ``steps`` N: one file per
    model input holding all N steps along a leading time axis."""
    n = len(inputs_meta)
    if steps is None:
        if not paths or len(paths) % n:
            raise MicrocompilerError(
                f"the model has {n} input(s) but {len(paths)} --input file(s) were given; pass one .npy file "
                "per input and step (step 0's inputs first), or one file per input with a leading time axis "
                "and --steps N"
            )
        return [load_inputs(paths[k : k + n], inputs_meta) for k in range(0, len(paths), n)]
    if len(paths) != n:
        raise MicrocompilerError(
            f"--steps {steps} takes one --input file per model input ({n}) holding the {steps} steps along its "
            f"first axis, but {len(paths)} were given; without --steps, pass one file per input and step"
        )
    stacked = []
    for path, meta in zip(paths, inputs_meta):
        arr = load_array(path)  # its header bounded by the file; the time axis is checked below
        if arr.ndim == 0 or arr.shape[0] != steps:
            raise MicrocompilerError(
                f"input {path} has shape {list(arr.shape)}, but with --steps {steps} its first axis must be the "
                f"{steps} steps (shape {[steps, *meta.shape]}); save the sequence with numpy.save"
            )
        stacked.append([check_input(arr[s], meta, f"step {s} of input {path}") for s in range(steps)])
    return [[per_input[s] for per_input in stacked] for s in range(steps)]
