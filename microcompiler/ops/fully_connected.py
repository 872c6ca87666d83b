"""FULLY_CONNECTED: int8, int16x8 and float32; per-tensor or per-channel weights."""
from __future__ import annotations

import numpy as np

from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.quant import (activation_range, c_float, float_activation_range,
                                     quantize_multiplier, quantize_multipliers)


@register
class FullyConnected(OpKernel):
    kinds = ("FULLY_CONNECTED",)

    def check(self, op, graph):
        x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
        y = graph.tensors[op.outputs[0]]
        require(w.is_constant, op, "weights must be constant")
        require(op.options.get("weights_format", 0) == 0, op, "shuffled weight formats are not supported")
        require(op.options["activation"] in ("NONE", "RELU", "RELU6", "RELU_N1_TO_1"), op,
                f"fused activation {op.options['activation']} is not supported")
        combo = (x.dtype, w.dtype, y.dtype)
        require(combo in {("int8", "int8", "int8"), ("int16", "int8", "int16"),
                          ("float32", "float32", "float32")}, op,
                f"type combination input/weights/output {combo} is not supported (int8, int16x8, float32)")
        require(x.size % w.shape[-1] == 0, op, "input size is not a multiple of the weights' depth")
        if len(op.inputs) > 2 and op.inputs[2] >= 0:
            require(graph.tensors[op.inputs[2]].is_constant, op, "bias must be constant")

    def _dims(self, op, graph):
        x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
        depth = w.shape[-1]
        return x.size // depth, w.shape[0], depth  # batches, output depth, accumulation depth

    def macs(self, op, graph):
        b, o, d = self._dims(op, graph)
        return b * o * d

    def emit(self, op, graph, ctx):
        x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
        batches, out_depth, depth = self._dims(op, graph)
        has_bias = len(op.inputs) > 2 and op.inputs[2] >= 0
        values = dict(batches=batches, out_depth=out_depth, depth=depth, input=ctx.arg(op.inputs[0]),
                      weights=ctx.arg(op.inputs[1]), output=ctx.arg(op.outputs[0]),
                      bias=ctx.arg(op.inputs[2]) if has_bias else None, dtype=x.dtype)
        if x.dtype == "float32":
            lo, hi = float_activation_range(op.options["activation"])
            return ctx.render("fully_connected_float.c.j2", act_min=c_float(lo), act_max=c_float(hi), **values)
        lo, hi = activation_range(op.options["activation"], y)
        if w.quant.per_channel:
            mult, shift = quantize_multipliers(
                float(np.float32(x.quant.scale[0])) * float(np.float32(s)) / float(np.float32(y.quant.scale[0]))
                for s in w.quant.scale)
            per_channel = (ctx.const("multiplier", mult), ctx.const("shift", shift))
            scalar = None
        else:
            # TFLM multiplies the two scales in float32 before widening (GetQuantizedConvolutionMultipler).
            product = float(np.float32(x.quant.scale[0]) * np.float32(w.quant.scale[0]))
            scalar = quantize_multiplier(product / float(np.float32(y.quant.scale[0])))
            per_channel = None
        return ctx.render("fully_connected_int.c.j2", act_min=lo, act_max=hi,
                          input_offset=-x.quant.zero_point[0], weights_offset=-w.quant.zero_point[0],
                          output_offset=y.quant.zero_point[0], scalar=scalar, per_channel=per_channel,
                          wide=x.dtype == "int16", **values)
