"""LOGICAL_AND and LOGICAL_OR on bool tensors (C uint8_t 0/1), with broadcasting up to 6D.

(LOGICAL_NOT, a unary operator, lives with the unary family.)
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import register
from microcompiler.ops.binary_common import BroadcastKernel


@register
class Logical(BroadcastKernel):
    kinds = ("LOGICAL_AND", "LOGICAL_OR")
    types = ("bool",)
    options = "broadcasting up to 6D"
    quantized_io = False
    output_bool = True

    def compute(self, op, arrays, out_dtype):
        a, b = (x.astype(bool) for x in arrays)
        return np.logical_and(a, b) if op.kind == "LOGICAL_AND" else np.logical_or(a, b)

    def element(self, op, graph, ctx, reads, write):
        logic = "&&" if op.kind == "LOGICAL_AND" else "||"
        return f"{write} = (uint8_t)({reads[0]} {logic} {reads[1]});\n"
