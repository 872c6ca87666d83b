"""FLOOR_DIV and FLOOR_MOD: float32 (the only type TFLite Micro's kernels run), broadcasting up to 6D.

FLOOR_DIV is floor(x / y) computed in double and rounded to float, FLOOR_MOD is fmodf(x, y) moved
to y's sign, as TFLM's reference functions. TFLM's FLOOR_DIV refuses to run (an invoke error) when
the divisor holds a zero: a constant zero divisor is rejected here at compile time; a zero arriving
at run time gives floor(+-inf or NaN), as IEEE division does.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import register, require
from microcompiler.ops.binary_common import BroadcastKernel


@register
class FloorDivMod(BroadcastKernel):
    kinds = ("FLOOR_DIV", "FLOOR_MOD")
    types = ("float32",)
    options = "broadcasting up to 6D"
    quantized_io = False

    def describe(self, kind):
        notes = "a divisor holding 0 is an error in TFLM: a constant one is rejected" if kind == "FLOOR_DIV" else ""
        return {**super().describe(kind), "type_notes": notes}

    def check(self, op, graph):
        super().check(op, graph)
        divisor = graph.tensors[op.inputs[1]]
        if op.kind == "FLOOR_DIV" and divisor.is_constant:
            require(
                not np.any(divisor.data == 0),
                op,
                "the constant divisor holds 0 (TFLite Micro stops with 'Division by 0')",
            )

    def compute(self, op, arrays, out_dtype):
        a, b = (x.astype(np.float32) for x in arrays)
        if op.kind == "FLOOR_DIV":
            if np.any(b == 0):
                return None
            return np.floor(a.astype(np.float64) / b.astype(np.float64)).astype(np.float32)
        m = np.fmod(a, b)
        return np.where((m != 0) & ((b < 0) != (m < 0)), m + b, m)

    def element(self, op, graph, ctx, reads, write):
        if op.kind == "FLOOR_DIV":
            return f"{write} = (float)floor((double){reads[0]} / (double){reads[1]});\n"
        return (
            f"const float y = {reads[1]};\n"
            f"const float m = fmodf({reads[0]}, y);\n"
            "/* Truncated remainder moved to the divisor's sign. */\n"
            f"{write} = (m != 0.0f && ((y < 0.0f) != (m < 0.0f))) ? m + y : m;\n"
        )
