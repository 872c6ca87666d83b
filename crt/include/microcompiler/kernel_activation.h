/* Fixed-point helpers of the activation kernels (LOG_SOFTMAX, the int16 LSTM gates).
 *
 * Like kernel_fixedpoint.h, these reproduce bit for bit the integer arithmetic TFLite Micro's
 * reference kernels evaluate: TFLite's fixed-point log for x >= 1 and TFLM's int16 sigmoid and tanh.
 * (The int8 TANH, LOGISTIC and HARD_SWISH are compile-time tables computed by ops/fixedpoint.py.)
 * Format parameters are compile-time constants at every call site. (The int8 L2_NORMALIZATION uses mc_inv_sqrt_multiplier of kernel_elementwise.h.)
 */
#ifndef MICROCOMPILER_KERNEL_ACTIVATION_H_
#define MICROCOMPILER_KERNEL_ACTIVATION_H_

#include <stdint.h>

#include "microcompiler/kernel_fixedpoint.h"
#include "microcompiler/kernel_libm.h"
#include "microcompiler/kernel_math.h"

/* ---- 32-bit fixed point (Qm as in kernel_fixedpoint.h) ---------------------------------------- */

/* a + b and a - b saturated to int32. */
static inline int32_t mc_sat_add32(int32_t a, int32_t b) {
  const int64_t sum = (int64_t)a + (int64_t)b;
  return (int32_t)MC_CLAMP(sum, (int64_t)INT32_MIN, (int64_t)INT32_MAX);
}

static inline int32_t mc_sat_sub32(int32_t a, int32_t b) {
  const int64_t diff = (int64_t)a - (int64_t)b;
  return (int32_t)MC_CLAMP(diff, (int64_t)INT32_MIN, (int64_t)INT32_MAX);
}

/* The normalising shift of mc_fp_log_x_for_x_ge_1. Its exponent is -1 only for a negative x (a
 * LOG_SOFTMAX sum of exponentials that wrapped past 2^31); TFLite's shift by -1 is undefined in C++
 * but saturates such an x to INT32_MIN both on x86 and on Arm, which is what this returns. */
static inline int32_t mc_fp_log_normalise(int32_t x, int exponent) {
  return exponent < 0 ? INT32_MIN : mc_saturating_left_shift(x, exponent);
}

/* log(x) for x >= 1, x in Q(input_bits), result in Q(output_bits) (TFLite's
 * log_x_for_x_greater_than_or_equal_to_1): log2 of the leading power of two, plus a rational
 * approximation of log on the remaining mantissa in [sqrt(1/2), sqrt(2)). */
static inline int32_t mc_fp_log_x_for_x_ge_1(int32_t x, int input_bits, int output_bits) {
  const int accum_bits = output_bits + 1;              /* one bit of headroom */
  const int32_t log_2 = 1488522236;                    /* log(2), Q0 */
  const int32_t sqrt_sqrt_half = 1805811301;           /* 2^-1/4, Q0 */
  const int32_t sqrt_half = 1518500250;                /* 2^-1/2, Q0 */
  const int32_t one_quarter = 536870912;               /* 1/4, Q0 */
  const int32_t alpha_n = 117049297;                   /* 11/240 * 2^1/4 */
  const int32_t alpha_d = 127690142;                   /* 1/20 * 2^1/4 */
  const int32_t alpha_i = 1057819769;                  /* 2 / 2^1/4 - 2^1/4 */
  const int32_t alpha_f = 638450708;                   /* 1/4 * 2^1/4 */
  const int32_t shifted_quarter = mc_fp_rescale(one_quarter, 0, accum_bits);
  const int z_a_headroom_plus_1 = mc_count_leading_zeros((uint32_t)x);
  const int32_t r_a_tmp = mc_fp_log_normalise(x, z_a_headroom_plus_1 - 1);
  const int32_t r_a = mc_saturating_left_shift(mc_fp_mul(r_a_tmp, sqrt_half), 1);
  const int32_t z_a_pow_2_adj = mc_sat_add32(
      mc_saturating_left_shift(input_bits - z_a_headroom_plus_1, 31 - accum_bits), shifted_quarter);
  const int32_t z_b = mc_fp_mul(x, sqrt_half);
  const int z_b_headroom = mc_count_leading_zeros((uint32_t)z_b) - 1;
  const int32_t r_b = mc_fp_log_normalise(x, z_b_headroom);
  const int32_t z_b_pow_2_adj = mc_sat_sub32(
      mc_saturating_left_shift(input_bits - z_b_headroom, 31 - accum_bits), shifted_quarter);
  const int32_t r = MC_MIN(r_a, r_b);
  const int32_t z_pow_2_adj = MC_MAX(z_a_pow_2_adj, z_b_pow_2_adj); /* Q(accum_bits) */
  const int32_t p = mc_fp_rounding_half_sum(r, sqrt_sqrt_half);
  const int32_t q_half = mc_wrap_sub(r, sqrt_sqrt_half);
  const int32_t q = mc_wrap_add(q_half, q_half);
  const int32_t common_sq = mc_fp_mul(q, q);
  const int32_t num = mc_wrap_add(mc_fp_mul(q, r), mc_fp_mul(mc_fp_mul(q, common_sq), alpha_n));
  const int32_t denom_minus_one = mc_wrap_add(
      mc_fp_mul(p, mc_wrap_add(mc_wrap_add(alpha_i, q), mc_fp_mul(alpha_d, common_sq))),
      mc_fp_mul(alpha_f, q));
  const int32_t recip_denom = mc_fp_one_over_one_plus_x_for_x_in_0_1(denom_minus_one);
  const int32_t num_scaled = mc_fp_rescale(num, 0, accum_bits);
  return mc_fp_rescale(mc_wrap_add(mc_fp_mul(z_pow_2_adj, log_2), mc_fp_mul(num_scaled, recip_denom)),
                       accum_bits, output_bits);
}

/* ---- int16 sigmoid and tanh of TFLM's LSTM gates (UNIDIRECTIONAL_SEQUENCE_LSTM) --------------- */

/* sigmoid in Q0.15 of v, an input already rescaled to units of 1/(3 * 4096), as TFLM's int16
 * LOGISTIC: a 256-entry table of sigmoid over [0, 10.7) with linear interpolation, mirrored for
 * negative inputs. */
static inline int16_t mc_sigmoid_s16(int32_t v, const uint16_t* table) {
  const uint32_t magnitude = (uint32_t)(v < 0 ? -v : v);
  const uint32_t segment = magnitude >> 9;
  uint32_t r;
  if (segment >= 255) {
    r = (uint32_t)0x7FFF << 10;
  } else {
    const uint32_t a = table[segment];
    const uint32_t b = table[segment + 1];
    r = (a << 9) + (magnitude & 0x1FF) * (b - a);
  }
  r = v >= 0 ? r + (1u << 9) : ((uint32_t)1 << 25) - r + (1u << 9) - 1;
  return (int16_t)(r >> 10);
}

/* tanh in Q0.15 of v (units of 1/(3 * 4096)) as TFLM's int16 TANH: 2 * sigmoid(2v) - 1 from the
 * same table. */
static inline int16_t mc_tanh_s16(int32_t v, const uint16_t* table) {
  const uint32_t magnitude = (uint32_t)(v < 0 ? -v : v);
  const uint32_t segment = magnitude >> 8;
  int32_t r;
  if (segment >= 255) {
    r = 0xFFFF << 8;
  } else {
    const uint32_t a = table[segment];
    const uint32_t b = table[segment + 1];
    r = (int32_t)((a << 8) + (magnitude & 0xFF) * (b - a));
  }
  r = v >= 0 ? r - (1 << 23) + (1 << 7) : -r + (1 << 23) + (1 << 7) - 1;
  return (int16_t)(r >> 8);
}

/* mc_sigmoid_s16 and mc_tanh_s16 from the table extended to negative segments ("sym": mid[k] =
 * table[k] for 0 <= k <= 255, 65536 - table[-k] for -255 <= k < 0, mid[256] = table[255], mid[-256]
 * = mid[-255]; mid points at entry 0): segment k = v >> 9 (tanh: v >> 8) and the fraction v & 0x1FF
 * (0xFF) straight from the signed v, the mirror of a negative input is in the table and its rounding
 * is the sign. No abs, no branch. Exact for every input the table covers: the sigmoid's |v| < 2^9 *
 * 255, tanh's v of 17 bits signed (where |v| >= 2^8 * 255 the ends give mc_tanh_s16's saturated
 * values; a caller saturates a wider v to 17 bits: MC_SSAT17, kernel_simd.h). */
static inline int32_t mc_sigmoid_s16_sym(int32_t v, const uint16_t* mid) {
  const int32_t k = v >> 9;
  const uint32_t a = mid[k];
  const uint32_t r = (a << 9) + (uint32_t)(v & 0x1FF) * ((uint32_t)mid[k + 1] - a) + 512u + (uint32_t)(v >> 31);
  return (int32_t)(r >> 10);
}
static inline int32_t mc_tanh_s16_sym(int32_t v, const uint16_t* mid) {
  const int32_t k = v >> 8;
  const uint32_t a = mid[k];
  const uint32_t r = (a << 8) + (uint32_t)(v & 0xFF) * ((uint32_t)mid[k + 1] - a) - (1u << 23) + 128u + (uint32_t)(v >> 31);
  return (int32_t)r >> 8;
}

/* mc_requant_fast(acc, 2^(31 - s), c, r) for a multiplier that is a power of two (the LSTM's gate
 * products): SMMLAR(2 acc, 2^(31 - s)) is (acc + 2^(s - 1)) >> s exactly, no long multiply. */
static inline int32_t mc_requant_pow2(int32_t acc, int s, int32_t c, int r) {
  return (c + (acc >> 31) + ((int32_t)((uint32_t)acc + (1u << (s - 1))) >> s)) >> r;
}

/* The float sigmoid of TFLM's reference Logistic, with its cut-offs. */
static inline float mc_sigmoid_f32(float v) {
  if (v > 16.619047164916992188f) return 1.0f;
  if (v < -9.0f) return mc_expf(v);
  return 1.0f / (1.0f + mc_expf(-v));
}

#endif /* MICROCOMPILER_KERNEL_ACTIVATION_H_ */
