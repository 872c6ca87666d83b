"""SELECT_V2: out = condition ? x : y, with condition (bool), x and y broadcast to the output
shape (up to 6D). x and y are float32, int8 or int16, as TFLite Micro's select.cc; the values are
copied, not requantized."""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import register, require
from microcompiler.ops.binary_common import BroadcastKernel


@register
class SelectV2(BroadcastKernel):
    kinds = ("SELECT_V2",)
    inputs = (3, 3)
    types = ("int8", "int16", "float32")
    type_notes = "condition bool; x and y of one type, copied as stored"
    options = "broadcasting of condition, x and y up to 6D"
    quantized_io = False

    def value_inputs(self, op):
        return [1, 2]

    def check(self, op, graph):
        super().check(op, graph)
        condition = graph.tensors[op.inputs[0]]
        require(condition.dtype == "bool", op, f"condition must be bool, not {condition.dtype}")

    def compute(self, op, arrays, out_dtype):
        condition, x, y = arrays
        return np.where(condition.astype(bool), x, y)

    def element(self, op, graph, ctx, reads, write):
        return f"{write} = {reads[0]} ? {reads[1]} : {reads[2]};\n"
