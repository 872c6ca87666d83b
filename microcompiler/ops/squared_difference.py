"""SQUARED_DIFFERENCE: (x - y)^2 for float32, int32 (wrapping as TFLM's int32 arithmetic), int8 and
int16 (zero points 0), with broadcasting up to 6D.

The quantized arithmetic is TFLite Micro's (squared_difference.cc): both inputs to a common scale
with ``left_shift`` bits of headroom (7 for int8, 0 for int16), subtract, square in int32, and
rescale by (2 * max input scale)^2 / (2^(2 * left_shift) * output scale), a multiplier that may
exceed one. The result is clamped to the type's range (the operator has no fused activation).
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import register, require
from microcompiler.ops.binary_common import BroadcastKernel, wrapping
from microcompiler.ops.quant import INT_RANGES, quantize_multiplier


@register
class SquaredDifference(BroadcastKernel):
    kinds = ("SQUARED_DIFFERENCE",)
    types = ("int8", "int16", "int32", "float32")
    type_notes = "int16 with zero points 0; int32 wraps on overflow as TFLM's"
    options = "broadcasting up to 6D"

    def check(self, op, graph):
        super().check(op, graph)
        y = graph.tensors[op.outputs[0]]
        if y.dtype in ("int8", "int16"):
            self.require_quantized(op, graph, [0, 1, -1])
            if y.dtype == "int16":
                zero_points = [graph.tensors[i].quant.zero_point[0] for i in op.inputs + op.outputs]
                require(not any(zero_points), op, "int16 tensors must have zero point 0")

    @staticmethod
    def requantization(a, b, y) -> dict:
        """Multipliers as TFLM's PrepareQuantized computes them (float32 scales, double arithmetic,
        except the output scale times 2^(2 * left_shift), a float32 product)."""
        left_shift = 7 if y.dtype == "int8" else 0
        s1, s2, so = (np.float32(t.quant.scale[0]) for t in (a, b, y))
        twice_max = 2.0 * float(max(s1, s2))
        with np.errstate(over="ignore"):  # a float32 product past the range is inf, as in TFLM; refused below
            real_out = twice_max * twice_max / float(np.float32(1 << (2 * left_shift)) * so)
        return dict(
            left_shift=left_shift,
            input1_q=quantize_multiplier(float(s1) / twice_max),
            input2_q=quantize_multiplier(float(s2) / twice_max),
            output_q=quantize_multiplier(real_out),
            input1_offset=-int(a.quant.zero_point[0]),
            input2_offset=-int(b.quant.zero_point[0]),
            output_offset=int(y.quant.zero_point[0]),
        )

    def compute(self, op, arrays, out_dtype):
        a, b = arrays
        if out_dtype == "float32":
            d = a.astype(np.float32) - b.astype(np.float32)
            return d * d
        if out_dtype == "int32":
            d = wrapping(a, b, np.subtract)
            return wrapping(d, d, np.multiply)
        return None

    def element(self, op, graph, ctx, reads, write):
        a, b, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
        if y.dtype == "float32":
            return f"const float d = {reads[0]} - {reads[1]};\n{write} = d * d;\n"
        if y.dtype == "int32":
            return (
                "/* int32 arithmetic wraps on overflow, as TFLM's (computed unsigned). */\n"
                f"const uint32_t d = (uint32_t){reads[0]} - (uint32_t){reads[1]};\n"
                f"{write} = (int32_t)(d * d);\n"
            )
        lo, hi = INT_RANGES[y.dtype]
        return ctx.render(
            "squared_difference_int.c.j2",
            read1=reads[0],
            read2=reads[1],
            write=write,
            ctype="int8_t" if y.dtype == "int8" else "int16_t",
            act_min=lo,
            act_max=hi,
            **self.requantization(a, b, y),
        )
