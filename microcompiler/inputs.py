"""Model inputs: loaded from .npy files or made from a fixed seed, checked against the model."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from microcompiler.errors import MicrocompilerError
from microcompiler.ir import np_dtype

DEFAULT_SEED = 0


def random_inputs(inputs_meta: list[dict], seed: int = DEFAULT_SEED) -> list[np.ndarray]:
    """One seeded random array per model input, covering the dtype's full range (floats in [-1, 1))."""
    rng = np.random.default_rng(seed)
    arrays = []
    for meta in inputs_meta:
        dtype = np.dtype(np_dtype(meta["dtype"]))
        if dtype.kind == "f":
            arrays.append(rng.uniform(-1.0, 1.0, size=meta["shape"]).astype(dtype))
        elif dtype.kind == "b":
            arrays.append(rng.integers(0, 2, size=meta["shape"]).astype(dtype))
        else:
            info = np.iinfo(dtype)
            arrays.append(rng.integers(info.min, info.max, size=meta["shape"], endpoint=True, dtype=dtype))
    return arrays


def load_inputs(paths: list[str], inputs_meta: list[dict]) -> list[np.ndarray]:
    if len(paths) != len(inputs_meta):
        raise MicrocompilerError(f"the model has {len(inputs_meta)} input(s) but {len(paths)} --input file(s) "
                                 "were given; pass one .npy file per input")
    arrays = []
    for path, meta in zip(paths, inputs_meta):
        try:
            arr = np.load(Path(path), allow_pickle=False)
        except OSError as exc:
            raise MicrocompilerError(f"cannot read input {path}: {exc.strerror or exc}") from None
        except ValueError:
            raise MicrocompilerError(f"input {path} is not a .npy array file; save the array with "
                                     "numpy.save('x.npy', array)") from None
        if arr.size != int(np.prod(meta["shape"])):
            raise MicrocompilerError(f"input {path} has shape {list(arr.shape)} but the model input "
                                     f"'{meta['name']}' needs {meta['shape']}")
        want = np.dtype(np_dtype(meta["dtype"]))
        if arr.dtype != want:
            raise MicrocompilerError(f"input {path} has dtype {arr.dtype} but the model input '{meta['name']}' "
                                     f"needs {want}; convert it with arr.astype(np.{want})")
        arrays.append(arr.reshape(meta["shape"]))
    return arrays
