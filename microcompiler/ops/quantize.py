"""QUANTIZE (float32 -> int8/int16, and requantization between integer types) and DEQUANTIZE
(int8/int16/uint8 -> float32). Elementwise; same-size conversions are safe in place.

The type pairs are TFLM's (``quantize_common.cc``, ``dequantize_common.cc``):

* QUANTIZE float32 -> int8/int16; int8 -> int8/uint8/int16/int32; uint8 -> int8;
  int16 -> int8/int16/int32; int32 -> int8/int16.
* DEQUANTIZE int8/int16/uint8 -> float32.

TFLM semantics replicated:

* float -> int: ``roundf(x / scale)`` with the division in float32 and ties away from zero, plus the
  zero point, clamped to the output type. A quotient that is NaN or outside int32 becomes INT32_MIN
  before the zero point is added (with int32 wrap-around), which is what the reference's
  float-to-int conversion does on the x86 oracle.
* int -> int: ``MultiplyByQuantizedMultiplier(x - zp_in, in_scale / out_scale) + zp_out``, clamped.
  Where int32 is involved the subtraction and addition wrap as TFLM's int32 arithmetic does.
* DEQUANTIZE: ``scale * (float)(x - zp)`` in float32.
* Only the first scale and zero point of an input count (TFLM reads ``params.scale``), so
  per-channel parameters on a DEQUANTIZE or QUANTIZE input are accepted and act per tensor; the
  QUANTIZE output must be per tensor, as TFLM requires.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.activation import per_tensor
from microcompiler.ops.base import OpKernel, register, require, require_consistent, require_elementwise
from microcompiler.ops.lut import render_int8_table
from microcompiler.ops.quant import INT_RANGES, c_float
from microcompiler.ops.requantize import offset_term, render_requantize, requantize_int8_table, scale_ratio_multiplier

_QUANTIZE_TYPES = {
    ("float32", "int8"),
    ("float32", "int16"),
    ("int8", "int8"),
    ("int8", "uint8"),
    ("int8", "int16"),
    ("int8", "int32"),
    ("uint8", "int8"),
    ("int16", "int8"),
    ("int16", "int16"),
    ("int16", "int32"),
    ("int32", "int8"),
    ("int32", "int16"),
}
_DEQUANTIZE_TYPES = ("int8", "int16", "uint8")


@register
class Quantize(OpKernel):
    kinds = ("QUANTIZE", "DEQUANTIZE")
    types = ("int8", "int16", "uint8", "int32", "float32")
    kind_refusals = {"QUANTIZE": ("an output with more than one scale (scale->size == 1)",)}

    def describe(self, kind):
        info = super().describe(kind)
        info["type_notes"] = (
            "float32 -> int8/int16; int8 -> int8/uint8/int16/int32; uint8 -> int8; "
            "int16 -> int8/int16/int32; int32 -> int8/int16"
            if kind == "QUANTIZE"
            else "int8/int16/uint8 -> float32 (first scale and zero point, as TFLM)"
        )
        if kind == "DEQUANTIZE":
            info["types"] = ["int8", "int16", "uint8", "float32"]
        return info

    def check(self, op, graph):
        x, y = require_elementwise(op, graph)
        if op.kind == "DEQUANTIZE":
            require(
                x.dtype in _DEQUANTIZE_TYPES and y.dtype == "float32",
                op,
                f"{x.dtype} -> {y.dtype} is not supported (int8, int16 or uint8 -> float32)",
            )
            require(x.quant is not None, op, "the input needs quantization parameters")
            return
        pairs = ", ".join(f"{a}->{b}" for a, b in sorted(_QUANTIZE_TYPES))
        require(
            (x.dtype, y.dtype) in _QUANTIZE_TYPES,
            op,
            f"{x.dtype} -> {y.dtype} is not supported (TFLM's pairs: {pairs})",
        )
        require(per_tensor(y), op, "the output needs per-tensor quantization parameters")
        # TFLM's PrepareQuantizeReference: affine_quantization->scale->size == 1, even where the file's
        # per-channel scales are all equal (the importer keeps those as one)
        require_consistent(
            y.quant.file_scales <= 1,
            op,
            f"the output has {y.quant.file_scales} scales; TFLM quantizes to one scale per tensor (scale->size == 1)",
        )
        if x.dtype != "float32":
            require(x.quant is not None, op, "the input needs quantization parameters")

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        values = dict(size=x.size, input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]))
        if op.kind == "DEQUANTIZE":
            scale, zp = x.quant.single()
            if op.options.get("table") and x.dtype == "int8":  # ONNX's DequantizeLinear (frontend/onnx_qdq.py)
                q = np.arange(-128, 128, dtype=np.int32)
                table = np.float32(scale) * (q - zp).astype(np.float32)  # the loop's float32 product
                name = ctx.const(
                    "dequantized", table.astype(np.float32), comment=f"{scale!r} * (q - {zp}), q = -128..127"
                )
                return ctx.render("dequantize_table.c.j2", table=name, **values)
            return ctx.render("dequantize.c.j2", scale=c_float(scale), offset=offset_term(-zp), **values)
        out_scale, out_zp = y.quant.single()
        type_min, type_max = INT_RANGES[y.dtype]
        if x.dtype == "float32" and op.options.get("rounding") == "half_even":  # ONNX Runtime's (frontend/onnx_qdq.py)
            return ctx.render(
                "quantize_float_even.c.j2",
                ctype=f"{y.dtype}_t",
                scale=c_float(out_scale),
                lo=c_float(type_min - out_zp),
                hi=c_float(type_max - out_zp),
                offset=offset_term(out_zp),
                zero_point=int(out_zp),
                **values,
            )
        if x.dtype == "float32":
            return ctx.render(
                "quantize_float.c.j2",
                ctype=f"{y.dtype}_t",
                scale=c_float(out_scale),
                zero_point=out_zp,
                act_min=type_min,
                act_max=type_max,
                **values,
            )
        if "int32" in (x.dtype, y.dtype):
            in_scale, in_zp = x.quant.single()
            return ctx.render(
                "quantize_int32.c.j2",
                ctype=f"{y.dtype}_t",
                multiplier=scale_ratio_multiplier(in_scale, out_scale),
                input_zp=in_zp,
                output_zp=out_zp,
                clamp=y.dtype != "int32",
                act_min=type_min,
                act_max=type_max,
                **values,
            )
        if x.dtype == y.dtype == "int8":
            return render_int8_table(ctx, self.int8_table(op, graph), what="requantized", **values)
        return render_requantize(
            ctx, f"{y.dtype}_t", x.quant.single(), (out_scale, out_zp), type_min, type_max, **values
        )

    def int8_table(self, op, graph):
        """int8 -> int8 requantization (QUANTIZE between two int8 quantizations) as a table."""
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if op.kind != "QUANTIZE" or not x.dtype == y.dtype == "int8":
            return None
        return requantize_int8_table(x.quant.single(), y.quant.single(), -128, 127)
