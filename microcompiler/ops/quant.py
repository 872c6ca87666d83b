"""Compile-time quantization arithmetic, matching TFLite Micro's kernel preparation step.

These run in Python at compile time; their results become constants in the generated C.
"""

from __future__ import annotations

import math

import numpy as np

from microcompiler.errors import ModelFormatError
from microcompiler.ir import Tensor

INT_RANGES = {"int8": (-128, 127), "int16": (-32768, 32767), "int32": (-(2**31), 2**31 - 1), "uint8": (0, 255)}
FLOAT_MAX = float(np.finfo(np.float32).max)


def tflite_round(x: float) -> float:
    """Round half away from zero (std::round)."""
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def q31_frexp(real: float) -> tuple[int, int]:
    """(round(fraction * 2^31), exponent) of ``real`` = fraction * 2^exponent, fraction in [0.5, 1):
    what TFLM's LOGISTIC and TANH prepare steps compute inline (the fraction may round up to 2^31)."""
    fraction, shift = math.frexp(real)
    return int(tflite_round(fraction * (1 << 31))), shift


# A requantization scale (e.g. input scale * weight scale / output scale) from 2^30 up has no int32
# multiplier: TFLM's reference shifts the accumulator left by 31 or more bits, a signed overflow
# (undefined behaviour; the host at -O2, the boards and TFLM may each give another answer). Kernels
# whose requantization would saturate refuse such scales.
MAX_REQUANTIZE_SCALE = 2.0**30


class RequantizeRangeError(ModelFormatError):
    """A requantization scale no int32 multiplier holds (see MAX_REQUANTIZE_SCALE): TFLM saturates
    the multiplier and then overflows int32, so no reference confirms any answer. Raised from the
    compile-time arithmetic; ``operator_context`` (ops/base.py) names the operator."""


def quantize_multiplier(real: float, saturate: bool = True) -> tuple[int, int]:
    """A real multiplier as (Q31 fraction in [2^30, 2^31), power-of-two exponent): TFLM's
    QuantizeMultiplier. ``saturate``: exponents above 30 become the largest int32 multiplier, as the
    reference requantization expects; without it (the softmax, PRELU, LEAKY_RELU, HARD_SWISH prepare
    steps) the exponent may reach 31."""
    if real == 0.0:
        return 0, 0
    q, shift = q31_frexp(real)
    if q == (1 << 31):
        q //= 2
        shift += 1
    if shift < -31:
        shift, q = 0, 0
    if saturate and shift > 30:  # TFLM saturates the multiplier, then overflows int32 shifting by 30
        raise RequantizeRangeError(
            f"a requantization scale of {real:.3g} is beyond any int32 multiplier (2^30): TFLM would "
            "overflow int32; the file's quantization scales are damaged"
        )
    return q, shift


def quantize_multipliers(reals) -> tuple[np.ndarray, np.ndarray]:
    pairs = [quantize_multiplier(float(r)) for r in reals]
    return (np.array([p[0] for p in pairs], dtype=np.int32), np.array([p[1] for p in pairs], dtype=np.int32))


def fully_connected_multipliers(x: Tensor, w: Tensor, y: Tensor) -> tuple[np.ndarray, np.ndarray]:
    """FULLY_CONNECTED's (multiplier, shift): one per output channel for per-channel weights, else one pair."""
    if w.quant.per_channel:
        return quantize_multipliers(
            float(np.float32(x.quant.scale[0])) * float(np.float32(s)) / float(np.float32(y.quant.scale[0]))
            for s in w.quant.scale
        )
    product = float(np.float32(x.quant.scale[0]) * np.float32(w.quant.scale[0]))
    q, shift = quantize_multiplier(product / float(np.float32(y.quant.scale[0])))
    return np.array([q], np.int32), np.array([shift], np.int32)


def mul_multiplier(a: Tensor, b: Tensor, y: Tensor) -> tuple[int, int]:
    """int8/int16 MUL's (multiplier, shift), as TFLM's mul_common.cc: the product of the input scales
    over the output scale, in double."""
    real = (
        float(np.float32(a.quant.scale[0])) * float(np.float32(b.quant.scale[0])) / float(np.float32(y.quant.scale[0]))
    )
    return quantize_multiplier(real)


def conv_multipliers(input_t: Tensor, weight_t: Tensor, output_t: Tensor, channels: int):
    """Per-output-channel requantization (q, shift) of conv/depthwise/FC, as TFLM computes them:
    input_scale * filter_scale / output_scale in double precision."""
    in_scale = float(np.float32(input_t.quant.scale[0]))
    out_scale = float(np.float32(output_t.quant.scale[0]))
    scales = weight_t.quant.scale
    if len(scales) == 1:
        scales = scales * channels
    return quantize_multipliers([in_scale * float(np.float32(s)) / out_scale for s in scales])


def activation_range(activation: str, t: Tensor) -> tuple[int, int]:
    """Clamp bounds of a fused activation in the quantized domain of tensor t."""
    lo, hi = INT_RANGES[t.dtype]
    scale, zp = t.quant.single()
    scale32 = np.float32(scale)

    def q(f: float) -> int:
        return zp + int(tflite_round(float(np.float32(f) / scale32)))

    if activation == "NONE":
        return lo, hi
    if activation == "RELU":
        return max(lo, q(0.0)), hi
    if activation == "RELU6":
        return max(lo, q(0.0)), min(hi, q(6.0))
    if activation == "RELU_N1_TO_1":
        return max(lo, q(-1.0)), min(hi, q(1.0))
    raise ValueError(activation)


def float_activation_range(activation: str) -> tuple[float, float]:
    return {
        "NONE": (-FLOAT_MAX, FLOAT_MAX),
        "RELU": (0.0, FLOAT_MAX),
        "RELU6": (0.0, 6.0),
        "RELU_N1_TO_1": (-1.0, 1.0),
    }[activation]


def c_float(x: float) -> str:
    """A float32 constant as a C expression that round-trips exactly.

    Finite values are readable literals; NaN and the infinities have no C99 literal, so they are
    written by bit pattern (``mc_f32_from_bits`` in kernel_math.h), payload and sign included.
    """
    x32 = np.float32(x)
    if not np.isfinite(x32):
        return f"mc_f32_from_bits(0x{float32_bits(x32):08x}u)"
    x = float(x32)
    if x == FLOAT_MAX:
        return "FLT_MAX"
    if x == -FLOAT_MAX:
        return "-FLT_MAX"
    return repr(x) + "f" if ("." in repr(x) or "e" in repr(x)) else repr(x) + ".0f"


def float32_bits(x) -> int:
    """The IEEE-754 bit pattern of a float32 as an unsigned integer."""
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])
