"""The elementwise requantization renderer: one tensor's integers re-expressed in another
quantization (scale, zero point) and clamped, as TFLM's RELU, LEAKY_RELU, HARD_SWISH and the
requantizing copies do it; the constants are folded at compile time (an identity multiplier skips
the multiply, a zero offset disappears).
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.fixedpoint import clamp, requantize
from microcompiler.ops.lut import int8_table_from_integer
from microcompiler.ops.quant import quantize_multiplier

IDENTITY_MULTIPLIER = (1 << 30, 1)  # quantize_multiplier(1.0): requantizing with it changes nothing


def offset_term(value: int) -> str:
    """`` + v`` / `` - v`` for adding a compile-time integer, or nothing when it is 0."""
    return "" if value == 0 else (f" + {value}" if value > 0 else f" - {-value}")


def scale_ratio_multiplier(in_scale: float, out_scale: float) -> tuple[int, int]:
    """TFLM's requantization multiplier: the float32 scales divided in double precision."""
    return quantize_multiplier(float(np.float32(in_scale)) / float(np.float32(out_scale)))


def render_requantize(
    ctx, ctype: str, in_quant: tuple[float, int], out_quant: tuple[float, int], act_min: int, act_max: int, **values
) -> str:
    """Elementwise requantization from in_quant to out_quant (scale, zero point), clamped; when the
    scales are equal the multiply is skipped and only the zero-point shift remains."""
    (in_scale, in_zp), (out_scale, out_zp) = in_quant, out_quant
    multiplier = scale_ratio_multiplier(in_scale, out_scale)
    identity = multiplier == IDENTITY_MULTIPLIER
    return ctx.render(
        "requantize_int.c.j2",
        ctype=ctype,
        multiplier=None if identity else multiplier,
        input_offset=offset_term(-in_zp) if not identity else offset_term(out_zp - in_zp),
        output_offset=offset_term(out_zp) if not identity else "",
        act_min=act_min,
        act_max=act_max,
        **values,
    )


def requantize_int8_table(
    in_quant: tuple[float, int], out_quant: tuple[float, int], act_min: int, act_max: int
) -> np.ndarray:
    """What render_requantize's loop computes for each int8 input, as a 256-entry table (ops/lut.py)."""
    (in_scale, in_zp), (out_scale, out_zp) = in_quant, out_quant
    multiplier = scale_ratio_multiplier(in_scale, out_scale)
    if multiplier == IDENTITY_MULTIPLIER:
        return int8_table_from_integer(lambda x: clamp(x + out_zp - in_zp, act_min, act_max))
    return int8_table_from_integer(lambda x: clamp(requantize(x - in_zp, *multiplier) + out_zp, act_min, act_max))
