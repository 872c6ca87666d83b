"""TFLite Micro's integer arithmetic (gemmlowp's fixed point, TFLite's requantization and 16-bit
fixed point) in Python, bit for bit, for computing at compile time what TFLM computes at run time:
the int8 -> int8 tables of ops/lut.py (LOGISTIC, TANH, HARD_SWISH, MUL of a table ...) and the
constant channels of the zero-channels pass.

Every function takes and returns Python ints holding the C type's value (int32 unless the name
says s16) and does what the C function of the same name with the ``mc_`` prefix in
crt/include/microcompiler/kernel_math.h and kernel_fixedpoint.h does for the run-time kernels (the
int8 logistic, tanh and 16-bit hard-swish exist only here): the same rounding, saturation,
truncating division and two's complement wrap-around. Tests hold each table against the TFLM
interpreter over all 256 inputs.
"""

from __future__ import annotations

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT16_MIN, INT16_MAX = -(2**15), 2**15 - 1


def wrap32(x: int) -> int:
    """(int32_t) of an integer: two's complement wrap-around."""
    return (x + 2**31) % 2**32 - 2**31


def wrap16(x: int) -> int:
    return (x + 2**15) % 2**16 - 2**15


def clamp(x: int, lo: int, hi: int) -> int:
    return min(max(x, lo), hi)


def _div_trunc(n: int, d: int) -> int:
    """C's integer division (truncation toward zero), d > 0."""
    return n // d if n >= 0 else -((-n) // d)


def sat_rounding_doubling_high_mul(a: int, b: int) -> int:
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    return _div_trunc(ab + ((1 << 30) if ab >= 0 else 1 - (1 << 30)), 1 << 31)


def rounding_divide_by_pot(x: int, exponent: int) -> int:
    mask = wrap32((1 << exponent) - 1)
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def requantize(x: int, multiplier: int, shift: int) -> int:
    """TFLM's MultiplyByQuantizedMultiplier: x * multiplier * 2^shift (multiplier a Q31 fraction)."""
    shifted = wrap32(x << max(shift, 0))
    return rounding_divide_by_pot(sat_rounding_doubling_high_mul(shifted, multiplier), max(-shift, 0))


def saturating_left_shift(x: int, exponent: int) -> int:
    return clamp(x * (1 << exponent), INT32_MIN, INT32_MAX)


def fp_rescale(x: int, from_bits: int, to_bits: int) -> int:
    return (
        saturating_left_shift(x, from_bits - to_bits)
        if from_bits >= to_bits
        else rounding_divide_by_pot(x, to_bits - from_bits)
    )


def fp_rounding_half_sum(a: int, b: int) -> int:
    total = a + b
    return _div_trunc(total + (1 if total >= 0 else -1), 2)


def _exp_on_interval_neg_quarter_to_0(a: int) -> int:
    exp_minus_one_eighth, one_third = 1895147668, 715827883
    mul = sat_rounding_doubling_high_mul
    x = wrap32(a + (1 << 28))
    x2 = mul(x, x)
    x3 = mul(x2, x)
    x4 = mul(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(wrap32(mul(wrap32(x4_over_4 + x3), one_third) + x2), 1)
    return wrap32(exp_minus_one_eighth + mul(exp_minus_one_eighth, wrap32(x + poly)))


_EXP_FACTORS = (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)


def fp_exp_on_negative_values(a: int, integer_bits: int) -> int:
    fractional_bits = 31 - integer_bits
    one_quarter = 1 << (fractional_bits - 2)
    a_mod_quarter_minus_quarter = wrap32((a & (one_quarter - 1)) - one_quarter)
    remainder = wrap32(a_mod_quarter_minus_quarter - a)
    result = _exp_on_interval_neg_quarter_to_0(fp_rescale(a_mod_quarter_minus_quarter, integer_bits, 0))
    for k, factor in enumerate(_EXP_FACTORS):
        exponent = k - 2
        if integer_bits > exponent and remainder & wrap32(1 << (fractional_bits + exponent)):
            result = sat_rounding_doubling_high_mul(result, factor)
    return INT32_MAX if a == 0 else result


def _two_over_one_plus_x_for_x_in_0_1(a: int) -> int:
    mul = sat_rounding_doubling_high_mul
    half_denominator = fp_rounding_half_sum(a, INT32_MAX)
    one_q2 = 1 << 29
    x = wrap32(1515870810 + mul(half_denominator, -1010580540))
    for _ in range(3):
        one_minus = wrap32(one_q2 - mul(half_denominator, x))
        x = wrap32(x + fp_rescale(mul(x, one_minus), 4, 2))
    return x


def fp_one_over_one_plus_x_for_x_in_0_1(a: int) -> int:
    return fp_rescale(_two_over_one_plus_x_for_x_in_0_1(a), 1, 0)


def fp_one_minus_x_over_one_plus_x_for_x_in_0_1(a: int) -> int:
    return fp_rescale(wrap32(_two_over_one_plus_x_for_x_in_0_1(a) - (1 << 29)), 2, 0)


def fp_logistic(a: int, integer_bits: int) -> int:
    positive = fp_one_over_one_plus_x_for_x_in_0_1(fp_exp_on_negative_values(-abs(a), integer_bits))
    if a == 0:
        return 1 << 30
    return positive if a > 0 else wrap32(INT32_MAX - positive)


def fp_tanh(a: int, integer_bits: int) -> int:
    t = fp_one_minus_x_over_one_plus_x_for_x_in_0_1(fp_exp_on_negative_values(-abs(a), integer_bits + 1))
    if a == 0:
        return 0
    return -t if a < 0 else t


# ---- 16-bit fixed point (the int8 HARD_SWISH) -----------------------------------------------------


def s16_rounding_doubling_high_mul(a: int, b: int) -> int:
    if a == b == INT16_MIN:
        return INT16_MAX
    ab = a * b
    return wrap16(_div_trunc(ab + ((1 << 14) if ab >= 0 else 1 - (1 << 14)), 1 << 15))


def s16_doubling_high_mul(a: int, b: int) -> int:
    if a == b == INT16_MIN:
        return INT16_MAX
    return wrap16(_div_trunc(a * b, 1 << 15))


def s16_saturating_left_shift(x: int, exponent: int) -> int:
    return clamp(x * (1 << exponent), INT16_MIN, INT16_MAX)


def s16_rounding_divide_by_pot(x: int, exponent: int) -> int:
    mask = wrap16((1 << exponent) - 1)
    remainder = wrap16(x & mask)
    threshold = wrap16((mask >> 1) + (1 if x < 0 else 0))
    return wrap16((x >> min(exponent, 15)) + (1 if remainder > threshold else 0))
