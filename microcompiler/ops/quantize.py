"""QUANTIZE (float32 -> int8/int16, and int8/int16 -> int8/int16 requantization) and DEQUANTIZE
(int8/int16 -> float32). Elementwise; same-size conversions are safe in place.

TFLM semantics replicated:

* float -> int: ``roundf(x / scale)`` with the division in float32 and ties away from zero, plus the
  zero point, clamped to the output type. A quotient that is NaN or outside int32 becomes INT32_MIN
  before the zero point is added (with int32 wrap-around), which is what the reference's
  float-to-int conversion does on the x86 oracle.
* int -> int: ``MultiplyByQuantizedMultiplier(x - zp_in, in_scale / out_scale) + zp_out``, clamped.
* DEQUANTIZE: ``scale * (float)(x - zp)`` in float32.
"""
from __future__ import annotations

from microcompiler.ops.activation import offset_term, per_tensor, render_requantize
from microcompiler.ops.base import OpKernel, register, require, require_elementwise
from microcompiler.ops.quant import INT_RANGES, c_float

_QUANTIZE_TYPES = {("float32", "int8"), ("float32", "int16"), ("int8", "int8"), ("int8", "int16"),
                   ("int16", "int8"), ("int16", "int16")}


@register
class Quantize(OpKernel):
    kinds = ("QUANTIZE", "DEQUANTIZE")

    def describe(self, kind):
        info = super().describe(kind)
        info["type_notes"] = ("float32 -> int8/int16, and requantize between int8/int16" if kind == "QUANTIZE"
                              else "int8/int16 -> float32")
        return info

    def check(self, op, graph):
        x, y = require_elementwise(op, graph)
        if op.kind == "DEQUANTIZE":
            require(x.dtype in ("int8", "int16") and y.dtype == "float32", op,
                    f"{x.dtype} -> {y.dtype} is not supported (int8 or int16 -> float32)")
            require(per_tensor(x), op, "the input needs per-tensor quantization parameters "
                    "(per-channel dequantization is not supported)")
            return
        require((x.dtype, y.dtype) in _QUANTIZE_TYPES, op,
                f"{x.dtype} -> {y.dtype} is not supported (float32, int8 or int16 -> int8 or int16)")
        require(per_tensor(y), op, "the output needs per-tensor quantization parameters")
        if x.dtype != "float32":
            require(per_tensor(x), op, "the input needs per-tensor quantization parameters")

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        values = dict(size=x.size, input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]))
        if op.kind == "DEQUANTIZE":
            scale, zp = x.quant.single()
            return ctx.render("dequantize.c.j2", scale=c_float(scale), offset=offset_term(-zp), **values)
        out_scale, out_zp = y.quant.single()
        type_min, type_max = INT_RANGES[y.dtype]
        if x.dtype == "float32":
            return ctx.render("quantize_float.c.j2", ctype=f"{y.dtype}_t", scale=c_float(out_scale),
                              zero_point=out_zp, act_min=type_min, act_max=type_max, **values)
        return render_requantize(ctx, f"{y.dtype}_t", x.quant.single(), (out_scale, out_zp),
                                 type_min, type_max, **values)
