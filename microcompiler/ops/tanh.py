"""TANH: float32, int8 and int16, bit-exact with TFLite Micro's reference kernels.

* int8: a 256-entry table computed here, for each input, with TFLM's integer arithmetic: the input
  (minus its zero point) is rescaled to Q4.27 and gemmlowp's fixed-point tanh gives a Q0.31 result,
  rounded to the output's 1/128 steps; inputs beyond the radius where the rescaling could overflow
  saturate. As in TFLM, the output is always tanh * 128 whatever the output tensor's quantization says.
* int16: zero points 0 and an output scale of 2^-15; tanh(x) = 2 * sigmoid(2x) - 1 from TFLM's
  256-entry sigmoid table (shared with the int16 LOGISTIC) with linear interpolation, compiled to a
  piecewise-linear table over the rescaled input (ops/lut16.py); TFLM's own loop where no exact fit
  exists or the tuning asks for the reference.
* float32: ``mc_tanhf``, the C library's fdlibm tanhf carried in the runtime (kernel_libm.h).
"""

from __future__ import annotations

import functools

import numpy as np

from microcompiler.ops.base import ElementwiseKernel, register, require, require_unary
from microcompiler.ops.features import has_mve
from microcompiler.ops.fixedpoint import clamp, fp_tanh, requantize, rounding_divide_by_pot
from microcompiler.ops.lut import int8_table_from_integer, render_int8_table
from microcompiler.ops.lut16 import (
    SIGMOID_TABLE,
    piecewise_plan,
    piecewise_table,
    render_sigmoid_family_int16,
)
from microcompiler.ops.plan import LUT, REFERENCE_FLOAT, KernelPlan
from microcompiler.ops.quant import q31_frexp
from microcompiler.ops.requant_float import ORT_GRU, ORT_MLAS
from microcompiler.ops.softmax_logistic import (
    F32,
    calculate_input_radius,
    checked_log2,
    int16_input_multiplier,
)

TANH_INT8_INTEGER_BITS = 4  # Q4.27 input of the int8 kernel
TANH_INT16_INTEGER_BITS = 3


def tanh_int8_params(input_scale: float) -> tuple[int, int, int]:
    """(input_multiplier, input_left_shift, input_range_radius) of the int8 tanh."""
    real = float(F32(input_scale)) * float(1 << (31 - TANH_INT8_INTEGER_BITS))
    multiplier, shift = q31_frexp(real)
    return multiplier, shift, calculate_input_radius(TANH_INT8_INTEGER_BITS, shift, 31, max_left_shift=30)


def tanh_int8_table(input_scale: float, input_zero_point: int) -> np.ndarray:
    """TFLM's int8 tanh of each of the 256 inputs."""
    return _tanh_int8_table(float(input_scale), int(input_zero_point)).copy()


@functools.lru_cache(maxsize=1024)  # an unrolled RNN asks for the same table once per step
def _tanh_int8_table(input_scale: float, input_zero_point: int) -> np.ndarray:
    multiplier, shift, radius = tanh_int8_params(input_scale)

    def tanh(x: int) -> int:
        v = x - input_zero_point
        if v <= -radius:
            return -128
        if v >= radius:
            return 127
        t = fp_tanh(requantize(v, multiplier, shift), TANH_INT8_INTEGER_BITS)
        return clamp(rounding_divide_by_pot(t, 24), -128, 127)

    return int8_table_from_integer(tanh)


def tanh_int16_params(input_scale: float) -> tuple[int, int]:
    """(input_multiplier, input_right_shift) of the int16 tanh: the input in units of 1/(3 * 4096),
    with TFLM's power-of-two shortcut (scales 2^-12 and 2^-11) already turned into the multiplier
    it stands for."""
    is_pot, log2_rounded = checked_log2(input_scale)
    left_shift = (15 - TANH_INT16_INTEGER_BITS) + log2_rounded
    if is_pot and left_shift in (0, 1):
        return 3 << left_shift, 0
    return int16_input_multiplier(input_scale)


@register
class Tanh(ElementwiseKernel):
    kinds = ("TANH",)
    type_notes = "int16: zero points 0, output scale 2^-15"
    fast = {"mve": "int16 (mve-piecewise-table: the fitted lines 4 elements per step, gathers from the two tables)"}

    def check(self, op, graph):
        x, y = require_unary(op, graph, ("int8", "int16", "float32"))
        if x.dtype == "float32":
            return
        if x.dtype == "int8":
            require(x.quant.scale[0] > 0, op, "input scale must be positive")
            return
        require(x.quant.zero_point[0] == 0 and y.quant.zero_point[0] == 0, op, "int16 tanh needs zero points 0")
        is_pot, log2 = checked_log2(y.quant.scale[0])
        require(is_pot and log2 == -15, op, f"int16 output scale must be 2^-15 (got {y.quant.scale[0]})")
        multiplier, _ = tanh_int16_params(x.quant.scale[0])
        require(
            multiplier < 1 << 16,
            op,
            f"int16 input scale {x.quant.scale[0]} is too large: input * multiplier would overflow int32",
        )

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None):
        x = graph.tensors[op.inputs[0]]
        if x.dtype == "int16" and piecewise_table("tanh", *tanh_int16_params(x.quant.scale[0])):
            return piecewise_plan(has_mve(features))
        return KernelPlan({"float32": REFERENCE_FLOAT, "int8": LUT, "int16": SIGMOID_TABLE}[x.dtype])

    def int8_table(self, op, graph):
        x = graph.tensors[op.inputs[0]]
        return tanh_int8_table(*x.quant.single()) if x.dtype == "int8" else None

    def emit(self, op, graph, ctx):
        x = ctx.tensor(op.inputs[0])
        values = dict(size=x.size, input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]))
        if x.dtype == "float32":
            expr = "mc_ort_tanh(x)" if op.options.get(ORT_MLAS) else "mc_tanhf(x)"  # ONNX Runtime's (kernel_ort.h)
            expr = "mc_ort_gru_tanh(x)" if op.options.get(ORT_GRU) else expr
            return ctx.render("activation_float.c.j2", expr=expr, **values)
        in_scale, in_zp = x.quant.single()
        if x.dtype == "int8":
            return render_int8_table(ctx, self.int8_table(op, graph), what="tanh", **values)
        multiplier, shift = tanh_int16_params(in_scale)
        return render_sigmoid_family_int16(ctx, "tanh", multiplier, shift, "tanh_int16.c.j2", **values)
