"""SHAPE: the input's static shape as an int32 or int64 vector, computed at compile time.

Shapes are static here, so SHAPE always folds into a constant (the ``fold_constants`` pass) and costs
no code; only when its result is itself a model output does a function copy the constant into the
caller's buffer. TFLM's kernel writes int32 only; int64 (``out_type``) is supported as TensorFlow
Lite defines it.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ir import np_dtype
from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.movement_common import RAW_TYPES


@register
class Shape(OpKernel):
    kinds = ("SHAPE",)
    types = RAW_TYPES
    type_notes = "the input's type; output int32 or int64, TFLM int32 only"
    options = "out_type; folded to a constant (static shapes)"
    quantized_io = False

    def check(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        require(x.dtype in self.types, op, f"input type {x.dtype} is not supported ({', '.join(self.types)})")
        require(y.dtype in ("int32", "int64"), op, f"output type {y.dtype} is not supported (int32, int64)")
        out_type = {2: "int32", 4: "int64"}.get(op.options.get("out_type", 0))  # TensorType; 0: not given
        require(out_type in (None, y.dtype), op, f"out_type {out_type} differs from the output type {y.dtype}")
        require(
            list(y.shape) == [len(x.shape)],
            op,
            f"output shape {list(y.shape)} cannot hold the rank-{len(x.shape)} input's shape",
        )

    def fold(self, op, graph):
        self.check(op, graph)
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        return [np.array(x.shape, dtype=np_dtype(y.dtype)).reshape(y.shape)]

    def emit(self, op, graph, ctx):
        y = ctx.tensor(op.outputs[0])
        return ctx.render(
            "movement_constant.c.j2",
            output=ctx.arg(op.outputs[0]),
            values=ctx.const("shape", self.fold(op, graph)[0]),
            ctype=f"{y.dtype}_t",
            count=y.size,
        )
