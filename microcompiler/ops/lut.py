"""int8 -> int8 lookup tables built at compile time, for elementwise operators whose TFLM kernel
builds the same table in its prepare step from float math (ELU).

The table is indexed by the input byte read as unsigned (entry 0 is input 0, entry 128 input -128),
as TFLM orders its tables, so the generated loop is one load per element.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from microcompiler.ops.quant import tflite_round

F32 = np.float32


def int8_table_from_float(transform: Callable[[np.float32], np.float32], in_quant: tuple[float, int],
                          out_quant: tuple[float, int]) -> np.ndarray:
    """TFLM's float LUT population (``LUTPopulateInt8``), in float32 as the C++ does it."""
    (in_scale, in_zp), (out_scale, out_zp) = in_quant, out_quant
    in_scale, inverse_scale = F32(in_scale), F32(F32(1.0) / F32(out_scale))
    table = np.zeros(256, dtype=np.int8)
    for value in range(-128, 128):
        with np.errstate(over="ignore", invalid="ignore"):
            scaled = F32(transform(F32(in_scale * F32(value - in_zp))) * inverse_scale)
        rescaled = F32(tflite_round(float(scaled))) if np.isfinite(scaled) else scaled
        table[value & 0xFF] = min(max(_to_int32(F32(rescaled + F32(out_zp))), -128), 127)
    return table


def _to_int32(value: np.float32) -> int:
    """``static_cast<int32_t>(float)`` as TFLM's host build (x86) evaluates it: truncation toward
    zero, and INT32_MIN for NaN or anything out of range."""
    if not np.isfinite(value) or not -2.0**31 <= float(value) < 2.0**31:
        return -2**31
    return int(float(value))


def render_int8_table(ctx, table: np.ndarray, size: int, input: str, output: str) -> str:
    name = ctx.const("lut", np.asarray(table, dtype=np.int8))
    return ctx.render("lut_int8.c.j2", table=name, size=size, input=input, output=output)
