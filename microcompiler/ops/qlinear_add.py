"""MC_QLINEAR_ADD_INT8: not a TFLite operator but ONNX Runtime's QLinearAdd (com.microsoft) as it
runs on x86-64 with AVX2 and FMA, made by the ONNX QDQ importer (frontend/onnx_qdq.py).

ONNX Runtime's optimizer makes the int8 activations uint8 (q + 128, zero points + 128); MLAS's AVX2
kernel then computes, per element, ``fma(a, ratio_a, fma(b, ratio_b, fixed))`` in float32 with
``ratio_a = scale_a / scale_c``, ``ratio_b = scale_b / scale_c`` and ``fixed = zp_c - fma(ratio_a,
zp_a, ratio_b * zp_b)`` (its compiler contracted that expression), rounds half to even and saturates
to uint8. Found by comparing every pair of inputs with ONNX Runtime 1.32.0 over 150 random
quantizations (docs/onnx.md): without the fused multiply-adds, or in another order, some outputs
differ. The generated C does the same with ``__builtin_fmaf`` (VFMA.F32 with an FPU, the C library's
``fmaf`` without) on the int8 values plus 128.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.plan import REFERENCE, KernelPlan
from microcompiler.ops.quant import c_float

QLINEAR_ADD_INT8 = "MC_QLINEAR_ADD_INT8"


def f32_fma(x: float, y: float, z: float) -> np.float32:
    """x * y + z rounded once to float32 (ties to even), exactly."""
    exact = Fraction(float(np.float32(x))) * Fraction(float(np.float32(y))) + Fraction(float(np.float32(z)))
    near = np.float32(float(exact))
    lo, hi = (
        (near, np.nextafter(near, np.float32(np.inf)))
        if Fraction(float(near)) <= exact
        else (
            np.nextafter(near, np.float32(-np.inf)),
            near,
        )
    )
    d_lo, d_hi = exact - Fraction(float(lo)), Fraction(float(hi)) - exact
    if d_lo != d_hi:
        return lo if d_lo < d_hi else hi
    return lo if int(np.array(lo, dtype=np.float32).view(np.uint32)) % 2 == 0 else hi


def qlinear_add_constants(a_quant, b_quant, c_quant, bias: int = 128) -> tuple[np.float32, np.float32, np.float32]:
    """(ratio_a, ratio_b, fixed) as ONNX Runtime computes them, in its zero points: the IR's plus ``bias``
    (128: uint8, as its optimizer makes QDQ models' int8; 0: a model's own int8 QLinearAdd)."""
    sa, za = np.float32(a_quant.scale[0]), a_quant.zero_point[0] + bias
    sb, zb = np.float32(b_quant.scale[0]), b_quant.zero_point[0] + bias
    sc, zc = np.float32(c_quant.scale[0]), c_quant.zero_point[0] + bias
    ra, rb = np.float32(sa / sc), np.float32(sb / sc)
    fixed = np.float32(np.float32(zc) - f32_fma(float(ra), float(za), float(np.float32(rb * np.float32(zb)))))
    return ra, rb, fixed


@register
class QLinearAddInt8(OpKernel):
    kinds = (QLINEAR_ADD_INT8,)
    inputs = (2, 2)
    types = ("int8",)
    internal = True  # made by the ONNX importer, never read from a .tflite: not listed by `microcompiler ops`
    input_roles = ("input1", "input2")

    def check(self, op, graph):
        a, b, y = (graph.tensors[i] for i in (*op.inputs, op.outputs[0]))
        require(a.dtype == b.dtype == y.dtype == "int8", op, "int8 inputs and output")
        require(tuple(a.shape) == tuple(b.shape) == tuple(y.shape), op, "the inputs and output have one shape")
        require(all(t.quant is not None and not t.quant.per_channel for t in (a, b, y)), op, "per-tensor quantization")

    def macs(self, op, graph):
        return graph.tensors[op.outputs[0]].size

    def inplace_inputs(self, op, graph):
        return (0, 1)

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None):
        return KernelPlan(REFERENCE)

    def emit(self, op, graph, ctx):
        a, b, y = (ctx.tensor(i) for i in (*op.inputs, op.outputs[0]))
        bias = int(op.options.get("zero_point_bias", 128))
        ra, rb, fixed = qlinear_add_constants(a.quant, b.quant, y.quant, bias)
        return ctx.render(
            "qlinear_add_int8.c.j2",
            size=y.size,
            ratio_a=c_float(float(ra)),
            ratio_b=c_float(float(rb)),
            fixed=c_float(float(fixed)),
            bias=bias,
            input1=ctx.arg(op.inputs[0]),
            input2=ctx.arg(op.inputs[1]),
            output=ctx.arg(op.outputs[0]),
        )
