"""ELU: float32 and int8, as TFLite Micro runs it.

* float32: ``x < 0 ? expm1(x) : x``.
* int8: a 256-entry table, built here at compile time exactly as TFLM builds it in its prepare step
  (float32 arithmetic throughout: dequantize, ``expf(x) - 1``, scale by the float reciprocal of the
  output scale, round half away from zero, add the zero point, saturate). The generated C only
  indexes the table, which stays in flash.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import ElementwiseKernel, register, require_unary
from microcompiler.ops.lut import int8_table_from_float, render_int8_table
from microcompiler.ops.plan import LUT, REFERENCE_FLOAT, KernelPlan
from microcompiler.ops.softmax_logistic import expf

F32 = np.float32


def elu_f32(x: np.float32) -> np.float32:
    """TFLM's transform: ``value < 0.0f ? std::exp(value) - 1.0f : value`` in float32."""
    return F32(expf(x) - F32(1.0)) if x < F32(0.0) else x


@register
class Elu(ElementwiseKernel):
    kinds = ("ELU",)
    types = ("int8", "float32")
    type_notes = "int8 by a compile-time table"

    def check(self, op, graph):
        require_unary(op, graph, ("int8", "float32"))

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None):
        return KernelPlan(LUT if graph.tensors[op.inputs[0]].dtype == "int8" else REFERENCE_FLOAT)

    def emit(self, op, graph, ctx):
        x = ctx.tensor(op.inputs[0])
        values = dict(size=x.size, input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]))
        if x.dtype == "float32":
            return ctx.render("activation_float.c.j2", expr="(x < 0.0f ? mc_expm1f(x) : x)", **values)
        return render_int8_table(ctx, self.int8_table(op, graph), what="ELU", **values)

    def int8_table(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        return int8_table_from_float(elu_f32, x.quant.single(), y.quant.single()) if x.dtype == "int8" else None
