/* ONNX Runtime's requantization (QLinearConv, QLinearMatMul; docs/onnx.md "QDQ int8") for the Helium
 * kernels' epilogue (kernel_mve.h), kept apart from TFLM's: a layer whose records hold the float32
 * scale's bits in the multiplier slot (ops/fast/mve.py, ``general`` = MC_MVE_ORT_REQUANT) gets, per
 * lane, the bias added, the int32 sum converted to float32 (exact below 2^24, rounded to nearest even
 * above, as C's (float) conversion), times the scale (one rounding), then rounded to the nearest
 * integer, ties to even (VCVTN: the rounding is the instruction's, not FPSCR's). The caller adds the
 * zero point and clamps to int8 (mc_v4_store_s8, mc_dw16_store), which equals ONNX Runtime's clamp
 * of the float before rounding (rounding is monotone and the bounds are integers); the result is
 * held within +-2^16 first so that adding the zero point cannot wrap. */
#ifndef MICROCOMPILER_KERNEL_MVE_ORT_H_
#define MICROCOMPILER_KERNEL_MVE_ORT_H_

#include <stdint.h>

#include "microcompiler/kernel_math.h"

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1) && !defined(MC_NO_MVE)
#include <arm_mve.h>
#endif

/* the ``general`` argument of mc_v4_requant / mc_dw16_store that selects this epilogue */
#define MC_MVE_ORT_REQUANT 2

/* One lane: round_half_even(float(acc + bias) * scale), held within +-2^16. */
static inline int32_t mc_ort_requant_lane(int32_t acc, int32_t bias, int32_t scale_bits) {
  float product = (float)(int32_t)((uint32_t)acc + (uint32_t)bias) * mc_f32_from_bits((uint32_t)scale_bits);
  MC_F32_ROUNDED(product);
  return mc_round_even_clamped(product, -65536.0f, 65536.0f);
}

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1) && !defined(MC_NO_MVE)
/* Four lanes: acc + bias[0..3], times scale[0..3] (as bits). */
static inline int32x4_t mc_ort_requant_x4(int32x4_t acc, const int32_t* bias, const int32_t* scale_bits) {
#if __ARM_FEATURE_MVE & 2 /* Helium with floating point: VCVT, VMUL.F32, VCVTN */
  const int32x4_t x = vaddq_s32(acc, vldrwq_s32(bias));
  const float32x4_t product = vmulq_f32(vcvtq_f32_s32(x), vreinterpretq_f32_s32(vldrwq_s32(scale_bits)));
  const int32x4_t n = vcvtnq_s32_f32(product);
  return vmaxq_s32(vminq_s32(n, vdupq_n_s32(65536)), vdupq_n_s32(-65536));
#else /* integer Helium: lane by lane */
  int32_t v[4];
  int i;
  vst1q_s32(v, acc);
  for (i = 0; i < 4; ++i) v[i] = mc_ort_requant_lane(v[i], bias[i], scale_bits[i]);
  return vld1q_s32(v);
#endif
}
#endif

#endif /* MICROCOMPILER_KERNEL_MVE_ORT_H_ */
