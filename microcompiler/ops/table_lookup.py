"""MC_TABLE_INT8: not a TFLite operator but what the ``fuse_tables`` pass (passes/fuse_tables.py)
makes of a chain of int8 elementwise functions of one tensor, such as SiLU's ``x * LOGISTIC(x)``:
one load from a 256-entry table per element.

Input 0 is the int8 tensor, input 1 the constant table (indexed by the input byte read as unsigned,
ops/lut.py); ``options["functions"]`` names what the table holds, for the comment and metadata.
"""
from __future__ import annotations

import numpy as np

from microcompiler.ops.base import ElementwiseKernel, register

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

    def variant(self, op, graph):
        return {"variant": "lut", "scratch_bytes": 0}

    def emit(self, op, graph, ctx):
        x = ctx.tensor(op.inputs[0])
        return ctx.render("lut_int8.c.j2", table=ctx.arg(op.inputs[1]), size=x.size, input=ctx.arg(op.inputs[0]),
                          output=ctx.arg(op.outputs[0]), what=op.options.get("functions", ""))
