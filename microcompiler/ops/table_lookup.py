"""MC_TABLE_INT8: not a TFLite operator but what the ``fuse_tables`` pass (passes/fuse_tables.py)
makes of a chain of int8 elementwise functions of one tensor, such as SiLU's ``x * LOGISTIC(x)``:
one load from a 256-entry table per element.

Input 0 is the int8 tensor, input 1 the constant table (indexed by the input byte read as unsigned,
ops/lut.py); ``options["functions"]`` names what the table holds, for the comment and metadata.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import ElementwiseKernel, OpKernel, register
from microcompiler.ops.plan import LUT, KernelPlan, Variant
from microcompiler.ops.requantize import offset_term

LUT_GATE = Variant("lut-gate")  # a table of per-channel gates

TABLE_INT8 = "MC_TABLE_INT8"


@register
class TableInt8(ElementwiseKernel):
    kinds = (TABLE_INT8,)
    inputs = (2, 2)
    types = ("int8",)
    internal = True  # made by a pass, never read from a model: not listed by `microcompiler ops`
    input_roles = ("input", "lut")

    def int8_table(self, op, graph):
        return np.asarray(graph.tensors[op.inputs[1]].data, dtype=np.int8)

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None):
        return KernelPlan(LUT, scratch_bytes=0)

    def emit(self, op, graph, ctx):
        x = ctx.tensor(op.inputs[0])
        return ctx.render(
            "lut_int8.c.j2",
            table=ctx.arg(op.inputs[1]),
            size=x.size,
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            what=op.options.get("functions", ""),
        )


SCALE_CHANNELS_INT8 = "MC_SCALE_CHANNELS_INT8"


@register
class ScaleChannelsInt8(OpKernel):
    """MC_SCALE_CHANNELS_INT8: squeeze-and-excite's ``MUL(x, f(s))`` with ``s`` one value per channel
    (broadcast over the pixels) and ``f`` a table function (LOGISTIC): input 0 is x, input 1 is s,
    input 2 the gate table (f(s) minus f's output zero point, int16); the options hold the MUL's
    requantization (``multiplier``, ``shift``) and clamp (``act_min``, ``act_max``). Per channel one
    table load, then per element TFLM's int8 MUL arithmetic."""

    kinds = (SCALE_CHANNELS_INT8,)
    inputs = (3, 3)
    types = ("int8",)
    internal = True
    input_roles = ("input", "scale", "gate")

    def macs(self, op, graph):
        return graph.tensors[op.outputs[0]].size

    def inplace_inputs(self, op, graph):
        return (0,)

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None):
        return KernelPlan(LUT_GATE, scratch_bytes=0)

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        channels = int(x.shape[-1])
        o = op.options
        return ctx.render(
            "scale_channels_int8.c.j2",
            gate_table=ctx.arg(op.inputs[2]),
            what=o["gate"],
            channels=channels,
            pixels=x.size // channels,
            scale=ctx.arg(op.inputs[1]),
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            input_offset=offset_term(-x.quant.zero_point[0]),
            output_offset=offset_term(y.quant.zero_point[0]),
            multiplier=o["multiplier"],
            shift=o["shift"],
            act_min=o["act_min"],
            act_max=o["act_max"],
        )
