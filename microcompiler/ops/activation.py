"""Standalone RELU and RELU6 (int8, int16 and float32) and RELU_N1_TO_1 (int8 and float32).

Elementwise and safe in place (each element is read before it is written). Semantics follow TFLM:

* RELU (int8/int16) requantizes from the input to the output quantization, then clamps to
  [output zero point, type max]; int16 needs zero points of 0.
* RELU6 (int8/int16) clamps to [input zero point, quantized 6.0] in the *input* quantization and
  ignores the output's quantization, as TFLM does.
* RELU_N1_TO_1 is not registered by TFLM (its interpreter refuses the operator); it follows TFLite's
  kernel, which is RELU's arithmetic with the clamp at the quantized -1.0 and 1.0 of the output.
* float32 uses TFLM's comparisons exactly, so NaN and -0.0 pass through as they do there.

int8 compiles to a 256-entry table of that arithmetic (ops/lut.py): one load per element.
"""

from __future__ import annotations

import math

import numpy as np

from microcompiler.ops.base import OpKernel, register, require, require_consistent, require_elementwise
from microcompiler.ops.fixedpoint import clamp
from microcompiler.ops.lut import int8_table_from_integer, render_int8_table
from microcompiler.ops.plan import LUT, REFERENCE, KernelPlan
from microcompiler.ops.quant import INT_RANGES, activation_range, tflite_round
from microcompiler.ops.requantize import offset_term, render_requantize, requantize_int8_table  # noqa: F401 (offset_term re-exported)


def float_activation_expr(value: str, activation: str) -> str:
    """A C expression applying a float activation the way TFLM's standalone kernels do."""
    if activation == "NONE":
        return value
    if activation == "RELU":
        return f"({value} < 0.0f ? 0.0f : {value})"
    if activation == "RELU6":
        return f"({value} > 6.0f ? 6.0f : {value} < 0.0f ? 0.0f : {value})"
    if activation == "RELU_N1_TO_1":
        return f"({value} > 1.0f ? 1.0f : {value} < -1.0f ? -1.0f : {value})"
    raise ValueError(activation)


def six_over_scale(in_scale: float) -> float:
    """RELU6's upper bound before rounding, as TFLM computes it: 6.0f / scale in float32 (inf past
    float32's range; check refuses what does not fit int32)."""
    with np.errstate(over="ignore", divide="ignore"):
        return float(np.float32(6.0) / np.float32(in_scale))


def per_tensor(t) -> bool:
    return t.quant is not None and not t.quant.per_channel


@register
class Activation(OpKernel):
    kinds = ("RELU", "RELU6", "RELU_N1_TO_1")
    TYPES = {
        "RELU": ("int8", "int16", "float32"),
        "RELU6": ("int8", "int16", "float32"),
        "RELU_N1_TO_1": ("int8", "float32"),
    }

    def describe(self, kind):
        notes = "not in TFLM: TFLite's semantics" if kind == "RELU_N1_TO_1" else ""
        return {**super().describe(kind), "types": list(self.TYPES[kind]), "type_notes": notes}

    def check(self, op, graph):
        x, y = require_elementwise(op, graph)
        types = self.TYPES[op.kind]
        require(x.dtype in types, op, f"input type {x.dtype} is not supported ({', '.join(types)})")
        require(y.dtype == x.dtype, op, f"output type {y.dtype} differs from input type {x.dtype}")
        if x.dtype == "float32":
            return
        require(per_tensor(x), op, "the input needs per-tensor quantization parameters")
        if op.kind == "RELU6":
            in_scale, in_zp = x.quant.single()
            six = six_over_scale(in_scale)
            require_consistent(
                math.isfinite(six)
                and all(-(2**31) <= v < 2**31 for v in (tflite_round(six), tflite_round(six) + in_zp)),
                op,
                f"the input scale {in_scale:.3g} puts 6.0 at {six:.3g}, beyond int32 (TFLM's conversion of it "
                "is undefined)",
            )
        if op.kind in ("RELU", "RELU_N1_TO_1"):
            require(per_tensor(y), op, "the output needs per-tensor quantization parameters")
            if x.dtype == "int16":
                require(
                    x.quant.zero_point[0] == 0 and y.quant.zero_point[0] == 0,
                    op,
                    "int16 input and output zero points must be 0",
                )

    def _clamp(self, op, x, y) -> tuple[int, int]:
        """The integer clamp bounds (RELU6: in the input's quantization)."""
        type_min, type_max = INT_RANGES[x.dtype]
        in_scale, in_zp = x.quant.single()
        if op.kind == "RELU6":
            six = in_zp + int(tflite_round(six_over_scale(in_scale)))
            return in_zp, min(max(six, type_min), type_max)
        if op.kind == "RELU":
            return max(type_min, y.quant.zero_point[0]), type_max
        return activation_range("RELU_N1_TO_1", y)

    def int8_table(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if x.dtype != "int8":
            return None
        act_min, act_max = self._clamp(op, x, y)
        if op.kind == "RELU6":
            return int8_table_from_integer(lambda v: clamp(v, act_min, act_max))
        return requantize_int8_table(x.quant.single(), y.quant.single(), act_min, act_max)

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None):
        return KernelPlan(LUT if graph.tensors[op.inputs[0]].dtype == "int8" else REFERENCE)

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        values = dict(size=x.size, input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]))
        if x.dtype == "float32":
            return ctx.render("activation_float.c.j2", expr=float_activation_expr("x", op.kind), **values)
        if x.dtype == "int8":
            return render_int8_table(ctx, self.int8_table(op, graph), what=op.kind, **values)
        act_min, act_max = self._clamp(op, x, y)
        if op.kind == "RELU6":
            return ctx.render(
                "requantize_int.c.j2",
                ctype=f"{x.dtype}_t",
                multiplier=None,
                input_offset="",
                output_offset="",
                act_min=act_min,
                act_max=act_max,
                **values,
            )
        return render_requantize(ctx, f"{x.dtype}_t", x.quant.single(), y.quant.single(), act_min, act_max, **values)
