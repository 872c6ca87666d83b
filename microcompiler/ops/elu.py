"""ELU: float32 and int8, as TFLite Micro runs it.

* float32: ``x < 0 ? expm1(x) : x``.
* int8: a 256-entry table, built here at compile time exactly as TFLM builds it in its prepare step
  (float32 arithmetic throughout: dequantize, ``expf(x) - 1``, scale by the float reciprocal of the
  output scale, round half away from zero, add the zero point, saturate). The generated C only
  indexes the table, which stays in flash.
"""
from __future__ import annotations

import numpy as np

from microcompiler.ops.base import OpKernel, register, require, require_elementwise
from microcompiler.ops.lut import int8_table_from_float, render_int8_table
from microcompiler.ops.softmax_logistic import expf

F32 = np.float32


def elu_f32(x: np.float32) -> np.float32:
    """TFLM's transform: ``value < 0.0f ? std::exp(value) - 1.0f : value`` in float32."""
    return F32(expf(x) - F32(1.0)) if x < F32(0.0) else x


@register
class Elu(OpKernel):
    kinds = ("ELU",)
    types = ("int8", "float32")
    type_notes = "int8 by a compile-time table"

    def check(self, op, graph):
        x, y = require_elementwise(op, graph)
        require(x.dtype in ("int8", "float32"), op, f"input type {x.dtype} is not supported (int8, float32)")
        require(y.dtype == x.dtype, op, f"output type {y.dtype} differs from input type {x.dtype}")
        if x.dtype == "int8":
            require(x.quant is not None and y.quant is not None, op,
                    "int8 input and output need quantization parameters")

    def macs(self, op, graph):
        return graph.tensors[op.inputs[0]].size

    def variant(self, op, graph):
        return {"variant": "lut" if graph.tensors[op.inputs[0]].dtype == "int8" else "reference-float"}

    def inplace_inputs(self, op, graph):
        return (0,)

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        values = dict(size=x.size, input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]))
        if x.dtype == "float32":
            return ctx.render("activation_float.c.j2", expr="(x < 0.0f ? expm1f(x) : x)", **values)
        table = int8_table_from_float(elu_f32, x.quant.single(), y.quant.single())
        return render_int8_table(ctx, table, **values)
