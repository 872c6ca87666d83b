"""CUMSUM: float32 and int8 (TFLM's types), constant int32 axis, exclusive and reverse.

float32 accumulates in input order along the axis. int8 follows TFLM's quantized path: each value
minus the zero point is scaled by 2^19 (the input multiplier 0.5 applied to a 20-bit left shift,
exact), the running sum starts at -zero_point * 2^19 (as TFLM's does), and each output is the sum
requantized by 2 * in_scale / (2^20 * out_scale) plus the output zero point, clamped to int8. When
the axis is long enough for the int32 sum to overflow, it wraps around as TFLM's does.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.quant import quantize_multiplier
from microcompiler.ops.spatial_common import CTYPES, require_same_type, single_axis

_LEFT_SHIFT = 20  # kCumSumIntegerShift


def output_multiplier(in_scale: float, out_scale: float) -> tuple[int, int]:
    twice_max = 2 * float(np.float32(in_scale))
    return quantize_multiplier(twice_max / ((1 << _LEFT_SHIFT) * float(np.float32(out_scale))))


@register
class CumSum(OpKernel):
    kinds = ("CUMSUM",)
    input_roles = ("input", "axis")
    inputs = (2, 2)
    types = ("int8", "float32")
    options = "constant axis, exclusive, reverse"

    def _axis(self, op, graph) -> int:
        return single_axis(op, graph)

    def check(self, op, graph):
        require(
            len(op.inputs) == 2 and min(op.inputs) >= 0 and len(op.outputs) == 1,
            op,
            "expects an input, an axis tensor and one output",
        )
        x, y = require_same_type(op, graph, self.types)
        require(len(x.shape) >= 1, op, "the input must have at least one dimension")
        self._axis(op, graph)
        require(
            list(y.shape) == list(x.shape), op, f"output shape {list(y.shape)} differs from input shape {list(x.shape)}"
        )
        if x.dtype == "int8":
            require(
                x.quant is not None and y.quant is not None and not x.quant.per_channel and not y.quant.per_channel,
                op,
                "input and output need per-tensor quantization",
            )
            q, shift = output_multiplier(x.quant.single()[0], y.quant.single()[0])
            require(
                shift <= 0,
                op,
                "the input scale is too large for the output scale (TFLM needs "
                "2 * in_scale / (2^20 * out_scale) below 1)",
            )

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        a = self._axis(op, graph)
        before = int(np.prod(x.shape[:a], dtype=np.int64))
        after = int(np.prod(x.shape[a + 1 :], dtype=np.int64))
        n = x.shape[a]
        values = dict(
            ctype=CTYPES[x.dtype],
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            before=before,
            after=after,
            n=n,
            exclusive=bool(op.options.get("exclusive", False)),
            reverse=bool(op.options.get("reverse", False)),
            integer=x.dtype == "int8",
        )
        if x.dtype == "float32":
            return ctx.render("cumsum.c.j2", init="0.0f", acc_t="float", **values)
        in_zp, out_zp = x.quant.single()[1], y.quant.single()[1]
        half = 1 << (_LEFT_SHIFT - 1)
        # Each step adds at most 255 * 2^19 in magnitude: wrap around (as TFLM) when that can overflow.
        wraps = (n + 1) * 255 * half >= 2**31
        return ctx.render(
            "cumsum.c.j2",
            init=str(-in_zp * half),
            acc_t="int32_t",
            in_zp=in_zp,
            half=half,
            q=output_multiplier(x.quant.single()[0], y.quant.single()[0]),
            out_zp=out_zp,
            wraps=wraps,
            **values,
        )
