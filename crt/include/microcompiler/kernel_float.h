/* Building blocks of the float32 fast kernels (CONV_2D "float-blocks", DEPTHWISE_CONV_2D
 * "float-channels4", FULLY_CONNECTED "float-rows4"; microcompiler/ops/fast/float_kernels.py).
 *
 * Each helper adds a run of n taps to a block of accumulators, tap after tap, so every output is
 * the sum TFLite Micro's reference kernels compute, in their order: a block of several pixels and
 * output channels rounds exactly as TFLM's one-output-at-a-time loops, and NaN and infinities
 * propagate as there. The accumulators live in locals (FPU registers) inside the run; the caller
 * keeps them in a small array between runs (one run per kernel row).
 *
 * mc_f32_mla(acc, x, w) is acc + x * w with the product rounded before the sum (C semantics, no
 * contraction into a fused multiply-add): on cores with a single-precision FPU one VMLA.F32, which
 * rounds exactly as VMUL.F32 then VADD.F32 (GCC does not emit it under -std=c99, where
 * -ffp-contract=off); elsewhere the C expression.
 */
#ifndef MICROCOMPILER_KERNEL_FLOAT_H_
#define MICROCOMPILER_KERNEL_FLOAT_H_

#include <stdint.h>

#if defined(__GNUC__) && defined(__ARM_FP) && (__ARM_FP & 4) && !defined(__aarch64__) && !defined(MC_NO_FPU_ASM)
#define MC_FPU_ASM 1
#else
#define MC_FPU_ASM 0
#endif

/* Helium with floating point (Cortex-M55): the 4-channel blocks as one vector per pixel, VMUL then
 * VADD (each product rounded before the sum, as TFLM; not VFMA, which would round once). */
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2) && !defined(MC_NO_MVE)
#define MC_MVE_F 1
#include <arm_mve.h>
/* GCC 12 does not order the Helium loads and stores of acc (vld1q_f32, vst1q_f32) with the caller's
 * scalar stores and loads of the same floats (measured: a memset of acc moved after the vector
 * load), so the helpers fence them: no instruction, only the order. */
#define MC_F32X4_FENCE() __asm__ volatile("" ::: "memory")
#define MC_F32X4_MLA(acc, x, w) ((acc) = vaddq_f32((acc), vmulq_f32((x), (w))))
#define MC_F32X4_MLA_N(acc, w, x) ((acc) = vaddq_f32((acc), vmulq_n_f32((w), (x))))
#else
#define MC_MVE_F 0
#endif

#if MC_FPU_ASM
#define MC_F32_MLA(acc, x, w) __asm__("vmla.f32 %0, %1, %2" : "+t"(acc) : "t"(x), "t"(w))
#else
#define MC_F32_MLA(acc, x, w) ((acc) += (x) * (w))
#endif

/* The 16 accumulators a<pixel><channel> of a 4 x 4 block as locals (FPU registers), from and back to
 * acc[4 * pixel + channel]. */
#define MC_F32_ACC4X4_LOAD(acc)                                   \
  float a00 = (acc)[0], a01 = (acc)[1], a02 = (acc)[2], a03 = (acc)[3];   \
  float a10 = (acc)[4], a11 = (acc)[5], a12 = (acc)[6], a13 = (acc)[7];   \
  float a20 = (acc)[8], a21 = (acc)[9], a22 = (acc)[10], a23 = (acc)[11]; \
  float a30 = (acc)[12], a31 = (acc)[13], a32 = (acc)[14], a33 = (acc)[15]
#define MC_F32_ACC4X4_STORE(acc)                                        \
  do {                                                                  \
    (acc)[0] = a00; (acc)[1] = a01; (acc)[2] = a02; (acc)[3] = a03;     \
    (acc)[4] = a10; (acc)[5] = a11; (acc)[6] = a12; (acc)[7] = a13;     \
    (acc)[8] = a20; (acc)[9] = a21; (acc)[10] = a22; (acc)[11] = a23;   \
    (acc)[12] = a30; (acc)[13] = a31; (acc)[14] = a32; (acc)[15] = a33; \
  } while (0)

/* 4 pixels x 4 output channels: acc[4 * p + c] += x[p * pixel_stride + t] * w[4 * t + c], t = 0..n-1
 * (the weights of 4 channels interleaved tap by tap). */
static inline void mc_f32_taps_4x4(float* acc, const float* x, int32_t pixel_stride, const float* w, int32_t n) {
  const float* x1 = x + pixel_stride;
  const float* x2 = x1 + pixel_stride;
  const float* x3 = x2 + pixel_stride;
  int32_t t;
#if MC_MVE_F
  float32x4_t r0, r1, r2, r3;
  MC_F32X4_FENCE();
  r0 = vld1q_f32(acc); r1 = vld1q_f32(acc + 4); r2 = vld1q_f32(acc + 8); r3 = vld1q_f32(acc + 12);
  for (t = 0; t < n; ++t, w += 4) {
    const float32x4_t k = vld1q_f32(w);
    MC_F32X4_MLA_N(r0, k, x[t]); MC_F32X4_MLA_N(r1, k, x1[t]); MC_F32X4_MLA_N(r2, k, x2[t]); MC_F32X4_MLA_N(r3, k, x3[t]);
  }
  vst1q_f32(acc, r0); vst1q_f32(acc + 4, r1); vst1q_f32(acc + 8, r2); vst1q_f32(acc + 12, r3);
  MC_F32X4_FENCE();
#else
  MC_F32_ACC4X4_LOAD(acc);
  for (t = 0; t < n; ++t, w += 4) {
    const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
    const float v0 = x[t], v1 = x1[t], v2 = x2[t], v3 = x3[t];
    MC_F32_MLA(a00, v0, w0); MC_F32_MLA(a01, v0, w1); MC_F32_MLA(a02, v0, w2); MC_F32_MLA(a03, v0, w3);
    MC_F32_MLA(a10, v1, w0); MC_F32_MLA(a11, v1, w1); MC_F32_MLA(a12, v1, w2); MC_F32_MLA(a13, v1, w3);
    MC_F32_MLA(a20, v2, w0); MC_F32_MLA(a21, v2, w1); MC_F32_MLA(a22, v2, w2); MC_F32_MLA(a23, v2, w3);
    MC_F32_MLA(a30, v3, w0); MC_F32_MLA(a31, v3, w1); MC_F32_MLA(a32, v3, w2); MC_F32_MLA(a33, v3, w3);
  }
  MC_F32_ACC4X4_STORE(acc);
#endif
}

/* 1 pixel x 4 output channels: acc[c] += x[t] * w[4 * t + c]. */
static inline void mc_f32_taps_1x4(float* acc, const float* x, const float* w, int32_t n) {
  int32_t t;
#if MC_MVE_F
  float32x4_t r;
  MC_F32X4_FENCE();
  r = vld1q_f32(acc);
  for (t = 0; t < n; ++t, w += 4) MC_F32X4_MLA_N(r, vld1q_f32(w), x[t]);
  vst1q_f32(acc, r);
  MC_F32X4_FENCE();
#else
  float a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
  for (t = 0; t < n; ++t, w += 4) {
    const float v = x[t];
    MC_F32_MLA(a0, v, w[0]); MC_F32_MLA(a1, v, w[1]); MC_F32_MLA(a2, v, w[2]); MC_F32_MLA(a3, v, w[3]);
  }
  acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3;
#endif
}

/* 4 pixels x 1 output channel: acc[p] += x[p * pixel_stride + t] * w[t]. */
static inline void mc_f32_taps_4x1(float* acc, const float* x, int32_t pixel_stride, const float* w, int32_t n) {
  const float* x1 = x + pixel_stride;
  const float* x2 = x1 + pixel_stride;
  const float* x3 = x2 + pixel_stride;
  float a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
  int32_t t;
  for (t = 0; t < n; ++t) {
    const float k = w[t];
    MC_F32_MLA(a0, x[t], k); MC_F32_MLA(a1, x1[t], k); MC_F32_MLA(a2, x2[t], k); MC_F32_MLA(a3, x3[t], k);
  }
  acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3;
}

/* 1 pixel x 1 output channel: acc + the dot product of x[0..n-1] and w[0..n-1], in order. */
static inline float mc_f32_taps_1x1(float acc, const float* x, const float* w, int32_t n) {
  int32_t t;
  for (t = 0; t < n; ++t) MC_F32_MLA(acc, x[t], w[t]);
  return acc;
}

/* Depthwise, 4 pixels x 4 channels over n taps of a kernel row: acc[4 * p + c] +=
 * x[p * pixel_stride + t * tap_stride + c] * w[t * w_stride + c]. */
static inline void mc_f32_dw_4x4(float* acc, const float* x, int32_t pixel_stride, int32_t tap_stride,
                                 const float* w, int32_t w_stride, int32_t n) {
  const float* x1 = x + pixel_stride;
  const float* x2 = x1 + pixel_stride;
  const float* x3 = x2 + pixel_stride;
  int32_t t, i = 0, k = 0; /* i: the tap's input offset, k: its weights' */
#if MC_MVE_F
  float32x4_t r0, r1, r2, r3;
  MC_F32X4_FENCE();
  r0 = vld1q_f32(acc); r1 = vld1q_f32(acc + 4); r2 = vld1q_f32(acc + 8); r3 = vld1q_f32(acc + 12);
  for (t = 0; t < n; ++t, i += tap_stride, k += w_stride) {
    const float32x4_t v = vld1q_f32(w + k);
    MC_F32X4_MLA(r0, vld1q_f32(x + i), v); MC_F32X4_MLA(r1, vld1q_f32(x1 + i), v);
    MC_F32X4_MLA(r2, vld1q_f32(x2 + i), v); MC_F32X4_MLA(r3, vld1q_f32(x3 + i), v);
  }
  vst1q_f32(acc, r0); vst1q_f32(acc + 4, r1); vst1q_f32(acc + 8, r2); vst1q_f32(acc + 12, r3);
  MC_F32X4_FENCE();
#else
  MC_F32_ACC4X4_LOAD(acc);
  for (t = 0; t < n; ++t, i += tap_stride, k += w_stride) {
    const float w0 = w[k], w1 = w[k + 1], w2 = w[k + 2], w3 = w[k + 3];
    MC_F32_MLA(a00, x[i], w0); MC_F32_MLA(a01, x[i + 1], w1); MC_F32_MLA(a02, x[i + 2], w2); MC_F32_MLA(a03, x[i + 3], w3);
    MC_F32_MLA(a10, x1[i], w0); MC_F32_MLA(a11, x1[i + 1], w1); MC_F32_MLA(a12, x1[i + 2], w2); MC_F32_MLA(a13, x1[i + 3], w3);
    MC_F32_MLA(a20, x2[i], w0); MC_F32_MLA(a21, x2[i + 1], w1); MC_F32_MLA(a22, x2[i + 2], w2); MC_F32_MLA(a23, x2[i + 3], w3);
    MC_F32_MLA(a30, x3[i], w0); MC_F32_MLA(a31, x3[i + 1], w1); MC_F32_MLA(a32, x3[i + 2], w2); MC_F32_MLA(a33, x3[i + 3], w3);
  }
  MC_F32_ACC4X4_STORE(acc);
#endif
}

/* Depthwise, 1 pixel x 4 channels: acc[c] += x[t * tap_stride + c] * w[t * w_stride + c]. */
static inline void mc_f32_dw_1x4(float* acc, const float* x, int32_t tap_stride, const float* w, int32_t w_stride,
                                 int32_t n) {
  int32_t t, i = 0, k = 0;
#if MC_MVE_F
  float32x4_t r;
  MC_F32X4_FENCE();
  r = vld1q_f32(acc);
  for (t = 0; t < n; ++t, i += tap_stride, k += w_stride) MC_F32X4_MLA(r, vld1q_f32(x + i), vld1q_f32(w + k));
  vst1q_f32(acc, r);
  MC_F32X4_FENCE();
#else
  float a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
  for (t = 0; t < n; ++t, i += tap_stride, k += w_stride) {
    MC_F32_MLA(a0, x[i], w[k]); MC_F32_MLA(a1, x[i + 1], w[k + 1]);
    MC_F32_MLA(a2, x[i + 2], w[k + 2]); MC_F32_MLA(a3, x[i + 3], w[k + 3]);
  }
  acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3;
#endif
}

/* Depthwise, 4 pixels x 1 channel: acc[p] += x[p * pixel_stride + t * tap_stride] * w[t * w_stride]. */
static inline void mc_f32_dw_4x1(float* acc, const float* x, int32_t pixel_stride, int32_t tap_stride,
                                 const float* w, int32_t w_stride, int32_t n) {
  float a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
  const float* x1 = x + pixel_stride;
  const float* x2 = x1 + pixel_stride;
  const float* x3 = x2 + pixel_stride;
  int32_t t, i = 0, k = 0;
  for (t = 0; t < n; ++t, i += tap_stride, k += w_stride) {
    const float v = w[k];
    MC_F32_MLA(a0, x[i], v); MC_F32_MLA(a1, x1[i], v); MC_F32_MLA(a2, x2[i], v); MC_F32_MLA(a3, x3[i], v);
  }
  acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3;
}

/* Depthwise, 1 pixel x 1 channel: acc + the sum of x[t * tap_stride] * w[t * w_stride], in order. */
static inline float mc_f32_dw_1x1(float acc, const float* x, int32_t tap_stride, const float* w, int32_t w_stride,
                                  int32_t n) {
  int32_t t;
  for (t = 0; t < n; ++t) MC_F32_MLA(acc, x[t * tap_stride], w[t * w_stride]);
  return acc;
}

#endif /* MICROCOMPILER_KERNEL_FLOAT_H_ */
