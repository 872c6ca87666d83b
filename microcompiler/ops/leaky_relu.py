"""LEAKY_RELU: float32, int8 and int16, bit-exact with TFLite Micro's reference kernel.

``x > 0 ? x : alpha * x`` (alpha may be negative or above 1). The quantized kernel requantizes
non-negative inputs (relative to the zero point) with input_scale / output_scale and negative ones
with input_scale * alpha / output_scale (the float32 scales and alpha multiplied and divided in
double precision, as the pinned TFLM computes them), then adds the output zero point and saturates.
A negative alpha's multiplier is applied as TFLM's reference does it: the input times the
multiplier's magnitude, then negated (``-(x * |m|)`` rounds a tie toward minus infinity where
``x * m`` would round it toward plus infinity).
int8 compiles to a 256-entry table of that arithmetic (ops/lut.py): one load per element.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import ElementwiseKernel, register, require, require_unary
from microcompiler.ops.fixedpoint import clamp, requantize
from microcompiler.ops.lut import int8_table_from_integer, render_int8_table
from microcompiler.ops.plan import LUT, REFERENCE, KernelPlan
from microcompiler.ops.quant import INT_RANGES, c_float, quantize_multiplier
from microcompiler.ops.requantize import offset_term

F32 = np.float32
MAX_LEFT_SHIFT = 30  # the largest power of two an int32 requantization can apply


def leaky_relu_multipliers(in_scale: float, out_scale: float, alpha: float) -> tuple[tuple[int, int], tuple[int, int]]:
    """((identity multiplier, shift), (alpha multiplier, shift)), in double precision."""
    in_scale, out_scale, alpha = (float(F32(v)) for v in (in_scale, out_scale, alpha))
    identity = quantize_multiplier(in_scale / out_scale, saturate=False)
    negative = quantize_multiplier(in_scale * alpha / out_scale, saturate=False)
    return identity, negative


def scaled_negative_input(d: int, multiplier: int, shift: int) -> int:
    """The negative input ``d`` times the alpha multiplier as TFLM's QuantizeLeakyRelu computes it:
    by the multiplier's magnitude, negated afterwards for a negative alpha."""
    if multiplier < 0:
        return -requantize(d, -multiplier, shift)
    return requantize(d, multiplier, shift)


@register
class LeakyRelu(ElementwiseKernel):
    kinds = ("LEAKY_RELU",)
    options = "alpha"

    def check(self, op, graph):
        x, y = require_unary(op, graph, ("int8", "int16", "float32"))
        require(np.isfinite(op.options.get("alpha", 0.0)), op, "alpha must be a finite number")
        if x.dtype != "float32":
            multipliers = leaky_relu_multipliers(x.quant.scale[0], y.quant.scale[0], op.options.get("alpha", 0.0))
            require(
                max(shift for _, shift in multipliers) <= MAX_LEFT_SHIFT,
                op,
                "input scale (times alpha) over output scale is beyond 2^30: no int32 multiplier holds it",
            )
            require(
                multipliers[1][0] > -(2**31),
                op,
                "alpha * input scale / output scale rounds to minus a power of two whose magnitude no int32 holds",
            )

    def int8_table(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if x.dtype != "int8":
            return None
        (in_scale, in_zp), (out_scale, out_zp) = x.quant.single(), y.quant.single()
        identity, negative = leaky_relu_multipliers(in_scale, out_scale, float(op.options.get("alpha", 0.0)))

        def leaky_relu(v: int) -> int:
            d = v - in_zp
            scaled = requantize(d, *identity) if d >= 0 else scaled_negative_input(d, *negative)
            return clamp(scaled + out_zp, -128, 127)

        return int8_table_from_integer(leaky_relu)

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None):
        return KernelPlan(LUT if graph.tensors[op.inputs[0]].dtype == "int8" else REFERENCE)

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        alpha = float(op.options.get("alpha", 0.0))
        values = dict(size=x.size, input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]))
        if x.dtype == "float32":
            return ctx.render("activation_float.c.j2", expr=f"(x > 0.0f ? x : x * {c_float(alpha)})", **values)
        if x.dtype == "int8":
            return render_int8_table(ctx, self.int8_table(op, graph), what="leaky ReLU", **values)
        (in_scale, in_zp), (out_scale, out_zp) = x.quant.single(), y.quant.single()
        identity, negative = leaky_relu_multipliers(in_scale, out_scale, alpha)
        lo, hi = INT_RANGES[x.dtype]
        return ctx.render(
            "leaky_relu_int.c.j2",
            ctype=f"{x.dtype}_t",
            input_offset=offset_term(-in_zp),
            output_offset=offset_term(out_zp),
            identity=identity,
            negative=negative,
            type_min=lo,
            type_max=hi,
            **values,
        )
