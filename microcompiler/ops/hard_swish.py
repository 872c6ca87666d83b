"""HARD_SWISH: float32 and int8, bit-exact with TFLite Micro's reference kernel.

``x * relu6(x + 3) / 6``. The int8 kernel works in 16-bit fixed point as TFLM's does: the input
(minus its zero point) is put on a "high resolution" scale of input_scale / 128, multiplied once by
the output multiplier (pre-shift output scale) and once by the "relu-ish" multiplier that maps
[-3, 3] onto the int16 range, the latter turned into a fraction in [0, 1] and multiplied in. Both
multipliers are computed here as the pinned TFLM's prepare step does: scale ratios in double
precision (a float32 division differs from it in the last bit for some scales, and then in an output
value), a Q31 multiplier rounded to Q15.
"""
from __future__ import annotations

import numpy as np

from microcompiler.ops.requantize import offset_term
from microcompiler.ops.base import ElementwiseKernel, register, require, require_unary
from microcompiler.ops.quant import quantize_multiplier

F32 = np.float32
HIRES_INPUT_SHIFT = 7            # the input is scaled by 2^7 onto the high-resolution scale
RELUISH_SCALE = 3.0 / 32768.0   # the value 3.0 on the relu-ish int16 scale


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
    return dict(output_multiplier=downscale_multiplier_to_int16(out_q31), output_exponent=out_exponent,
                reluish_multiplier=downscale_multiplier_to_int16(reluish_q31), reluish_exponent=reluish_exponent)


@register
class HardSwish(ElementwiseKernel):
    kinds = ("HARD_SWISH",)
    types = ("int8", "float32")

    def check(self, op, graph):
        x, y = require_unary(op, graph, ("int8", "float32"))
        if x.dtype == "int8":
            params = hard_swish_params(x.quant.scale[0], y.quant.scale[0])
            require(params["output_exponent"] <= 0, op,
                    "the input scale is more than 128 times the output scale (TFLM rejects it too)")

    def variant(self, op, graph):
        return {"variant": "int16-fixed-point" if graph.tensors[op.inputs[0]].dtype == "int8" else "reference-float"}

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        values = dict(size=x.size, input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]))
        if x.dtype == "float32":
            return ctx.render("hard_swish_float.c.j2", **values)
        (in_scale, in_zp), (out_scale, out_zp) = x.quant.single(), y.quant.single()
        return ctx.render("hard_swish_int8.c.j2", input_offset=offset_term(-in_zp), output_offset=offset_term(out_zp),
                          hires_shift=HIRES_INPUT_SHIFT, **hard_swish_params(in_scale, out_scale), **values)
