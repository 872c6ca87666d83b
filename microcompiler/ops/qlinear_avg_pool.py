"""MC_QLINEAR_AVG_POOL_INT8: not a TFLite operator but ONNX Runtime's QLinearAveragePool
(com.microsoft), made by the ONNX QDQ importer (frontend/onnx_qdq.py): each input dequantized to
float32 (``float(x - zp) * scale``), the window summed in float32 row by row (ONNX Runtime's
QLinearPool2DTask order), divided by the count (the window inside the image, or the whole kernel with
``count_include_pad``), then quantized as QuantizeLinear does (divide by the output scale, clamp,
round half to even, add the zero point). Input and output NHWC; ``options``: filter_h/w, stride_h/w,
pad_top, pad_left, count_include_pad.
"""

from __future__ import annotations

from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.plan import REFERENCE, KernelPlan
from microcompiler.ops.quant import c_float

QLINEAR_AVG_POOL_INT8 = "MC_QLINEAR_AVG_POOL_INT8"


@register
class QLinearAvgPoolInt8(OpKernel):
    kinds = (QLINEAR_AVG_POOL_INT8,)
    inputs = (1, 1)
    types = ("int8",)
    internal = True  # made by the ONNX importer, never read from a .tflite: not listed by `microcompiler ops`

    def check(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        require(x.dtype == y.dtype == "int8" and len(x.shape) == len(y.shape) == 4, op, "int8 NHWC input and output")
        require(x.shape[3] == y.shape[3] and x.shape[0] == y.shape[0], op, "the channels and batch are kept")
        require(all(t.quant is not None and not t.quant.per_channel for t in (x, y)), op, "per-tensor quantization")

    def macs(self, op, graph):
        o = op.options
        return graph.tensors[op.outputs[0]].size * o["filter_h"] * o["filter_w"]

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None):
        return KernelPlan(REFERENCE)

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        o = op.options
        (x_scale, x_zp), (y_scale, y_zp) = x.quant.single(), y.quant.single()
        return ctx.render(
            "qlinear_avg_pool_int8.c.j2",
            n=x.shape[0],
            in_h=x.shape[1],
            in_w=x.shape[2],
            channels=x.shape[3],
            out_h=y.shape[1],
            out_w=y.shape[2],
            k_h=o["filter_h"],
            k_w=o["filter_w"],
            stride_h=o["stride_h"],
            stride_w=o["stride_w"],
            pad_top=o["pad_top"],
            pad_left=o["pad_left"],
            include_pad=bool(o["count_include_pad"]),
            x_zp=x_zp,
            x_scale=c_float(x_scale),
            y_scale=c_float(y_scale),
            lo=c_float(-128 - y_zp),
            hi=c_float(127 - y_zp),
            y_zp=y_zp,
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
        )
