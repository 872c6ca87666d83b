/* Helpers of the elementwise unary kernels (ROUND, quantized RSQRT, CAST from float).
 *
 * They reproduce TFLite Micro's results without depending on the C library's rounding mode or on
 * what a processor does with an out-of-range float-to-int conversion (undefined in C).
 */
#ifndef MICROCOMPILER_KERNEL_ELEMENTWISE_H_
#define MICROCOMPILER_KERNEL_ELEMENTWISE_H_

#include <math.h>
#include <stdint.h>

#include "microcompiler/kernel_fixedpoint.h"

/* x rounded to the nearest integer, ties to even (banker's rounding, as tf.round). NaN and
 * infinities come back unchanged; a tie (diff == 0.5) only occurs for |x| < 2^23, where the
 * conversion of the floor to int32 is exact. */
static inline float mc_round_half_to_even(float x) {
  const float floor_x = floorf(x);
  const float diff = x - floor_x;
  if (diff < 0.5f || (diff == 0.5f && ((int32_t)floor_x & 1) == 0)) return floor_x;
  return floor_x + 1.0f;
}

/* 1/sqrt(input) for an integer input >= 2 as a Q31 multiplier and a left shift:
 * 1/sqrt(input) = multiplier * 2^(shift - 31). Inputs of 0 and 1 give INT32_MAX with shift 0.
 * Newton-Raphson on the input normalised to [1/4, 1) in Q3 (five steps from x = 1), the
 * fixed-point arithmetic of TFLite's GetInvSqrtQuantizedMultiplierExp, bit for bit. */
static inline int32_t mc_inv_sqrt_multiplier(int32_t input, int* shift) {
  const int32_t one_q3 = (int32_t)1 << 28;
  const int32_t three_halves_q3 = ((int32_t)1 << 28) + ((int32_t)1 << 27);
  const int32_t half_sqrt2_q0 = 1518500250; /* sqrt(2)/2 in Q0 */
  int32_t half_input, x, result;
  int right_shift = 11;
  unsigned pairs;
  int i;
  if (input <= 1) {
    *shift = 0;
    return INT32_MAX;
  }
  while (input >= ((int32_t)1 << 29)) {
    input /= 4;
    ++right_shift;
  }
  /* Shift input left by an even number of bits into [2^27, 2^29). */
  pairs = ((unsigned)mc_count_leading_zeros((uint32_t)input) - 1u) / 2u - 1u;
  right_shift -= (int)pairs;
  input = (int32_t)((uint32_t)input << (2u * pairs));
  half_input = mc_rounding_divide_by_pot(input >> 1, 1); /* Q3 */
  x = one_q3;
  for (i = 0; i < 5; ++i) {
    const int32_t x3 = mc_fp_rescale(mc_fp_mul(mc_fp_mul(x, x), x), 9, 3);
    x = mc_fp_rescale(mc_wrap_sub(mc_fp_mul(three_halves_q3, x), mc_fp_mul(half_input, x3)), 6, 3);
  }
  result = mc_fp_mul(x, half_sqrt2_q0);
  if (right_shift < 0) {
    result = (int32_t)((uint32_t)result << -right_shift);
    right_shift = 0;
  }
  *shift = -right_shift;
  return result;
}

/* The integer nearest to 2^20 / sqrt(x) for 0 < x < 2^16 (never a tie): a float guess, within one of
 * it (IEEE division and square root, each within half an ulp of 2^-24), corrected by the exact test
 * (2q - 1)^2 x <= 2^42 < (2q + 1)^2 x in 64-bit integers. TFLM's Q20 1/sqrt equals it but for a few
 * inputs (microcompiler/ops/rsqrt_int.py). */
static inline int32_t mc_inv_sqrt_q20_nearest(int32_t x) {
  const uint64_t limit = (uint64_t)1 << 42;
  const int32_t q = (int32_t)(1048576.0f / sqrtf((float)x) + 0.5f); /* <= 2^20 */
  const uint64_t above = (uint64_t)(2 * q + 1) * (uint64_t)(2 * q + 1) * (uint64_t)x; /* < 2^58 */
  const uint64_t below = above - (uint64_t)(8 * q) * (uint64_t)x;                     /* (2q - 1)^2 x */
  return above <= limit ? q + 1 : below > limit ? q - 1 : q;
}

/* float -> integer as TFLite Micro's CAST converts: toward zero, saturating at the type's limits,
 * NaN -> 0. lo/hi are the limits; lo_f/hi_f the floats at or beyond which the result saturates. */
#define MC_CAST_FLOAT_TO_INT(T, x, lo, hi, lo_f, hi_f) \
  ((x) != (x) ? (T)0 : (x) <= (lo_f) ? (T)(lo) : (x) >= (hi_f) ? (T)(hi) : (T)(x))

#endif /* MICROCOMPILER_KERNEL_ELEMENTWISE_H_ */
