/* gemmlowp-style fixed-point math used by the quantized SOFTMAX and LOG_SOFTMAX kernels (the int8
 * LOGISTIC and TANH are compile-time tables: ops/fixedpoint.py mirrors these functions in Python).
 *
 * A value "Qm" is an int32_t holding x * 2^(31 - m): m integer bits, 31 - m fractional bits
 * (Q0 covers [-1, 1)). The functions reproduce, bit for bit, the integer arithmetic of the
 * fixed-point exp / reciprocal that TFLite Micro's reference kernels evaluate, and the
 * interpolating int16 table lookup of its int16 softmax. Everything is static inline and the
 * kernels pass compile-time constants for the format parameters, so they fold away.
 */
#ifndef MICROCOMPILER_KERNEL_FIXEDPOINT_H_
#define MICROCOMPILER_KERNEL_FIXEDPOINT_H_

#include <stdint.h>

#include "microcompiler/kernel_math.h"

/* Number of leading zero bits of x (32 for 0). */
static inline int mc_count_leading_zeros(uint32_t x) {
#if defined(__GNUC__)
  return x ? __builtin_clz(x) : 32;
#else
  int n = 0;
  if (x == 0) return 32;
  while (!(x & 0x80000000u)) {
    x <<= 1;
    ++n;
  }
  return n;
#endif
}

/* Wrapping int32 addition and subtraction (defined behaviour where the reference's plain int
 * arithmetic would overflow; identical results everywhere else). */
static inline int32_t mc_wrap_add(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }
static inline int32_t mc_wrap_sub(int32_t a, int32_t b) { return (int32_t)((uint32_t)a - (uint32_t)b); }

/* Fixed-point product: Qa * Qb -> Q(a+b), rounded (a saturating rounding doubling high multiply). */
static inline int32_t mc_fp_mul(int32_t a, int32_t b) { return mc_sat_rounding_doubling_high_mul(a, b); }

/* (a + b) / 2 rounded half away from zero, without overflow. */
static inline int32_t mc_fp_rounding_half_sum(int32_t a, int32_t b) {
  const int64_t sum = (int64_t)a + (int64_t)b;
  return (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
}

/* Change the number of integer bits from `from` to `to`: a saturating left shift when the format
 * gains fractional bits, a rounding right shift when it loses them. */
static inline int32_t mc_fp_rescale(int32_t x, int from, int to) {
  return from >= to ? mc_saturating_left_shift(x, from - to) : mc_rounding_divide_by_pot(x, to - from);
}

/* exp(a) for a in [-1/4, 0), Q0 -> Q0: fourth-order Taylor expansion around -1/8. */
static inline int32_t mc_fp_exp_on_interval_neg_quarter_to_0(int32_t a) {
  const int32_t exp_minus_one_eighth = 1895147668; /* exp(-1/8) in Q0 */
  const int32_t one_third = 715827883;             /* 1/3 in Q0 */
  const int32_t x = mc_wrap_add(a, (int32_t)1 << 28); /* x = a + 1/8 */
  const int32_t x2 = mc_fp_mul(x, x);
  const int32_t x3 = mc_fp_mul(x2, x);
  const int32_t x4 = mc_fp_mul(x2, x2);
  const int32_t x4_over_4 = mc_rounding_divide_by_pot(x4, 2);
  /* x^4/24 + x^3/6 + x^2/2 */
  const int32_t poly = mc_rounding_divide_by_pot(
      mc_wrap_add(mc_fp_mul(mc_wrap_add(x4_over_4, x3), one_third), x2), 1);
  return mc_wrap_add(exp_minus_one_eighth, mc_fp_mul(exp_minus_one_eighth, mc_wrap_add(x, poly)));
}

/* exp(a) for a <= 0, a in Q(integer_bits) with integer_bits <= 5, result in Q0.
 * a is split into a remainder in [-1/4, 0) and multiples of 1/4, 1/2, 1, 2, 4, 8, 16 whose
 * exponentials are constant factors (a barrel shifter over the bits of -a). */
static inline int32_t mc_fp_exp_on_negative_values(int32_t a, int integer_bits) {
  static const int32_t kFactors[7] = {
      1672461947, /* exp(-1/4) */
      1302514674, /* exp(-1/2) */
      790015084,  /* exp(-1) */
      290630308,  /* exp(-2) */
      39332535,   /* exp(-4) */
      720401,     /* exp(-8) */
      242         /* exp(-16) */
  };
  const int fractional_bits = 31 - integer_bits;
  const int32_t one_quarter = (int32_t)1 << (fractional_bits - 2);
  const int32_t a_mod_quarter_minus_quarter = mc_wrap_sub(a & (one_quarter - 1), one_quarter);
  const int32_t remainder = mc_wrap_sub(a_mod_quarter_minus_quarter, a);
  int32_t result = mc_fp_exp_on_interval_neg_quarter_to_0(
      mc_fp_rescale(a_mod_quarter_minus_quarter, integer_bits, 0));
  int k;
  for (k = 0; k < 7; ++k) {
    const int exponent = k - 2; /* the factor is exp(-2^exponent) */
    if (integer_bits > exponent && (remainder & ((int32_t)1 << (fractional_bits + exponent)))) {
      result = mc_fp_mul(result, kFactors[k]);
    }
  }
  return a == 0 ? INT32_MAX : result;
}

/* 2 / (1 + a) for a in [0, 1), Q0 -> Q2: gemmlowp's Newton-Raphson division, three steps from
 * 48/17 - 32/17 d with d = (1 + a) / 2. */
static inline int32_t mc_fp_two_over_one_plus_x_for_x_in_0_1(int32_t a) {
  const int32_t half_denominator = mc_fp_rounding_half_sum(a, INT32_MAX); /* Q0 */
  const int32_t c_48_over_17 = 1515870810;      /* 48/17 in Q2 */
  const int32_t c_neg_32_over_17 = -1010580540; /* -32/17 in Q2 */
  const int32_t one_q2 = (int32_t)1 << 29;
  int32_t x = mc_wrap_add(c_48_over_17, mc_fp_mul(half_denominator, c_neg_32_over_17)); /* Q2 */
  int i;
  for (i = 0; i < 3; ++i) {
    const int32_t half_denominator_times_x = mc_fp_mul(half_denominator, x);      /* Q2 */
    const int32_t one_minus = mc_wrap_sub(one_q2, half_denominator_times_x);      /* Q2 */
    x = mc_wrap_add(x, mc_fp_rescale(mc_fp_mul(x, one_minus), 4, 2));             /* Q4 -> Q2 */
  }
  return x;
}

/* 1 / (1 + a) for a in [0, 1), Q0 -> Q0: three Newton-Raphson steps on the half denominator. */
static inline int32_t mc_fp_one_over_one_plus_x_for_x_in_0_1(int32_t a) {
  /* x / 2 reinterpreted as Q1, then rescaled to Q0. */
  return mc_fp_rescale(mc_fp_two_over_one_plus_x_for_x_in_0_1(a), 1, 0);
}

/* 1 / x for a positive x in Q(integer_bits), as a Q0 fraction in [0.5, 1) and the number of bits
 * the true reciprocal is above it: 1/x = result * 2^-(*num_bits_over_unit) */
static inline int32_t mc_fp_reciprocal(int32_t x, int integer_bits, int* num_bits_over_unit) {
  const int headroom_plus_one = mc_count_leading_zeros((uint32_t)x);
  const int32_t shifted_minus_one =
      (int32_t)(((uint32_t)x << headroom_plus_one) - ((uint32_t)1 << 31));
  *num_bits_over_unit = integer_bits - headroom_plus_one;
  return mc_fp_one_over_one_plus_x_for_x_in_0_1(shifted_minus_one);
}

/* Interpolating lookup in a 513-entry int16 table over the int16 range: the top 9 bits of value
 * select a segment, the low 7 bits interpolate inside it. */
static inline int16_t mc_lut_lookup_int16(int16_t value, const int16_t* lut) {
  const int index = 256 + (value >> 7);
  const int offset = value & 0x7f;
  const int16_t base = lut[index];
  const int16_t slope = (int16_t)(lut[index + 1] - lut[index]);
  const int delta = (slope * offset + 64) >> 7;
  return (int16_t)(base + delta);
}

#endif /* MICROCOMPILER_KERNEL_FIXEDPOINT_H_ */
