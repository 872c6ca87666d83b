"""Render numpy arrays as C initialisers (weights and derived constants in flash)."""
from __future__ import annotations

import numpy as np

from microcompiler.ops.quant import c_float


def c_initializer(data: np.ndarray, per_line: int = 16) -> str:
    flat = np.asarray(data).reshape(-1)
    if flat.dtype == np.float32:
        items = [c_float(v) for v in flat]
    elif flat.dtype == np.int32:
        # INT32_MIN cannot be written as a plain literal in C.
        items = [str(int(v)) if v != -2**31 else "(-2147483647 - 1)" for v in flat]
    elif flat.dtype == np.int64:
        items = [f"INT64_C({int(v)})" for v in flat]
    else:
        items = [str(int(v)) for v in flat]
    if not items:
        items = ["0"]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "{\n    " + ",\n    ".join(lines) + "\n}"


def c_array(name: str, ctype: str, data: np.ndarray, comment: str = "") -> str:
    n = max(1, int(np.asarray(data).size))
    head = f"/* {comment} */\n" if comment else ""
    return f"{head}static const {ctype} {name}[{n}] = {c_initializer(data)};\n"
