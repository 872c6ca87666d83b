"""HARD_SWISH: float32 and int8, bit-exact with TFLite Micro's reference kernel.

``x * relu6(x + 3) / 6``. The int8 kernel works in 16-bit fixed point as TFLM's does: the input
(minus its zero point) is put on a "high resolution" scale of input_scale / 128, multiplied once by
the output multiplier (pre-shift output scale) and once by the "relu-ish" multiplier that maps
[-3, 3] onto the int16 range, the latter turned into a fraction in [0, 1] and multiplied in. Both
multipliers are computed here as the pinned TFLM's prepare step does: scale ratios in double
precision (a float32 division differs from it in the last bit for some scales, and then in an output
value), a Q31 multiplier rounded to Q15. That arithmetic runs here, at compile time, for each of the
256 int8 inputs (``hard_swish_int8_table``): the generated code is one table load per element.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import ElementwiseKernel, register, require, require_unary
from microcompiler.ops.fixedpoint import (
    clamp,
    s16_doubling_high_mul,
    s16_rounding_divide_by_pot,
    s16_rounding_doubling_high_mul,
    s16_saturating_left_shift,
    wrap16,
)
from microcompiler.ops.lut import int8_table_from_integer, render_int8_table
from microcompiler.ops.plan import LUT, REFERENCE_FLOAT, KernelPlan
from microcompiler.ops.quant import quantize_multiplier

F32 = np.float32
HIRES_INPUT_SHIFT = 7  # the input is scaled by 2^7 onto the high-resolution scale
RELUISH_SCALE = 3.0 / 32768.0  # the value 3.0 on the relu-ish int16 scale


def downscale_multiplier_to_int16(multiplier: int) -> int:
    """A Q31 multiplier rounded to Q15 (TFLM's DownScaleInt32ToInt16Multiplier)."""
    rounding = 1 << 15
    if multiplier >= 2**31 - 1 - rounding:
        return 2**15 - 1
    return (multiplier + rounding) >> 16


def hard_swish_params(in_scale: float, out_scale: float) -> dict:
    """The int16 output and relu-ish multipliers and their exponents."""
    hires_input_scale = float(F32(in_scale)) / (1 << HIRES_INPUT_SHIFT)
    out_q31, out_exponent = quantize_multiplier(hires_input_scale / float(F32(out_scale)), saturate=False)
    reluish_q31, reluish_exponent = quantize_multiplier(hires_input_scale / RELUISH_SCALE, saturate=False)
    return dict(
        output_multiplier=downscale_multiplier_to_int16(out_q31),
        output_exponent=out_exponent,
        reluish_multiplier=downscale_multiplier_to_int16(reluish_q31),
        reluish_exponent=reluish_exponent,
    )


def hard_swish_int8_table(in_quant: tuple[float, int], out_quant: tuple[float, int]) -> np.ndarray:
    """TFLM's int8 hard-swish (reference_ops::HardSwish, 16-bit fixed point) of each int8 input."""
    (in_scale, in_zp), (out_scale, out_zp) = in_quant, out_quant
    p = hard_swish_params(in_scale, out_scale)
    out_multiplier, out_exponent = p["output_multiplier"], p["output_exponent"]
    reluish_multiplier, reluish_exponent = p["reluish_multiplier"], p["reluish_exponent"]

    def hard_swish(x: int) -> int:
        hires_input = wrap16((x - in_zp) * (1 << HIRES_INPUT_SHIFT))
        preshift_output = s16_rounding_doubling_high_mul(hires_input, out_multiplier)
        reluish = hires_input
        if reluish_exponent > 1:
            reluish = s16_saturating_left_shift(reluish, reluish_exponent - 1)
        reluish = s16_rounding_doubling_high_mul(reluish, reluish_multiplier)
        if reluish_exponent > 0:
            reluish = s16_saturating_left_shift(reluish, 1)
        elif reluish_exponent < 0:
            reluish = s16_rounding_divide_by_pot(reluish, -reluish_exponent)
        reluish = wrap16((reluish + (1 << 15)) >> 1)  # [-1, 1] -> [0, 1]
        out = s16_doubling_high_mul(reluish, preshift_output)
        if out_exponent < 0:
            out = s16_rounding_divide_by_pot(out, -out_exponent)
        return clamp(wrap16(out + out_zp), -128, 127)  # TFLM adds the zero point in int16

    return int8_table_from_integer(hard_swish)


@register
class HardSwish(ElementwiseKernel):
    kinds = ("HARD_SWISH",)
    types = ("int8", "float32")

    def check(self, op, graph):
        x, y = require_unary(op, graph, ("int8", "float32"))
        if x.dtype == "int8":
            params = hard_swish_params(x.quant.scale[0], y.quant.scale[0])
            require(
                params["output_exponent"] <= 0,
                op,
                "the input scale is more than 128 times the output scale (TFLM rejects it too)",
            )

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None):
        return KernelPlan(LUT if graph.tensors[op.inputs[0]].dtype == "int8" else REFERENCE_FLOAT)

    def int8_table(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        return hard_swish_int8_table(x.quant.single(), y.quant.single()) if x.dtype == "int8" else None

    def emit(self, op, graph, ctx):
        x = ctx.tensor(op.inputs[0])
        values = dict(size=x.size, input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]))
        if x.dtype == "float32":
            return ctx.render("hard_swish_float.c.j2", **values)
        return render_int8_table(ctx, self.int8_table(op, graph), what="hard-swish", **values)
