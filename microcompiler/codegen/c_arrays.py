"""Render numpy arrays as C initialisers (weights and derived constants in flash)."""

from __future__ import annotations

import numpy as np

from microcompiler.ops.quant import c_float
from microcompiler.templating import comment_text  # noqa: F401 (re-exported)


def has_non_finite(data: np.ndarray) -> bool:
    flat = np.asarray(data)
    return flat.dtype == np.float32 and not np.isfinite(flat).all()


def _lines(items: list[str], per_line: int) -> str:
    if not items:
        items = ["0"]
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "{\n    " + ",\n    ".join(lines) + "\n}"


def c_initializer(data: np.ndarray, per_line: int = 16, symbols: dict[int, str] | None = None) -> str:
    """The brace-enclosed initialiser of a C array holding data; ``symbols``: C constant expressions
    written in place of the values at these flat indices.

    A float32 array with a NaN or an infinity is stored by bit pattern, so its initialiser is
    ``{{0x...u, ...}}`` for the union of ``c_array`` (C99 has no literal for those values).
    """
    flat = np.asarray(data).reshape(-1)
    if has_non_finite(flat):
        return "{" + _lines([f"0x{v:08x}u" for v in flat.view(np.uint32)], 8) + "}"
    if flat.dtype == np.float32:
        items = [c_float(v) for v in flat]
    elif flat.dtype == np.int32:
        # INT32_MIN cannot be written as a plain literal in C.
        items = [str(int(v)) if v != -(2**31) else "(-2147483647 - 1)" for v in flat]
    elif flat.dtype == np.int64:
        items = [f"INT64_C({int(v)})" for v in flat]
    elif flat.dtype == np.uint64:
        items = [f"UINT64_C({int(v)})" for v in flat]  # above INT64_MAX a plain literal has no type
    elif flat.dtype == np.uint32:
        items = [f"{int(v)}u" for v in flat]
    else:
        items = [str(int(v)) for v in flat]
    for k, expr in (symbols or {}).items():
        items[k] = expr
    return _lines(items, per_line)


def c_array(name: str, ctype: str, data: np.ndarray, comment: str = "", symbols: dict[int, str] | None = None) -> str:
    """A ``static const`` array definition; indexing ``name`` gives the values of data.

    Float arrays with NaN or infinities become a union of their bit patterns and the float view,
    with ``name`` a macro for the float view (the same type and size as a plain array).
    """
    n = max(1, int(np.asarray(data).size))
    comment = comment_text(comment)
    if has_non_finite(data):
        note = "non-finite values (NaN, infinities) in it: stored by IEEE-754 bit pattern"
        head = f"/* {comment}; {note} */\n" if comment else f"/* {note} */\n"
        return (
            f"{head}static const union {{ uint32_t bits[{n}]; {ctype} values[{n}]; }} {name}_bits = "
            f"{c_initializer(data)};\n#define {name} ({name}_bits.values)\n"
        )
    head = f"/* {comment} */\n" if comment else ""
    return f"{head}static const {ctype} {name}[{n}] = {c_initializer(data, symbols=symbols)};\n"
