/* Fixed-point arithmetic shared by generated operator code.
 *
 * These reproduce the integer semantics of TFLite Micro's reference kernels
 * (rounding, saturation, requantization) so that generated code is bit-exact
 * with the TFLM interpreter. All functions are static inline; the generated
 * code passes compile-time constants, so the compiler folds most of the work.
 */
#ifndef MICROCOMPILER_KERNEL_MATH_H_
#define MICROCOMPILER_KERNEL_MATH_H_

#include <stdint.h>

/* A function of the generated model code that the compiler must not inline into its callers: a layer
 * calling several shared helpers would otherwise nest an inlined copy's frame inside its own. */
#if defined(__GNUC__)
#define MC_NOINLINE __attribute__((noinline))
#else
#define MC_NOINLINE
#endif

#define MC_MIN(a, b) ((a) < (b) ? (a) : (b))
#define MC_MAX(a, b) ((a) > (b) ? (a) : (b))
#define MC_CLAMP(x, lo, hi) MC_MIN(MC_MAX((x), (lo)), (hi))

/* A float activation clamp exactly as TFLM's ActivationFunctionWithMinMax: std::min(std::max(x, lo), hi).
 * On a tie or an unordered comparison the first argument wins, so NaN passes through (MC_CLAMP would
 * turn it into lo) and -0.0 stays -0.0. */
static inline float mc_clamp_f32(float x, float lo, float hi) {
  const float at_least_lo = x < lo ? lo : x;
  return hi < at_least_lo ? hi : at_least_lo;
}

/* A float32 from its IEEE-754 bit pattern: how generated code writes NaN and infinities exactly. */
static inline float mc_f32_from_bits(uint32_t bits) {
  union { uint32_t u; float f; } v;
  v.u = bits;
  return v.f;
}

/* round(a * b / 2^31), saturating the single overflowing case a == b == INT32_MIN. */
static inline int32_t mc_sat_rounding_doubling_high_mul(int32_t a, int32_t b) {
  int64_t ab;
  int32_t nudge;
  if (a == b && a == INT32_MIN) return INT32_MAX;
  ab = (int64_t)a * (int64_t)b;
  nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
  /* Division (not a shift) truncates toward zero, as the reference does. */
  return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/* x / 2^exponent rounded to nearest, ties away from zero. */
static inline int32_t mc_rounding_divide_by_pot(int32_t x, int exponent) {
  const int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1);
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

/* x * multiplier * 2^shift where multiplier is a Q31 fraction in [0.5, 1). */
static inline int32_t mc_requantize(int32_t x, int32_t multiplier, int shift) {
  const int left = shift > 0 ? shift : 0;
  const int right = shift > 0 ? 0 : -shift;
  return mc_rounding_divide_by_pot(
      mc_sat_rounding_doubling_high_mul((int32_t)((uint32_t)x << left), multiplier), right);
}

/* ONNX Runtime's rounding (MLAS's QuantizeLinear and MlasRequantizeOutput): v clamped to [lo, hi]
   (integers of magnitude below 2^22) in float32, then rounded to the nearest integer, ties to even, by
   adding and subtracting 1.5 * 2^23 (IEEE single precision rounds the sum; no FPU instruction needed). */
static inline int32_t mc_round_even_clamped(float v, float lo, float hi) {
  v = v >= lo ? v : lo; /* a NaN becomes lo */
  v = v <= hi ? v : hi;
  return (int32_t)((v + 12582912.0f) - 12582912.0f);
}

/* ONNX Runtime's QuantizeLinear to int8 (MLAS): x / scale in float32, clamped to [-128 - zp, 127 - zp]
   (a NaN to the lower bound, as MLAS's max/min do), rounded half to even, plus zp. With a single
   precision FPU and the DSP extension: VCVTR rounds by FPSCR's mode (round to nearest even, the
   reset value, which nothing here changes) and saturates, so the clamp can follow the rounding on
   integers (rounding is monotone, the bounds are integers): QADD of the zero point, SSAT. */
#if defined(__GNUC__) && defined(__ARM_FP) && (__ARM_FP & 4) && defined(__ARM_FEATURE_DSP) && !defined(__aarch64__)
static inline int32_t mc_quantize_even_s8(float x, float scale, int32_t zero_point) {
  const float q = x / scale;
  float r;
  int32_t i;
  if (q != q) return -128;
  __asm__("vcvtr.s32.f32 %0, %1" : "=t"(r) : "t"(q));
  __asm__("vmov %0, %1" : "=r"(i) : "t"(r));
  if (zero_point != 0) __asm__("qadd %0, %1, %2" : "=r"(i) : "r"(i), "r"(zero_point));
  __asm__("ssat %0, #8, %1" : "=r"(i) : "r"(i));
  return i;
}
/* The quotient's rounding and saturation of mc_quantize_even_s8, for a quotient that is not a NaN. */
static inline int32_t mc_quantize_even_s8_q(float q, int32_t zero_point) {
  float r;
  int32_t i;
  __asm__("vcvtr.s32.f32 %0, %1" : "=t"(r) : "t"(q));
  __asm__("vmov %0, %1" : "=r"(i) : "t"(r));
  if (zero_point != 0) __asm__("qadd %0, %1, %2" : "=r"(i) : "r"(i), "r"(zero_point));
  __asm__("ssat %0, #8, %1" : "=r"(i) : "r"(i));
  return i;
}

/* Eight values of mc_quantize_even_s8 (the same operations on each): one NaN test for the eight (the
   quotients' sum is NaN when one is; inf - inf too, a false alarm that takes the one-at-a-time path).
   One STRB each (GCC would merge the stores into words with a BFI per byte). */
static inline void mc_quantize_even_s8_x8(const float* x, int8_t* y, float scale, int32_t zero_point) {
  /* the eight loaded by one VLDMIA (GCC loads them one VLDR at a time) */
  register float x0 __asm__("s0"), x1 __asm__("s1"), x2 __asm__("s2"), x3 __asm__("s3");
  register float x4 __asm__("s4"), x5 __asm__("s5"), x6 __asm__("s6"), x7 __asm__("s7");
  __asm__("vldmia %8, {s0-s7}"
          : "=t"(x0), "=t"(x1), "=t"(x2), "=t"(x3), "=t"(x4), "=t"(x5), "=t"(x6), "=t"(x7)
          : "r"(x), "m"(*(const float(*)[8])x));
  const float q0 = x0 / scale, q1 = x1 / scale, q2 = x2 / scale, q3 = x3 / scale;
  const float q4 = x4 / scale, q5 = x5 / scale, q6 = x6 / scale, q7 = x7 / scale;
  const float sum = ((q0 + q1) + (q2 + q3)) + ((q4 + q5) + (q6 + q7));
  int k;
  if (sum != sum) {
    for (k = 0; k < 8; ++k) y[k] = (int8_t)mc_quantize_even_s8(x[k], scale, zero_point);
    return;
  }
  __asm__("strb %1, %0" : "=m"(y[0]) : "r"(mc_quantize_even_s8_q(q0, zero_point)));
  __asm__("strb %1, %0" : "=m"(y[1]) : "r"(mc_quantize_even_s8_q(q1, zero_point)));
  __asm__("strb %1, %0" : "=m"(y[2]) : "r"(mc_quantize_even_s8_q(q2, zero_point)));
  __asm__("strb %1, %0" : "=m"(y[3]) : "r"(mc_quantize_even_s8_q(q3, zero_point)));
  __asm__("strb %1, %0" : "=m"(y[4]) : "r"(mc_quantize_even_s8_q(q4, zero_point)));
  __asm__("strb %1, %0" : "=m"(y[5]) : "r"(mc_quantize_even_s8_q(q5, zero_point)));
  __asm__("strb %1, %0" : "=m"(y[6]) : "r"(mc_quantize_even_s8_q(q6, zero_point)));
  __asm__("strb %1, %0" : "=m"(y[7]) : "r"(mc_quantize_even_s8_q(q7, zero_point)));
}
#else
static inline int32_t mc_quantize_even_s8(float x, float scale, int32_t zero_point) {
  return mc_round_even_clamped(x / scale, (float)(-128 - zero_point), (float)(127 - zero_point)) + zero_point;
}

static inline void mc_quantize_even_s8_x8(const float* x, int8_t* y, float scale, int32_t zero_point) {
  int k;
  for (k = 0; k < 8; ++k) y[k] = (int8_t)mc_quantize_even_s8(x[k], scale, zero_point);
}
#endif

/* ONNX Runtime's int8 requantization (QLinearConv, QLinearMatMul; docs/onnx.md): the int32 sum
   converted to float32, times the float32 scale (input scale * weight scale / output scale),
   clamped to the int8 range less the zero point, rounded half to even, plus the zero point. */
static inline int32_t mc_requant_float(int32_t acc, float scale, int32_t zero_point) {
  return mc_round_even_clamped((float)acc * scale, (float)(-128 - zero_point), (float)(127 - zero_point)) +
         zero_point;
}

/* The product rounded on its own, never contracted with the next addition into a fused multiply-add
   (GCC contracts under -std=gnu*, e.g. in Zephyr builds, on cores with VFMA): an empty asm that
   claims to change the value in its FPU register. Without an FPU there is no fused multiply-add. */
#if defined(__GNUC__) && defined(__ARM_FP) && (__ARM_FP & 4) && !defined(__aarch64__)
#define MC_F32_ROUNDED(v) __asm__("" : "+t"(v))
#elif defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && defined(__SSE__)
#define MC_F32_ROUNDED(v) __asm__("" : "+x"(v))
#else
#define MC_F32_ROUNDED(v) ((void)0)
#endif

/* mc_requant_float without the float clamp, where the compiler proved |acc * scale| < 2^20 (the
   accumulator's bound from the weights and bias, ops/requant_float.py): the product plus 1.5 * 2^23
   has the rounded integer n in its low mantissa bits (MLAS's own trick); their low 22 bits, sign
   extended (one SBFX), are n. An even zero point is added in the same float addition (1.5 * 2^23 + zp
   is exact, and ties still round to even: zp does not change the parity), an odd one after it. The
   caller saturates to int8 as ONNX Runtime's clamp does. */
static inline int32_t mc_requant_float_nc(int32_t acc, float scale, int32_t zero_point) {
  union { float f; uint32_t u; } v;
  float product = (float)acc * scale;
  MC_F32_ROUNDED(product);
  if ((zero_point & 1) == 0) {
    v.f = product + (12582912.0f + (float)zero_point);
    return (int32_t)(v.u << 10) >> 10;
  }
  v.f = product + 12582912.0f;
  return ((int32_t)(v.u << 10) >> 10) + zero_point;
}

/* The 64-bit accumulator variant used by int16 activations (16x8 kernels). */
static inline int32_t mc_requantize64(int64_t x, int32_t multiplier, int shift) {
  const int32_t reduced = multiplier < 0x7FFF0000 ? ((multiplier + (1 << 15)) >> 16) : 0x7FFF;
  const int total_shift = 15 - shift;
  const int64_t rounded = x * (int64_t)reduced + ((int64_t)1 << (total_shift - 1));
  return (int32_t)(rounded >> total_shift);
}

/* x * 2^exponent with saturation to int32 (exponent >= 0). */
static inline int32_t mc_saturating_left_shift(int32_t x, int exponent) {
  const int64_t wide = (int64_t)x * ((int64_t)1 << exponent);
  if (wide > INT32_MAX) return INT32_MAX;
  if (wide < INT32_MIN) return INT32_MIN;
  return (int32_t)wide;
}

#endif /* MICROCOMPILER_KERNEL_MATH_H_ */
