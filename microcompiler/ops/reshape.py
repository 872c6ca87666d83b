"""RESHAPE as a copy.

The ``remove_reshapes`` pass turns almost every RESHAPE into a zero-copy alias. It keeps one only
when both sides are separate memory that already exists (a model input, or a constant in flash,
reshaped straight into a model output); this kernel copies the bytes across for that case.
"""
from __future__ import annotations

from microcompiler.ops.base import OpKernel, register, require


@register
class Reshape(OpKernel):
    kinds = ("RESHAPE",)

    def check(self, op, graph):
        require(1 <= len(op.inputs) <= 2 and op.inputs[0] >= 0 and len(op.outputs) == 1, op,
                "expects an input, an optional shape tensor and one output")
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if len(op.inputs) == 2 and op.inputs[1] >= 0:
            require(graph.tensors[op.inputs[1]].is_constant, op, "the shape input must be a constant")
        require(x.dtype == y.dtype, op, f"output type {y.dtype} differs from input type {x.dtype}")
        require(x.size == y.size, op, f"cannot reshape {list(x.shape)} ({x.size} elements) into "
                f"{list(y.shape)} ({y.size} elements)")

    def emit(self, op, graph, ctx):
        x = ctx.tensor(op.inputs[0])
        return ctx.render("reshape.c.j2", input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]),
                          nbytes=x.nbytes)
