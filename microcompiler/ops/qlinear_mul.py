"""MC_QLINEAR_MUL_INT8: not a TFLite operator but ONNX Runtime's QLinearMul (com.microsoft) of two int8
activations of one shape as it runs on x86-64, made by the ONNX QDQ importer (frontend/onnx_qdq_more.py).

MLAS's x86 kernel (qlmul.cpp, SSE2; the optimizer makes int8 activations uint8, which changes no
difference from a zero point): per element the integer product ``(a - zp_a) * (b - zp_b)`` (exact),
converted to float32, times ``ratio = scale_a * scale_b / scale_c`` (float32, in that order), plus
ONNX Runtime's zero point zp_c as a float32 (its own: the IR's + 128 where the model's values are uint8,
option ``zero_point_bias``), rounded to the nearest integer, ties to even (CVTPS2DQ; a value out of the
int32 range becomes INT32_MIN), saturated (PACKSSDW, then to the 8-bit type). The zero point is added
before the rounding: an odd one moves a tie to the other even neighbour. The importer checks this formula against ONNX Runtime on all 65,536 input pairs of the
layer's quantizations before it emits the operator (``qlinear_mul_outputs``), so a machine whose ONNX
Runtime computes otherwise gets a one-line refusal, never other bits.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import register
from microcompiler.ops.qlinear_add import QLinearAddInt8
from microcompiler.ops.quant import c_float

QLINEAR_MUL_INT8 = "MC_QLINEAR_MUL_INT8"


def qlinear_mul_ratio(a_quant, b_quant, c_quant) -> np.float32:
    """scale_a * scale_b / scale_c in float32, left to right (MLAS)."""
    sa, sb, sc = (np.float32(q.scale[0]) for q in (a_quant, b_quant, c_quant))
    return np.float32(np.float32(sa * sb) / sc)


def qlinear_mul_outputs(a: np.ndarray, b: np.ndarray, a_quant, b_quant, c_quant, bias: int = 0) -> np.ndarray:
    """The int8 outputs of the formula above for int8 inputs a, b (numpy, float32 as the C computes);
    ``bias``: ONNX Runtime's zero points minus the IR's (128 for a uint8 model)."""
    ratio = qlinear_mul_ratio(a_quant, b_quant, c_quant)
    za, zb, zc = (int(q.zero_point[0]) for q in (a_quant, b_quant, c_quant))
    product = ((a.astype(np.int64) - za) * (b.astype(np.int64) - zb)).astype(np.float32)
    with np.errstate(all="ignore"):
        v = ((product * ratio).astype(np.float32) + np.float32(zc + bias)).astype(np.float32)
    inside = np.abs(v) < np.float32(2.0**31)
    r = np.where(inside, np.rint(np.where(inside, v, 0)), -(2.0**31)).astype(np.int64)
    return np.clip(r - bias, -128, 127).astype(np.int8)


@register
class QLinearMulInt8(QLinearAddInt8):
    """QLinearAdd's checks, in-place inputs and plan (two int8 activations of one shape); its own C."""

    kinds = (QLINEAR_MUL_INT8,)

    def emit(self, op, graph, ctx):
        a, b, y = (ctx.tensor(i) for i in (*op.inputs, op.outputs[0]))
        return ctx.render(
            "qlinear_mul_int8.c.j2",
            size=y.size,
            ratio=c_float(float(qlinear_mul_ratio(a.quant, b.quant, y.quant))),
            zp_a=int(a.quant.zero_point[0]),
            zp_b=int(b.quant.zero_point[0]),
            zp_c=int(y.quant.zero_point[0]) + int(op.options.get("zero_point_bias", 0)),
            bias=int(op.options.get("zero_point_bias", 0)),
            input1=ctx.arg(op.inputs[0]),
            input2=ctx.arg(op.inputs[1]),
            output=ctx.arg(op.outputs[0]),
        )
