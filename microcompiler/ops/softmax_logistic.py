"""SOFTMAX and LOGISTIC: int8, int16 and float32, bit-exact with TFLite Micro's reference kernels.

Every constant TFLM derives in its prepare step (multipliers, shifts, the int8 softmax ``diff_min``,
the int8 logistic input radius, the int16 softmax lookup tables) is computed here, at compile time,
with TFLM's precision: Python floats where TFLM uses ``double``, numpy float32 where it uses
``float``. The generated C only does the integer run-time arithmetic; the gemmlowp-style
fixed-point functions it needs live in ``crt/include/microcompiler/kernel_fixedpoint.h``.

Supported (as TFLM):

* SOFTMAX over the last dimension, any beta: float32; int8 -> int8 (output scale 1/256, zero point
  -128); int8 -> int16 (output scale 1/65536, zero point -32768); int16 -> int16 (output scale
  1/32768, zero point 0). The int8 input's exponentials depend only on max - x, one of 256 values:
  from SOFTMAX_EXP_TABLE_MIN_ELEMENTS elements on they are a compile-time table
  (``softmax_int8_exp_table``) and the run time is a table load per element for the row sum, one
  reciprocal per row, and a multiply and rounding shift per output.
* LOGISTIC: float32; int8 (output zero point -128) as a 256-entry table of TFLM's integer results,
  computed here (``logistic_int8_table``); int16 (zero points 0, output scale 2^-15) as a
  piecewise-linear table over the rescaled input (ops/lut16.py), TFLM's own interpolation loop
  where no exact fit exists or the tuning asks for the reference.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from microcompiler.ops.base import OpKernel, register, require, require_consistent, require_like_tflm
from microcompiler.ops.features import has_mve
from microcompiler.ops.fixedpoint import (
    clamp,
    fp_exp_on_negative_values,
    fp_logistic,
    requantize,
    rounding_divide_by_pot,
    sat_rounding_doubling_high_mul,
    wrap32,
)
from microcompiler.ops.lut import int8_table_from_integer, render_int8_table
from microcompiler.ops.lut16 import (
    SIGMOID_TABLE,
    piecewise_plan,
    piecewise_table,
    render_sigmoid_family_int16,
)
from microcompiler.ops.plan import LUT, REFERENCE, REFERENCE_FLOAT, KernelPlan, Variant
from microcompiler.ops.quant import RequantizeRangeError, c_float, q31_frexp, quantize_multiplier, tflite_round
from microcompiler.ops.requant_float import ORT_GRU, ORT_MLAS, ORT_SOFTMAX, render_ort_softmax

EXP_TABLE = Variant("exp-table")  # int8 SOFTMAX: exp of each input difference from a 256-entry table
FIXED_POINT = Variant("gemmlowp-fixed-point")  # int8 SOFTMAX: gemmlowp's fixed-point exp
# int8 SOFTMAX: gemmlowp's fixed-point exp once per element, kept in the scratch for the second pass
FIXED_POINT_CACHED = Variant("gemmlowp-exps-cached")
INT16_LUT = Variant("int16-lut")  # int16 SOFTMAX: TFLM's interpolated exp and reciprocal tables

F32 = np.float32

# Q5.26 scaled input differences for the int8 softmax exp() (TFLM's kScaledDiffIntegerBits).
SOFTMAX_DIFF_INTEGER_BITS = 5
# Q4.27 input of the int8 logistic (TFLM's kInputIntegerBits).
LOGISTIC_INT8_INTEGER_BITS = 4
INT16_LUT_SIZE = 513
# The int8 softmax takes its exponentials from a 1 KB table (256 int32) for tensors of at least as many
# elements as the table has bytes; smaller ones (a classifier's last layer) compute them, saving flash.
SOFTMAX_EXP_TABLE_MIN_ELEMENTS = 1024
# Below that, rows of at most this many elements keep their exponentials in the kernels' shared
# scratch (4 bytes each) between the row sum and the outputs: one exp per element instead of two.
SOFTMAX_EXP_CACHE_MAX_DEPTH = 64

# ---- compile-time arithmetic, mirroring TFLM's prepare step ------------------------------------


def calculate_input_radius(
    integer_bits: int, left_shift: int, total_signed_bits: int = 31, max_left_shift: int = 62
) -> int:
    """The largest |input| whose rescaled value cannot overflow (CalculateInputRadius, in double).
    A negative ``left_shift`` (an input scale below 2^-(31 - integer_bits + 1)) is a shift by a
    negative count in TFLM, and one past ``max_left_shift`` overflows (1LL << 63 and up; the int8
    TANH and LOGISTIC rescale the input by it too, so 30 there): both undefined in TFLM, refused as
    damaged scales."""
    if not 0 <= left_shift <= max_left_shift:
        raise RequantizeRangeError(
            f"the input scale is too {'small' if left_shift < 0 else 'large'} for TFLM's input rescaling "
            f"(a shift by {left_shift} bits, undefined in TFLM); the file's quantization scales are damaged"
        )
    radius = 1.0 * ((1 << integer_bits) - 1) * (1 << (total_signed_bits - integer_bits)) / (1 << left_shift)
    return int(math.floor(radius))


def softmax_int8_real(input_scale: float, beta: float) -> float:
    """beta * input scale in Q5.26 (PreprocessSoftmaxScaling): TFLM's QuantizeMultiplierGreaterThanOne
    aborts its prepare step unless it exceeds 1."""
    return min(float(F32(beta)) * float(F32(input_scale)) * (1 << (31 - SOFTMAX_DIFF_INTEGER_BITS)), (1 << 31) - 1.0)


def softmax_int8_params(input_scale: float, beta: float) -> tuple[int, int, int]:
    """(input_multiplier, input_left_shift, diff_min) of the int8-input softmax."""
    real = softmax_int8_real(input_scale, beta)
    multiplier, shift = quantize_multiplier(real, saturate=False)
    diff_min = -calculate_input_radius(SOFTMAX_DIFF_INTEGER_BITS, shift)
    return multiplier, shift, diff_min


def softmax_int8_exp_table(input_scale: float, beta: float) -> np.ndarray:
    """exp(beta * scale * (x - max)) in Q0.31 for each of the 256 differences max - x (entry d for
    x - max = -d), as TFLM's int8 softmax computes it (the difference in Q5.26, gemmlowp's
    exp_on_negative_values); 0 below diff_min, where TFLM skips the element: a 0 adds nothing to the
    row sum and gives the output's minimum, as the skipped element does."""
    multiplier, shift, diff_min = softmax_int8_params(input_scale, beta)
    table = np.zeros(256, dtype=np.int32)
    for d in range(256):
        if -d >= diff_min:
            scaled = sat_rounding_doubling_high_mul(wrap32(-d << shift), multiplier)
            table[d] = fp_exp_on_negative_values(scaled, SOFTMAX_DIFF_INTEGER_BITS)
    return table


def softmax_int16_params(input_scale: float, beta: float) -> tuple[int, int]:
    """(input_multiplier, input_shift): input differences in [-65535, 0] map onto [-10, 0]."""
    return quantize_multiplier(float(F32(input_scale)) * float(F32(beta)) / (10.0 / 65535.0), saturate=False)


def expf(x) -> np.float32:
    """The float32 exp the C library computes (rounded from the double-precision exp)."""
    return F32(math.exp(float(x)))


def _roundf(x: np.float32) -> np.float32:
    """std::round on a float: half away from zero, in float32."""
    return F32(tflite_round(float(x)))


def int16_lut(func, input_min: float, input_max: float, output_min: float, output_max: float) -> np.ndarray:
    """TFLM's float gen_lut for int16 -> int16 tables: 512 interpolation segments plus an end point.

    Each entry is the rounded sample with half the midpoint interpolation error folded in, so that
    linear interpolation between entries is most accurate in the middle of each segment. All
    arithmetic is float32, as in TFLM.
    """
    nb_steps = 512
    lo, hi = F32(input_min), F32(input_max)
    step = F32((hi - lo) / F32(nb_steps))
    half_step = F32(step / F32(2))
    scaling_inv = F32(F32(65536.0) / F32(F32(output_max) - F32(output_min)))
    table = np.zeros(nb_steps + 1, dtype=np.int16)
    for i in range(nb_steps):
        x = F32(lo + F32(F32(i) * step))
        val = func(x)
        val_mid = func(F32(x + half_step))
        val_next = func(F32(lo + F32(F32(i + 1) * step)))
        sample = _roundf(F32(val * scaling_inv))
        mid_interp = _roundf(F32(F32(F32(val_next * scaling_inv) + _roundf(F32(val * scaling_inv))) / F32(2)))
        mid = _roundf(F32(val_mid * scaling_inv))
        bias = _roundf(F32(F32(mid_interp - mid) / F32(2)))
        table[i] = int(min(max(float(F32(sample - bias)), -32768.0), 32767.0))
    table[nb_steps] = int(min(max(float(_roundf(F32(func(hi) * scaling_inv))), -32768.0), 32767.0))
    return table


def softmax_exp_lut() -> np.ndarray:
    """exp(x) for x in [-10, 0] (TFLM's exp_lut)."""
    return int16_lut(expf, -10.0, 0.0, -1.0, 1.0)


def softmax_reciprocal_lut() -> np.ndarray:
    """1 / (1 + x) for x in [0, 1] (TFLM's one_over_one_plus_x_lut)."""
    return int16_lut(lambda x: F32(F32(1.0) / F32(F32(1.0) + x)), 0.0, 1.0, -1.0, 1.0)


def logf(x) -> np.float32:
    return F32(math.log(float(x)))


def checked_log2(x: float) -> tuple[bool, int]:
    """TFLM's CheckedLog2 in float32: (x is a power of two within 1e-3 in log2, rounded log2)."""
    x_log2 = F32(logf(F32(x)) * F32(F32(1.0) / logf(F32(2.0))))
    rounded = _roundf(x_log2)
    return bool(abs(float(F32(x_log2 - rounded))) < float(F32(1e-3))), int(rounded)


def logistic_int8_params(input_scale: float) -> tuple[int, int, int]:
    """(input_multiplier, input_left_shift, input_range_radius) of the int8 logistic."""
    real = float(F32(input_scale)) * float(1 << (31 - LOGISTIC_INT8_INTEGER_BITS))
    multiplier, shift = q31_frexp(real)
    radius = calculate_input_radius(LOGISTIC_INT8_INTEGER_BITS, shift, 31, max_left_shift=30)
    return multiplier, shift, radius


def logistic_int8_table(input_scale: float, input_zero_point: int) -> np.ndarray:
    """TFLM's int8 logistic of each int8 input: the input minus its zero point rescaled to Q4.27,
    gemmlowp's fixed-point logistic (Q0.31), rounded to the output's 1/256 steps minus 128;
    saturated beyond the input radius. The output quantization is fixed (1/256, -128), as in TFLM."""
    return _logistic_int8_table(float(input_scale), int(input_zero_point)).copy()


@functools.lru_cache(maxsize=1024)  # an unrolled RNN asks for the same table once per step
def _logistic_int8_table(input_scale: float, input_zero_point: int) -> np.ndarray:
    multiplier, shift, radius = logistic_int8_params(input_scale)

    def logistic(x: int) -> int:
        v = x - input_zero_point
        if v <= -radius:
            return -128
        if v >= radius:
            return 127
        p = fp_logistic(requantize(v, multiplier, shift), LOGISTIC_INT8_INTEGER_BITS)
        return clamp(rounding_divide_by_pot(p, 23) - 128, -128, 127)

    return int8_table_from_integer(logistic)


def logistic_int16_params(input_scale: float) -> tuple[int, int]:
    """(input_multiplier, input_left_shift) of the int16 logistic, with TFLM's power-of-two case
    (multiplier 0 in TFLM) already turned into the multiplier 3 it is evaluated with."""
    is_pot, log2_rounded = checked_log2(input_scale)
    left_shift = (15 - 3) + log2_rounded
    if is_pot and left_shift == 0:
        return 3, 0
    return int16_input_multiplier(input_scale)


def int16_input_multiplier(input_scale: float) -> tuple[int, int]:
    """(multiplier, shift) putting an int16 input in units of 1/(3 * 4096): input_scale * 3 * 4096
    doubled until it passes 32767 / 2, as TFLM's LOGISTIC and TANH int16 prepare steps do."""
    multiplier = float(F32(input_scale)) * 4096.0 * 3.0
    shift = 0
    while multiplier <= 32767.0 / 2.0 and shift <= 30:
        shift += 1
        multiplier *= 2.0
    return int(multiplier), shift


# ---- kernels ------------------------------------------------------------------------------------


def _outer_and_depth(shape) -> tuple[int, int]:
    depth = int(shape[-1]) if len(shape) else 1
    size = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    return (size // depth if depth else 0), depth


def _cached(x) -> bool:
    """Whether the int8 softmax of x (computed exponentials) keeps a row's exponentials in the scratch."""
    return _outer_and_depth(x.shape)[1] <= SOFTMAX_EXP_CACHE_MAX_DEPTH


def _scale_zp(t) -> tuple[float, int]:
    return float(t.quant.scale[0]), int(t.quant.zero_point[0])


@register
class Softmax(OpKernel):
    kinds = ("SOFTMAX",)
    options = "beta"
    type_notes = (
        "int8 -> int8 (output 1/256, -128), int8 -> int16 (output 1/65536, -32768), int16 -> int16 (output 1/32768, 0)"
    )
    tflm_refusals = (
        "int8 input: beta * input scale * 2^26 at most 1 (beta * scale below 1.49e-8): "
        "QuantizeMultiplierGreaterThanOne aborts",
        "int16 input with a zero point other than 0",
    )

    def check(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        require(len(op.inputs) == 1 and len(op.outputs) == 1, op, "expects one input and one output")
        require(len(x.shape) >= 1, op, "input must have at least one dimension")
        require(tuple(x.shape) == tuple(y.shape), op, "input and output shapes differ")
        combo = (x.dtype, y.dtype)
        require(
            combo in {("float32", "float32"), ("int8", "int8"), ("int8", "int16"), ("int16", "int16")},
            op,
            f"type combination input/output {combo} is not supported (float32, int8->int8, int8->int16, int16->int16)",
        )
        if x.dtype == "float32":
            return
        require(
            x.quant is not None and y.quant is not None and not x.quant.per_channel and not y.quant.per_channel,
            op,
            "quantized softmax needs per-tensor quantization",
        )
        if op.options.get(ORT_SOFTMAX):  # ONNX Runtime's QLinearSoftmax (ops/requant_float.py): any scales
            require(combo == ("int8", "int8"), op, "ONNX Runtime's QLinearSoftmax is int8 -> int8")
            return
        beta = float(F32(op.options.get("beta", 1.0)))
        require(math.isfinite(beta), op, f"beta {beta} is not a finite number; the file is damaged")
        scale, zp = _scale_zp(y)
        if x.dtype == "int8":  # TFLM's QuantizeMultiplierGreaterThanOne: beta * scale * 2^26 must exceed 1
            real = softmax_int8_real(_scale_zp(x)[0], op.options.get("beta", 1.0))
            require_like_tflm(
                real > 1.0,
                op,
                f"beta * input scale * 2^26 = {real:.3g} is not above 1: too small for the int8 softmax "
                "(TFLM's QuantizeMultiplierGreaterThanOne check fails)",
            )
        if combo == ("int8", "int8"):
            require(
                zp == -128 and F32(scale) == F32(1.0 / 256),
                op,
                f"int8 output must have scale 1/256 and zero point -128 (got {scale}, {zp})",
            )
        elif combo == ("int8", "int16"):
            require(
                zp == -32768 and abs(scale - 1.0 / 65536) <= 0.001 / 65536,
                op,
                f"int16 output of an int8 softmax must have scale 1/65536 and zero point -32768 (got {scale}, {zp})",
            )
        else:
            require(
                zp == 0 and abs(scale - 1.0 / 32768) <= 0.001 / 32768,
                op,
                f"int16 output must have scale 1/32768 and zero point 0 (got {scale}, {zp})",
            )
            in_scale, in_zp = _scale_zp(x)
            require_consistent(
                in_zp == 0, op, f"the int16 input has zero point {in_zp}; TFLM requires 0 (its prepare step refuses it)"
            )
            _, shift = softmax_int16_params(in_scale, op.options.get("beta", 1.0))
            require(shift <= 30, op, "input scale * beta is too large for the int16 softmax")

    def macs(self, op, graph):
        return graph.tensors[op.inputs[0]].size

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None):
        x = graph.tensors[op.inputs[0]]
        if x.dtype == "int8" and op.options.get(ORT_SOFTMAX):
            return KernelPlan(REFERENCE)
        if x.dtype == "int8":
            if x.size >= SOFTMAX_EXP_TABLE_MIN_ELEMENTS:
                return KernelPlan(EXP_TABLE)
            return KernelPlan(FIXED_POINT_CACHED if _cached(x) else FIXED_POINT)
        return KernelPlan({"float32": REFERENCE_FLOAT, "int16": INT16_LUT}[x.dtype])

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        outer, depth = _outer_and_depth(x.shape)
        beta = float(op.options.get("beta", 1.0))
        values = dict(outer=outer, depth=depth, input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]))
        if x.dtype == "float32" and op.options.get(ORT_SOFTMAX) and beta == 1.0:  # ONNX Runtime's (kernel_ort.h)
            return ctx.render("softmax_ort_float.c.j2", **values)
        if x.dtype == "float32":
            return ctx.render("softmax_float.c.j2", beta=c_float(beta), **values)
        if op.options.get(ORT_SOFTMAX):
            return render_ort_softmax(op, ctx, x, y, outer, depth)
        in_scale = _scale_zp(x)[0]
        if x.dtype == "int8":
            out_bits = 8 if y.dtype == "int8" else 16
            if x.size >= SOFTMAX_EXP_TABLE_MIN_ELEMENTS:
                ctx.plan = KernelPlan(EXP_TABLE, scratch_bytes=0)
                exp_table = ctx.const(
                    "exp_table",
                    softmax_int8_exp_table(in_scale, beta),
                    "int32_t",
                    f"SOFTMAX operator {op.index}: exp(beta * input_scale * -d) in Q0.31 for d = max - x",
                )
                return ctx.render(
                    "softmax_int8_table.c.j2",
                    exp_table=exp_table,
                    out_type="int8_t" if out_bits == 8 else "int16_t",
                    out_min=-(1 << (out_bits - 1)),
                    out_max=(1 << (out_bits - 1)) - 1,
                    out_bits=out_bits,
                    guard_exponent=out_bits == 8 and depth >= 512,
                    **values,
                )
            multiplier, shift, diff_min = softmax_int8_params(in_scale, beta)
            cache = None
            if _cached(x) and not ctx.reference_only:
                ctx.plan = KernelPlan(FIXED_POINT_CACHED, scratch_bytes=4 * depth)
                cache = ctx.scratch(4 * depth)
            else:  # TFLM's loop as it is: each exponential computed twice
                ctx.plan = KernelPlan(FIXED_POINT, scratch_bytes=0)
            return ctx.render(
                "softmax_int8.c.j2",
                cache=cache,
                multiplier=multiplier,
                shift=shift,
                diff_min=diff_min,
                out_type="int8_t" if out_bits == 8 else "int16_t",
                out_min=-(1 << (out_bits - 1)),
                out_max=(1 << (out_bits - 1)) - 1,
                out_bits=out_bits,
                guard_exponent=out_bits == 8 and depth >= 512,
                **values,
            )
        multiplier, shift = softmax_int16_params(in_scale, beta)
        exp_lut = ctx.const("exp_lut", softmax_exp_lut())
        recip_lut = ctx.const("one_over_one_plus_x_lut", softmax_reciprocal_lut())
        return ctx.render(
            "softmax_int16.c.j2", multiplier=multiplier, shift=shift, exp_lut=exp_lut, recip_lut=recip_lut, **values
        )


@register
class Logistic(OpKernel):
    kinds = ("LOGISTIC",)
    type_notes = "int8 output zero point -128; int16 zero points 0, output scale 2^-15"
    fast = {"mve": "int16 (mve-piecewise-table: the fitted lines 4 elements per step, gathers from the two tables)"}

    def check(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        require(len(op.inputs) == 1 and len(op.outputs) == 1, op, "expects one input and one output")
        require(x.size == y.size, op, "input and output sizes differ")
        require(
            x.dtype == y.dtype and x.dtype in ("float32", "int8", "int16"),
            op,
            f"type combination input/output {(x.dtype, y.dtype)} is not supported (float32, int8, int16)",
        )
        if x.dtype == "float32":
            return
        require(
            x.quant is not None and y.quant is not None and not x.quant.per_channel and not y.quant.per_channel,
            op,
            "quantized logistic needs per-tensor quantization",
        )
        in_scale, in_zp = _scale_zp(x)
        out_scale, out_zp = _scale_zp(y)
        if x.dtype == "int8":
            # TFLM checks only the output zero point; the kernel always produces q = 256 * p - 128.
            require(out_zp == -128, op, f"int8 output zero point must be -128 (got {out_zp})")
            require(in_scale > 0, op, "input scale must be positive")
            return
        require(in_zp == 0 and out_zp == 0, op, "int16 logistic needs zero points 0")
        is_pot, log2 = checked_log2(out_scale)
        require(is_pot and log2 == -15, op, f"int16 output scale must be 2^-15 (got {out_scale})")
        multiplier, shift = logistic_int16_params(in_scale)
        # TFLM only DCHECKs multiplier <= 32767; what it runs is exact while input * multiplier fits int32.
        require(
            multiplier < 1 << 16 and shift <= 30,
            op,
            f"int16 input scale {in_scale} is out of the range the int16 logistic handles",
        )

    def macs(self, op, graph):
        return graph.tensors[op.inputs[0]].size

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None):
        x = graph.tensors[op.inputs[0]]
        if x.dtype == "int16" and piecewise_table("logistic", *logistic_int16_params(_scale_zp(x)[0])):
            return piecewise_plan(has_mve(features))
        return KernelPlan({"float32": REFERENCE_FLOAT, "int8": LUT, "int16": SIGMOID_TABLE}[x.dtype])

    def int8_table(self, op, graph):
        x = graph.tensors[op.inputs[0]]
        return logistic_int8_table(*_scale_zp(x)) if x.dtype == "int8" else None

    def inplace_inputs(self, op, graph):
        return (0,)

    def emit(self, op, graph, ctx):
        x = ctx.tensor(op.inputs[0])
        values = dict(size=x.size, input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]))
        if x.dtype == "float32" and op.options.get(ORT_GRU):  # ONNX Runtime's GRU reset gate (kernel_ort.h)
            return ctx.render("activation_float.c.j2", expr="mc_ort_gru_logistic(x)", **values)
        if x.dtype == "float32" and op.options.get(ORT_MLAS):  # ONNX Runtime's Sigmoid (kernel_ort.h)
            return ctx.render("activation_float.c.j2", expr="mc_ort_logistic(x)", **values)
        if x.dtype == "float32":
            return ctx.render("logistic_float.c.j2", **values)
        in_scale, in_zp = _scale_zp(x)
        if x.dtype == "int8":
            return render_int8_table(ctx, self.int8_table(op, graph), what="logistic", **values)
        multiplier, shift = logistic_int16_params(in_scale)
        return render_sigmoid_family_int16(ctx, "logistic", multiplier, shift, "logistic_int16.c.j2", **values)
