"""EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL: bool output (C uint8_t 0/1),
broadcasting up to 6D.

Types as TFLite Micro's comparisons.cc runs them: float32, int32, int64 and int8 for all six, bool
for EQUAL/NOT_EQUAL. float/int/bool values are compared as stored. int8 inputs are first brought to
a common scale, as TFLM does, even when both inputs share one: each offset input is shifted left by
8 bits and multiplied by its own scale (a Q31 multiplier below one), then the two int32 results are
compared. (TFLM's GREATER accepts int16 but its output never holds the comparison: the pinned
interpreter returns false for every element whatever the inputs, so int16 is refused here rather
than reproducing that.)
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import register, require_like_tflm
from microcompiler.ops.binary_common import BroadcastKernel
from microcompiler.ops.quant import quantize_multiplier

_SYMBOLS = {"EQUAL": "==", "NOT_EQUAL": "!=", "GREATER": ">", "GREATER_EQUAL": ">=", "LESS": "<", "LESS_EQUAL": "<="}
_NUMPY = {
    "EQUAL": np.equal,
    "NOT_EQUAL": np.not_equal,
    "GREATER": np.greater,
    "GREATER_EQUAL": np.greater_equal,
    "LESS": np.less,
    "LESS_EQUAL": np.less_equal,
}
_RAW = ("int32", "int64", "float32")
LEFT_SHIFT = 8  # TFLM's kLeftShift for quantized comparisons


@register
class Comparison(BroadcastKernel):
    kinds = tuple(_SYMBOLS)
    types = ("int8",) + _RAW
    kind_types = {"EQUAL": ("int8", "bool") + _RAW, "NOT_EQUAL": ("int8", "bool") + _RAW}
    type_notes = "int8 compared after rescaling both to a common scale, as TFLM"
    options = "broadcasting up to 6D"
    output_bool = True
    tflm_refusals = ("int8 input scale of 1 or more: QuantizeMultiplierSmallerThanOneExp aborts",)

    def check(self, op, graph):
        super().check(op, graph)
        x = graph.tensors[op.inputs[0]]
        if x.dtype in ("int8", "int16"):
            self.require_quantized(op, graph, [0, 1])
            for k in (0, 1):
                scale = float(np.float32(graph.tensors[op.inputs[k]].quant.scale[0]))
                require_like_tflm(
                    0.0 < scale < 1.0,
                    op,
                    f"input{k + 1} scale {scale:g} is outside (0, 1) "
                    "(TFLM's QuantizeMultiplierSmallerThanOneExp check fails)",
                )

    def compute(self, op, arrays, out_dtype):
        a, b = arrays
        if a.dtype in (np.int8, np.int16):
            return None  # rescaled first: left to the generated code
        return _NUMPY[op.kind](a, b)

    def element(self, op, graph, ctx, reads, write):
        symbol = _SYMBOLS[op.kind]
        x = ctx.tensor(op.inputs[0])
        if x.dtype not in ("int8", "int16"):
            return f"{write} = (uint8_t)({reads[0]} {symbol} {reads[1]});\n"
        terms = []
        for k in (0, 1):
            t = ctx.tensor(op.inputs[k])
            scale, zp = t.quant.single()
            m, shift = quantize_multiplier(float(np.float32(scale)))
            offset = f" - {zp}" if zp > 0 else (f" + {-zp}" if zp < 0 else "")
            terms.append(
                f"const int32_t v{k + 1} = mc_requantize(((int32_t){reads[k]}{offset}) * "
                f"(1 << LEFT_SHIFT), {m}, {shift});\n"
            )
        return (
            "/* Both inputs to a common scale: (x - zero point) << 8 times the input's scale. */\n"
            + "".join(terms)
            + f"{write} = (uint8_t)(v1 {symbol} v2);\n"
        )

    def prologue(self, op, graph, ctx):
        if ctx.tensor(op.inputs[0]).dtype in ("int8", "int16"):
            return f"  enum {{ LEFT_SHIFT = {LEFT_SHIFT} }};"
        return ""
