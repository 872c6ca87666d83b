"""int8 -> int8 lookup tables built at compile time: an elementwise function of one int8 input has
256 possible inputs, so its whole result is a 256-byte table and the generated loop one load per
element.

Two ways to fill a table, both bit-exact with TFLM by construction:

* ``int8_table_from_float``: TFLM's own float LUT population (ELU builds its table so in TFLM too);
* ``int8_table_from_integer``: the kernel's integer arithmetic evaluated for each of the 256 inputs
  at compile time, with ops/fixedpoint.py, the Python mirror of the C fixed-point functions
  (LOGISTIC, TANH, HARD_SWISH, ... and the fused SiLU of passes/fuse_tables.py).

The table is indexed by the input byte read as unsigned (entry 0 is input 0, entry 128 input -128),
as TFLM orders its tables.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from microcompiler.ops.plan import LUT, KernelPlan
from microcompiler.ops.quant import tflite_round

F32 = np.float32


def int8_table_from_float(
    transform: Callable[[np.float32], np.float32], in_quant: tuple[float, int], out_quant: tuple[float, int]
) -> np.ndarray:
    """TFLM's float LUT population (``LUTPopulateInt8``), in float32 as the C++ does it."""
    (in_scale, in_zp), (out_scale, out_zp) = in_quant, out_quant
    in_scale32, inverse_scale = F32(in_scale), F32(F32(1.0) / F32(out_scale))
    table = np.zeros(256, dtype=np.int8)
    for value in range(-128, 128):
        with np.errstate(over="ignore", invalid="ignore"):
            scaled = F32(transform(F32(in_scale32 * F32(value - in_zp))) * inverse_scale)
        rescaled = F32(tflite_round(float(scaled))) if np.isfinite(scaled) else scaled
        table[value & 0xFF] = min(max(_to_int32(F32(rescaled + F32(out_zp))), -128), 127)
    return table


def int8_table_from_integer(function: Callable[[int], int]) -> np.ndarray:
    """The table of an int8 -> int8 function given as Python integer arithmetic on the input value."""
    table = np.zeros(256, dtype=np.int8)
    for value in range(-128, 128):
        result = function(value)
        if not -128 <= result <= 127:
            raise ValueError(f"table entry {value} is {result}, outside int8")
        table[value & 0xFF] = result
    return table


def apply_int8_table(table: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The table applied to int8 values (what the generated loop computes)."""
    return np.asarray(table, dtype=np.int8)[np.asarray(values, dtype=np.int8).astype(np.uint8)]


def _to_int32(value: np.float32) -> int:
    """``static_cast<int32_t>(float)`` as TFLM's host build (x86) evaluates it: truncation toward
    zero, and INT32_MIN for NaN or anything out of range."""
    if not np.isfinite(value) or not -(2.0**31) <= float(value) < 2.0**31:
        return -(2**31)
    return int(float(value))


def render_int8_table(ctx, table: np.ndarray, size: int, input: str, output: str, what: str = "") -> str:
    """The table as a const array in flash and the loop indexing it; ``what`` names the function the
    table holds in the generated comment."""
    name = ctx.const("lut", np.asarray(table, dtype=np.int8))
    ctx.plan = KernelPlan(LUT, scratch_bytes=0)
    return ctx.render("lut_int8.c.j2", table=name, size=size, input=input, output=output, what=what)
