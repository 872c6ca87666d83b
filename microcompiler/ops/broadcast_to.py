"""BROADCAST_TO (every type TFLM runs: int8, int16, int32, int64, float32, bool) and BROADCAST_ARGS.

BROADCAST_TO repeats the input along its extent-1 dimensions (a zero stride in the copy plan); the
output shape is the model's static one, so the shape input may be computed at run time (its values
are then irrelevant, as in TFLM, which reads the shape from the output). BROADCAST_ARGS computes the
broadcast of two shape vectors: folded at compile time when both are constants, otherwise a few
assignments (incompatible shapes, which TFLM reports as an error, give the non-1 extent of the
first shape).
"""

from __future__ import annotations

import numpy as np

from microcompiler.ir import np_dtype
from microcompiler.ops.base import OpKernel, register, require, require_consistent
from microcompiler.ops.movement_common import CopyKernel, contiguous_copy, row_strides


@register
class BroadcastTo(CopyKernel):
    kinds = ("BROADCAST_TO",)
    input_roles = ("input", "shape")
    inputs = (2, 2)
    tflm_refusals = (
        "a shape tensor that is not one-dimensional with one value per output dimension",
        'input or output of more than 5 dimensions ("BroadcastTo only supports 1-5D tensor")',
    )
    options = "shape from the model's output (the shape input may be computed at run time)"

    def plan(self, op, graph):
        x, s, y = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
        require(s.dtype in ("int32", "int64"), op, f"the shape must be int32 or int64, not {s.dtype}")
        require_consistent(
            len(s.shape) == 1 and s.shape[0] == len(y.shape),
            op,
            f"the shape tensor is {list(s.shape)} for a {len(y.shape)}-D output; TFLM requires a one-dimensional "
            f"[{len(y.shape)}]",
        )
        require(
            max(len(x.shape), len(y.shape)) <= 5,
            op,
            f"{list(x.shape)} to {list(y.shape)}: TFLM's BROADCAST_TO takes 1-D to 5-D tensors only",
        )
        if s.is_constant:
            require(
                [int(v) for v in s.data.reshape(-1)] == list(y.shape),
                op,
                f"shape {s.data.reshape(-1).tolist()} differs from the output shape {list(y.shape)}",
            )
        pad = len(y.shape) - len(x.shape)
        require(pad >= 0, op, f"cannot broadcast {list(x.shape)} to the lower rank {list(y.shape)}")
        in_shape = [1] * pad + list(x.shape)
        require(
            all(a in (1, b) for a, b in zip(in_shape, y.shape)),
            op,
            f"cannot broadcast {list(x.shape)} to {list(y.shape)}",
        )
        strides = [0 if a == 1 else st for a, st in zip(in_shape, row_strides(in_shape))]
        return [contiguous_copy(f"t{op.inputs[0]}", f"t{op.outputs[0]}", y.shape, strides)]


def broadcast_shapes(a: list[int], b: list[int]) -> list[int] | None:
    """The broadcast of shapes a and b, or None when they are incompatible."""
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + list(a), [1] * (n - len(b)) + list(b)
    out = []
    for p, q in zip(a, b):
        if p != q and 1 not in (p, q):
            return None
        out.append(q if p == 1 else p)
    return out


@register
class BroadcastArgs(OpKernel):
    kinds = ("BROADCAST_ARGS",)
    input_roles = ("shape0", "shape1")
    inputs = (2, 2)
    types = ("int32", "int64")
    options = "folded when both shapes are constants"
    quantized_io = False

    def check(self, op, graph):
        a, b, y = (graph.tensors[i] for i in (*op.inputs, op.outputs[0]))
        require(
            all(t.dtype == y.dtype for t in (a, b)) and y.dtype in self.types,
            op,
            f"shapes and output must all be int32 or all int64 (got {a.dtype}, {b.dtype}, {y.dtype})",
        )
        require(
            len(a.shape) == 1 and len(b.shape) == 1 and list(y.shape) == [max(a.size, b.size)],
            op,
            f"shapes {list(a.shape)} and {list(b.shape)} do not give an output of shape {list(y.shape)}",
        )
        if a.is_constant and b.is_constant:
            require(
                broadcast_shapes(a.data.tolist(), b.data.tolist()) is not None,
                op,
                f"shapes {a.data.tolist()} and {b.data.tolist()} cannot be broadcast together",
            )

    def fold(self, op, graph):
        a, b, y = (graph.tensors[i] for i in (*op.inputs, op.outputs[0]))
        if not (a.is_constant and b.is_constant):
            return None
        self.check(op, graph)
        return [np.array(broadcast_shapes(a.data.tolist(), b.data.tolist()), dtype=np_dtype(y.dtype))]

    def emit(self, op, graph, ctx):
        a, b, y = (graph.tensors[i] for i in (*op.inputs, op.outputs[0]))
        folded = self.fold(op, graph)
        if folded is not None:  # constant shapes written to a model output
            return ctx.render(
                "movement_constant.c.j2",
                output=ctx.arg(op.outputs[0]),
                values=ctx.const("value", folded[0]),
                ctype="int32_t" if y.dtype == "int32" else "int64_t",
                count=y.size,
            )
        n = y.size
        lines = []
        for k in range(n):
            ka, kb = k - (n - a.size), k - (n - b.size)
            ea = f"{ctx.arg(op.inputs[0])}[{ka}]" if ka >= 0 else None
            eb = f"{ctx.arg(op.inputs[1])}[{kb}]" if kb >= 0 else None
            if ea and eb:
                lines.append(f"  {ctx.arg(op.outputs[0])}[{k}] = {ea} == 1 ? {eb} : {ea};")
            else:
                lines.append(f"  {ctx.arg(op.outputs[0])}[{k}] = {ea or eb};")
        return "\n".join(lines) + "\n"
