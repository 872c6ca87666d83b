"""LOG_SOFTMAX over the last dimension: float32 and int8, bit-exact with TFLite Micro's reference
kernels.

* float32: ``x - max - log(sum(exp(x - max)))`` per row.
* int8: the output quantization is fixed by TFLM (scale 16/256, zero point 127). Differences to the
  row maximum are rescaled to Q5.26 (beta 1), their fixed-point exponentials summed in Q12.19, the
  log of the sum taken in fixed point (``mc_fp_log_x_for_x_ge_1``, Q5.26) and subtracted; the
  multipliers, the reverse scaling used to drop inputs whose result is below the output range, and
  the cut-off ``diff_min`` are computed here as TFLM's prepare step does.
"""

from __future__ import annotations

from microcompiler.ops.base import OpKernel, register, require, require_like_tflm
from microcompiler.ops.plan import REFERENCE_FLOAT, KernelPlan
from microcompiler.ops.quant import quantize_multiplier
from microcompiler.ops.softmax_logistic import F32, FIXED_POINT, _outer_and_depth, calculate_input_radius

SCALED_DIFF_INTEGER_BITS = 5  # Q5.26 input differences
ACCUMULATION_INTEGER_BITS = 12  # Q12.19 sum of exponentials
OUTPUT_INTEGER_BITS = 4
OUTPUT_SCALE = F32(16.0 / 256)
OUTPUT_ZERO_POINT = 127


def log_softmax_int8_real(input_scale: float) -> float:
    """The input scale in Q5.26 (PreprocessLogSoftmaxScalingExp, beta 1): TFLM's
    QuantizeMultiplierGreaterThanOne aborts its prepare step unless it exceeds 1."""
    return min(float(F32(input_scale)) * (1 << (31 - SCALED_DIFF_INTEGER_BITS)), (1 << 31) - 1.0)


def log_softmax_int8_params(input_scale: float) -> dict:
    """TFLM's PreprocessLogSoftmaxScalingExp (beta 1) and CalculateInputRadius, in double."""
    real = log_softmax_int8_real(input_scale)
    multiplier, shift = quantize_multiplier(real, saturate=False)
    divisor, divisor_shift = quantize_multiplier((1 << (31 - shift)) / float(multiplier), saturate=False)
    return dict(
        multiplier=multiplier,
        shift=shift,
        reverse_multiplier=divisor,
        reverse_shift=divisor_shift,
        diff_min=-calculate_input_radius(SCALED_DIFF_INTEGER_BITS, shift),
    )


@register
class LogSoftmax(OpKernel):
    kinds = ("LOG_SOFTMAX",)
    types = ("int8", "float32")
    type_notes = "int8 output scale 16/256, zero point 127"
    tflm_refusals = (
        "int8 input scale * 2^26 at most 1 (scale below 1.49e-8): QuantizeMultiplierGreaterThanOne aborts",
    )

    def check(self, op, graph):
        require(
            len(op.inputs) == 1 and op.inputs[0] >= 0 and len(op.outputs) == 1, op, "expects one input and one output"
        )
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        require(
            x.dtype in ("int8", "float32") and y.dtype == x.dtype,
            op,
            f"type combination input/output {(x.dtype, y.dtype)} is not supported (float32, int8)",
        )
        require(len(x.shape) >= 1, op, "input must have at least one dimension")
        require(
            tuple(x.shape) == tuple(y.shape), op, f"input shape {list(x.shape)} and output shape {list(y.shape)} differ"
        )
        if x.dtype == "int8":
            require(
                x.quant is not None and y.quant is not None, op, "int8 input and output need quantization parameters"
            )
            scale, zp = y.quant.single()
            require(
                F32(scale) == OUTPUT_SCALE and zp == OUTPUT_ZERO_POINT,
                op,
                f"int8 output must have scale 16/256 and zero point 127 (got {scale}, {zp})",
            )
            require(x.quant.scale[0] > 0, op, "input scale must be positive")
            real = log_softmax_int8_real(float(x.quant.scale[0]))
            require_like_tflm(
                real > 1.0,
                op,
                f"input scale * 2^26 = {real:.3g} is not above 1 (TFLM's QuantizeMultiplierGreaterThanOne check fails)",
            )

    def macs(self, op, graph):
        return graph.tensors[op.inputs[0]].size

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None):
        return KernelPlan(FIXED_POINT if graph.tensors[op.inputs[0]].dtype == "int8" else REFERENCE_FLOAT)

    def emit(self, op, graph, ctx):
        x = ctx.tensor(op.inputs[0])
        outer, depth = _outer_and_depth(x.shape)
        values = dict(outer=outer, depth=depth, input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]))
        if x.dtype == "float32":
            return ctx.render("log_softmax_float.c.j2", **values)
        return ctx.render(
            "log_softmax_int8.c.j2",
            scaled_diff_bits=SCALED_DIFF_INTEGER_BITS,
            accumulation_bits=ACCUMULATION_INTEGER_BITS,
            output_shift=31 - SCALED_DIFF_INTEGER_BITS - OUTPUT_INTEGER_BITS,
            output_zero_point=OUTPUT_ZERO_POINT,
            **log_softmax_int8_params(x.quant.scale[0]),
            **values,
        )
