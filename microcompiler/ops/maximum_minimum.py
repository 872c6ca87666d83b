"""MAXIMUM and MINIMUM: float32, int8, int16, int32, int64, with broadcasting up to 6D.

TFLite Micro compares the raw values (maximum_minimum.cc): quantized inputs are not rescaled, so
the output simply takes one input's stored value. ``a > b ? a : b`` (and ``<`` for MINIMUM) is
TFLM's expression, which also decides what a NaN operand gives.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ir import c_type
from microcompiler.ops.base import register
from microcompiler.ops.binary_common import BroadcastKernel


@register
class MaximumMinimum(BroadcastKernel):
    kinds = ("MAXIMUM", "MINIMUM")
    types = ("int8", "int16", "int32", "int64", "float32")
    type_notes = "raw values compared, as TFLM: quantized inputs are not rescaled"
    options = "broadcasting up to 6D"
    quantized_io = False

    def compute(self, op, arrays, out_dtype):
        a, b = arrays
        return np.where(a > b, a, b) if op.kind == "MAXIMUM" else np.where(a < b, a, b)

    def element(self, op, graph, ctx, reads, write):
        ctype = c_type(ctx.tensor(op.outputs[0]).dtype)
        compare = ">" if op.kind == "MAXIMUM" else "<"
        return f"const {ctype} a = {reads[0]};\nconst {ctype} b = {reads[1]};\n{write} = a {compare} b ? a : b;\n"
