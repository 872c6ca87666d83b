"""FILL: int8, int32 and float32 (TFLM's types), constant dims equal to the output shape and a scalar
value, as TFLM's prepare step requires (it refuses dims computed at run time and a value of shape [1]).

Folded at compile time when the value is a constant too; otherwise the function writes the run-time
value into every element (memset for int8). The value is copied unchanged (TFLM does not
requantize between the value's and the output's parameters).
"""

from __future__ import annotations

import numpy as np

from microcompiler.ir import c_type, np_dtype
from microcompiler.ops.base import OpKernel, register, require, require_consistent
from microcompiler.ops.movement_common import constant_ints


@register
class Fill(OpKernel):
    kinds = ("FILL",)
    input_roles = ("dims", "value")
    inputs = (2, 2)
    types = ("int8", "int32", "float32")
    options = (
        "constant dims int32 or int64 (equal to the output shape), a scalar value; folded when the value is constant"
    )
    tflm_refusals = ("dims computed at run time, or a value that is not a scalar (shape [1])",)
    quantized_io = False

    def check(self, op, graph):
        v, y = graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
        require(y.dtype in self.types, op, f"type {y.dtype} is not supported ({', '.join(self.types)})")
        require(v.dtype == y.dtype, op, f"value type {v.dtype} differs from the output type {y.dtype}")
        require_consistent(
            len(v.shape) == 0,
            op,
            f"the value must be a scalar, not of shape {list(v.shape)} (TFLM: NumDimensions(value) == 0)",
        )
        d = graph.tensors[op.inputs[0]]
        require(
            d.dtype in ("int32", "int64") and len(d.shape) == 1 and d.size == len(y.shape),
            op,
            f"dims must be {len(y.shape)} int32 or int64 values, one per output dimension",
        )
        # TFLM compares the dims with the output shape in its prepare step, which refuses dims computed
        # at run time
        dims = constant_ints(graph, op, 0, "dims")
        require(dims == list(y.shape), op, f"dims {dims} differ from the output shape {list(y.shape)}")

    def fold(self, op, graph):
        v, y = graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
        if not (v.is_constant and graph.tensors[op.inputs[0]].is_constant):
            return None
        self.check(op, graph)
        return [np.full(y.shape, v.data.reshape(-1)[0], dtype=np_dtype(y.dtype))]

    def emit(self, op, graph, ctx):
        y = ctx.tensor(op.outputs[0])
        folded = self.fold(op, graph)
        if folded is not None:  # a constant fill written to a model output
            return ctx.render(
                "movement_constant.c.j2",
                output=ctx.arg(op.outputs[0]),
                values=ctx.const("value", folded[0]),
                ctype=c_type(y.dtype),
                count=y.size,
            )
        return ctx.render(
            "fill.c.j2",
            ctype=c_type(y.dtype),
            value=ctx.arg(op.inputs[1]),
            output=ctx.arg(op.outputs[0]),
            count=y.size,
            memset=y.dtype == "int8",
        )
