"""MC_TABLE_CHANNELS_INT8: not a TFLite operator but what the ONNX QDQ importer
(frontend/onnx_qdq_tables.py) makes of ONNX Runtime's float leftovers ``QuantizeLinear(Mul or
Add(DequantizeLinear(x), per-channel constant))``: per channel, a 256-entry table of the int8 result
for each int8 input, computed at compile time with ONNX Runtime's float32 arithmetic, so one load per
element instead of a dequantize, a float operation and a quantize.

Input 0 is the int8 tensor (channels last), input 1 the constant tables ``[channels, 256]`` (indexed
by the input byte read as unsigned, ops/lut.py); ``options["functions"]`` names what they hold.
"""

from __future__ import annotations

from microcompiler.ops.base import ElementwiseKernel, register, require
from microcompiler.ops.plan import LUT, KernelPlan

TABLE_CHANNELS_INT8 = "MC_TABLE_CHANNELS_INT8"


@register
class TableChannelsInt8(ElementwiseKernel):
    kinds = (TABLE_CHANNELS_INT8,)
    inputs = (2, 2)
    types = ("int8",)
    internal = True  # made by the ONNX importer, never read from a .tflite: not listed by `microcompiler ops`
    input_roles = ("input", "lut")

    def check(self, op, graph):
        x, t, y = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
        channels = t.shape[0] if len(t.shape) == 2 else 0
        require(x.dtype == y.dtype == t.dtype == "int8" and t.is_constant, op, "int8 input, output and tables")
        require(len(t.shape) == 2 and t.shape[1] == 256, op, "the tables must be [channels, 256]")
        require(channels == 1 or (x.shape and x.shape[-1] == channels), op, "one table per channel (last dim)")
        require(tuple(x.shape) == tuple(y.shape), op, "input and output shapes differ")

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None):
        return KernelPlan(LUT, scratch_bytes=0)

    def emit(self, op, graph, ctx):
        x, t = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1])
        channels = t.shape[0]
        values = dict(input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]), what=op.options.get("functions", ""))
        if channels == 1:
            return ctx.render("lut_int8.c.j2", table=ctx.arg(op.inputs[1]), size=x.size, **values)
        return ctx.render(
            "lut_channels_int8.c.j2",
            tables=ctx.arg(op.inputs[1]),
            channels=channels,
            pixels=x.size // channels,
            **values,
        )
