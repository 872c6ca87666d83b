"""RESHAPE, SQUEEZE and EXPAND_DIMS as a copy.

These change only the shape, never the bytes. The ``remove_reshapes`` pass turns almost every one
of them into a zero-copy alias. It keeps one only
when both sides are separate memory that already exists (a model input, or a constant in flash,
reshaped straight into a model output); this kernel copies the bytes across for that case.
"""
from __future__ import annotations

from microcompiler.ops.base import OpKernel, register, require


@register
class Reshape(OpKernel):
    kinds = ("RESHAPE", "SQUEEZE", "EXPAND_DIMS")
    input_roles = ("input", "shape")
    inputs = (1, 2)
    arity = {"SQUEEZE": ((1, 1), (1, 1)), "EXPAND_DIMS": ((2, 2), (1, 1))}
    types = ("int8", "int16", "int32", "int64", "float32", "bool")
    options = "no code: an alias in the arena (a copy only between two caller-owned buffers)"

    def check(self, op, graph):
        require(1 <= len(op.inputs) <= 2 and op.inputs[0] >= 0 and len(op.outputs) == 1, op,
                "expects an input, an optional shape (or axis) tensor and one output")
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        require(x.dtype == y.dtype, op, f"output type {y.dtype} differs from input type {x.dtype}")
        require(x.size == y.size, op, f"cannot reshape {list(x.shape)} ({x.size} elements) into "
                f"{list(y.shape)} ({y.size} elements)")

    def emit(self, op, graph, ctx):
        x = ctx.tensor(op.inputs[0])
        return ctx.render("reshape.c.j2", input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]),
                          nbytes=x.nbytes)
