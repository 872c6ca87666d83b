"""DIV: float32, int32 and int8, with broadcasting up to 6D and a fused activation.

* float32: x / y, clamped to the activation range as TFLM's std::min/std::max do (an infinite
  quotient becomes +-FLT_MAX with no activation, NaN stays NaN).
* int32: C's truncating division, clamped to the activation range. TFLite Micro has no defined
  result for a zero divisor or INT32_MIN / -1 (the interpreter stops or the process traps); the
  generated code gives 0 and INT32_MIN for them instead of undefined behaviour.
* int8: TFLM's integer division (reference div.h): the offset divisor's fixed-point reciprocal
  (with the signs moved to the dividend), the dividend normalised by its leading sign bits, their
  product rescaled by input1_scale / (input2_scale * output_scale). TFLM's final rounding shift
  exceeds 31 bits for small quotients (|dividend| small, divisor large), which its gemmlowp
  RoundingDivideByPOT does not define: the generated code reproduces what the x86 build of TFLM
  (the oracle) computes there. A divisor equal to its zero point is undefined in TFLM (it checks
  only in debug builds); here the quotient saturates to the activation bound of the dividend's sign
  (the output zero point for 0 / 0).
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.add_mul import int32_activation_range
from microcompiler.ops.base import register, require
from microcompiler.ops.binary_common import BroadcastKernel, float_activation, float_clamp
from microcompiler.ops.quant import activation_range, float_activation_range, quantize_multiplier

# |dividend| <= 255 has at least 23 redundant sign bits, so the rounding shift TFLM applies to the
# quotient stays a right shift (as its arithmetic requires) for an output shift up to this; the
# right shift, at most 7 (reciprocal of 255) + 31 (dividend 0) - output shift, stays below 64
# (where the x86 behaviour reproduced below holds) for an output shift from this.
_MAX_OUTPUT_SHIFT = 23
_MIN_OUTPUT_SHIFT = -25
_MAX_RECIPROCAL_SHIFT = 7
_MAX_HEADROOM = 31


def div_multiplier(a, b, y) -> tuple[int, int]:
    """TFLM's output multiplier: input1_scale / (input2_scale * output_scale), float32 scales in
    double arithmetic."""
    s1, s2, so = (float(np.float32(t.quant.scale[0])) for t in (a, b, y))
    return quantize_multiplier(s1 / (s2 * so))


@register
class Div(BroadcastKernel):
    kinds = ("DIV",)
    types = ("int8", "int32", "float32")
    type_notes = "int32 and int8 divisors must be non-zero (TFLM has no defined result for them)"
    options = "fused activation (NONE, RELU, RELU6, RELU_N1_TO_1); broadcasting up to 6D"

    def check(self, op, graph):
        super().check(op, graph)
        a, b, y = (graph.tensors[i] for i in (op.inputs[0], op.inputs[1], op.outputs[0]))
        if y.dtype == "int8":
            self.require_quantized(op, graph, [0, 1, -1])
            m, shift = div_multiplier(a, b, y)
            require(
                m > 0 and _MIN_OUTPUT_SHIFT <= shift <= _MAX_OUTPUT_SHIFT,
                op,
                "input1_scale / (input2_scale * output_scale) is out of the range TFLite Micro's "
                "integer division handles",
            )

    def compute(self, op, arrays, out_dtype):
        a, b = arrays
        if out_dtype == "float32":
            return float_activation(op, a.astype(np.float32) / b.astype(np.float32))
        if out_dtype != "int32":
            return None
        a, b = np.broadcast_arrays(a.astype(np.int64), b.astype(np.int64))
        if np.any(b == 0) or np.any((a == -(2**31)) & (b == -1)):
            return None  # no result in TFLM: left to the generated code's defined stand-in
        q = np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))  # C's truncating division
        lo, hi = int32_activation_range(op.options.get("activation", "NONE"))
        return np.clip(q, -(2**31) if lo is None else lo, 2**31 - 1 if hi is None else hi)

    def element(self, op, graph, ctx, reads, write):
        a, b, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
        activation = op.options.get("activation", "NONE")
        if y.dtype == "float32":
            lo, hi = float_activation_range(activation)
            return f"const float q = {reads[0]} / {reads[1]};\n{write} = {float_clamp('q', lo, hi)};\n"
        if y.dtype == "int32":
            lo, hi = int32_activation_range(activation)
            return ctx.render("div_int32.c.j2", read1=reads[0], read2=reads[1], write=write, act_min=lo, act_max=hi)
        lo, hi = activation_range(activation, y)
        m, shift = div_multiplier(a, b, y)
        return ctx.render(
            "div_int8.c.j2",
            read1=reads[0],
            read2=reads[1],
            write=write,
            act_min=lo,
            act_max=hi,
            input1_zp=int(a.quant.zero_point[0]),
            input2_zp=int(b.quant.zero_point[0]),
            output_zp=int(y.quant.zero_point[0]),
            multiplier=m,
            shift=shift,
            max_right_shift=_MAX_RECIPROCAL_SHIFT + _MAX_HEADROOM - shift,
        )
