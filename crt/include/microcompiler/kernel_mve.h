/* Helium (M-profile Vector Extension, MVE) building blocks of the "mve" int8 kernels, with portable
 * fallbacks.
 *
 * On a core with integer MVE (Cortex-M55, M85: __ARM_FEATURE_MVE bit 0) these are ACLE intrinsics
 * from arm_mve.h: VLDRB + VMLADAVA.S8 (16 multiply-accumulates into a scalar per instruction) for
 * the dot products, and VQRDMULH + VRSHL for TFLM's requantization of 4 lanes at once. On any other
 * target (the host build) the same functions are plain C with the same results bit for bit, so the
 * host tests (oracle sweeps, ASan/UBSan) exercise the data layout, tails and arithmetic the device
 * runs.
 *
 * Weight layout of the dot-product kernels (built at compile time, microcompiler/ops/fast_mve.py):
 * output channels in blocks of 4 (the last block zero-padded); per block and per chunk of 16
 * inputs, the 16 weights of channel 0, then of channels 1, 2, 3 (64 bytes); the last chunk
 * zero-padded to 16. The inputs' last chunk is read with a tail predicate (never past the end).
 *
 * Requantization records per block of 4 channels, 16 int32: bias[4] (input zero point folded in),
 * multiplier[4], left shift[4], -right shift[4] (TFLM's shift split as in its
 * MultiplyByQuantizedMultiplier).
 */
#ifndef MICROCOMPILER_KERNEL_MVE_H_
#define MICROCOMPILER_KERNEL_MVE_H_

#include <stdint.h>
#include <string.h>

#include "microcompiler/kernel_math.h"

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1) && !defined(MC_NO_MVE)
#define MC_MVE 1
#include <arm_mve.h>
#else
#define MC_MVE 0
#endif

#if defined(__GNUC__)
#define MC_MVE_INLINE inline __attribute__((always_inline))
#else
#define MC_MVE_INLINE inline
#endif

/* Record layout of the requantization parameters of a block of 4 output channels. */
#define MC_MVE_BIAS 0
#define MC_MVE_MULT 4
#define MC_MVE_LSHIFT 8
#define MC_MVE_NRSHIFT 12
#define MC_MVE_RECORD 16

/* ---- Four int32 lanes --------------------------------------------------------------------------- */

#if MC_MVE
typedef int32x4_t mc_v4;
#else
typedef struct {
  int32_t v[4];
} mc_v4;
#endif

static MC_MVE_INLINE mc_v4 mc_v4_load(const int32_t* p) {
#if MC_MVE
  return vldrwq_s32(p);
#else
  mc_v4 r;
  memcpy(r.v, p, sizeof r.v);
  return r;
#endif
}

/* TFLM's MultiplyByQuantizedMultiplier of 4 lanes after adding the bias, with the record q (see the
 * top). MVE: VSHL (only when left_shift), VQRDMULH (= SaturatingRoundingDoublingHighMul), then
 * RoundingDivideByPOT as VRSHL by -r after adding -1 to negative values when r > 0 (VAND with -r
 * keeps the sign bit only then). */
static MC_MVE_INLINE mc_v4 mc_v4_requant(mc_v4 acc, const int32_t* q, int left_shift) {
#if MC_MVE
  const int32x4_t nr = vldrwq_s32(q + MC_MVE_NRSHIFT);
  int32x4_t x = vaddq_s32(acc, vldrwq_s32(q + MC_MVE_BIAS));
  if (left_shift) x = vshlq_s32(x, vldrwq_s32(q + MC_MVE_LSHIFT));
  x = vqrdmulhq_s32(x, vldrwq_s32(q + MC_MVE_MULT));
  x = vqaddq_s32(x, vshrq_n_s32(vandq_s32(x, nr), 31));
  return vrshlq_s32(x, nr);
#else
  int i;
  (void)left_shift;
  for (i = 0; i < 4; ++i) {
    const int32_t a = (int32_t)((uint32_t)acc.v[i] + (uint32_t)q[MC_MVE_BIAS + i]);
    acc.v[i] = mc_requantize(a, q[MC_MVE_MULT + i], q[MC_MVE_LSHIFT + i] + q[MC_MVE_NRSHIFT + i]);
  }
  return acc;
#endif
}

/* + zero point, clamp to [lo, hi], store the low byte of lanes 0 .. count-1 (count 1..4). */
static MC_MVE_INLINE void mc_v4_store_s8(int8_t* dst, int32_t count, mc_v4 x, int32_t zp, int32_t lo, int32_t hi) {
#if MC_MVE
  x = vaddq_n_s32(x, zp);
  x = vmaxq_s32(x, vdupq_n_s32(lo));
  x = vminq_s32(x, vdupq_n_s32(hi));
  if (count == 4) {
    vstrbq_s32(dst, x);
  } else {
    vstrbq_p_s32(dst, x, vctp32q((uint32_t)count));
  }
#else
  int32_t i;
  for (i = 0; i < count; ++i) {
    const int32_t v = x.v[i] + zp;
    dst[i] = (int8_t)MC_CLAMP(v, lo, hi);
  }
#endif
}

/* ---- Depthwise: 16 channels ---------------------------------------------------------------------
 * VMULLB/VMULLT.S8 multiply the even/odd int8 lanes into int16 products, VMOVLB/VMOVLT widen them
 * into four int32 accumulators holding the channels A = (0, 4, 8, 12), B = (2, 6, 10, 14),
 * C = (1, 5, 9, 13), D = (3, 7, 11, 15) (the requantization records of a group of 16 channels come
 * in that order); the saturating narrowings VQMOVNB/VQMOVNT put them back in channel order. */
typedef struct {
#if MC_MVE
  int32x4_t a, b, c, d;
#else
  int32_t v[16]; /* in channel order */
#endif
} mc_dw16;

/* The accumulators of channel order 0..15 -> the group (0 A, 1 B, 2 C, 3 D) and lane of each. */
#define MC_DW16_GROUP(ch) ((((ch) & 1) << 1) | (((ch) >> 1) & 1))
#define MC_DW16_LANE(ch) ((ch) >> 2)

static MC_MVE_INLINE void mc_dw16_zero(mc_dw16* s) {
#if MC_MVE
  s->a = s->b = s->c = s->d = vdupq_n_s32(0);
#else
  memset(s->v, 0, sizeof s->v);
#endif
}

/* s += x[c] * w[c] for the 16 channels c (one tap). */
static MC_MVE_INLINE void mc_dw16_tap(mc_dw16* s, const int8_t* x, const int8_t* w) {
#if MC_MVE
  const int8x16_t xv = vldrbq_s8(x), wv = vldrbq_s8(w);
  const int16x8_t e = vmullbq_int_s8(xv, wv), o = vmulltq_int_s8(xv, wv);
  s->a = vaddq_s32(s->a, vmovlbq_s16(e));
  s->b = vaddq_s32(s->b, vmovltq_s16(e));
  s->c = vaddq_s32(s->c, vmovlbq_s16(o));
  s->d = vaddq_s32(s->d, vmovltq_s16(o));
#else
  int c;
  for (c = 0; c < 16; ++c) s->v[c] = (int32_t)((uint32_t)s->v[c] + (uint32_t)((int32_t)x[c] * (int32_t)w[c]));
#endif
}

/* Two taps at once: the two int16 products are added in int16 before widening, which is exact when
 * no weight is -128 (|x w0 + x' w1| <= 2 * 128 * 127 < 2^15; the code generator checks). */
static MC_MVE_INLINE void mc_dw16_tap2(mc_dw16* s, const int8_t* x0, const int8_t* w0, const int8_t* x1,
                                       const int8_t* w1) {
#if MC_MVE
  const int8x16_t u = vldrbq_s8(x0), k = vldrbq_s8(w0), v = vldrbq_s8(x1), l = vldrbq_s8(w1);
  const int16x8_t e = vaddq_s16(vmullbq_int_s8(u, k), vmullbq_int_s8(v, l));
  const int16x8_t o = vaddq_s16(vmulltq_int_s8(u, k), vmulltq_int_s8(v, l));
  s->a = vaddq_s32(s->a, vmovlbq_s16(e));
  s->b = vaddq_s32(s->b, vmovltq_s16(e));
  s->c = vaddq_s32(s->c, vmovlbq_s16(o));
  s->d = vaddq_s32(s->d, vmovltq_s16(o));
#else
  mc_dw16_tap(s, x0, w0);
  mc_dw16_tap(s, x1, w1);
#endif
}

/* Requantize the 16 channels with the 4 records at q (groups A, B, C, D), + zero point, clamp,
 * store 16 int8 in channel order. */
static MC_MVE_INLINE void mc_dw16_store(int8_t* dst, const mc_dw16* s, const int32_t* q, int left_shift, int32_t zp,
                                        int32_t lo, int32_t hi) {
#if MC_MVE
  const int32x4_t a = vaddq_n_s32(mc_v4_requant(s->a, q, left_shift), zp);
  const int32x4_t b = vaddq_n_s32(mc_v4_requant(s->b, q + MC_MVE_RECORD, left_shift), zp);
  const int32x4_t c = vaddq_n_s32(mc_v4_requant(s->c, q + 2 * MC_MVE_RECORD, left_shift), zp);
  const int32x4_t d = vaddq_n_s32(mc_v4_requant(s->d, q + 3 * MC_MVE_RECORD, left_shift), zp);
  const int16x8_t even = vqmovntq_s32(vqmovnbq_s32(vdupq_n_s16(0), a), b);
  const int16x8_t odd = vqmovntq_s32(vqmovnbq_s32(vdupq_n_s16(0), c), d);
  int8x16_t y = vqmovntq_s16(vqmovnbq_s16(vdupq_n_s8(0), even), odd);
  y = vmaxq_s8(y, vdupq_n_s8((int8_t)lo));
  y = vminq_s8(y, vdupq_n_s8((int8_t)hi));
  vstrbq_s8(dst, y);
#else
  int ch;
  for (ch = 0; ch < 16; ++ch) {
    const int32_t* r = q + MC_MVE_RECORD * MC_DW16_GROUP(ch);
    const int i = MC_DW16_LANE(ch);
    const int32_t acc = (int32_t)((uint32_t)s->v[ch] + (uint32_t)r[MC_MVE_BIAS + i]);
    const int32_t v = mc_requantize(acc, r[MC_MVE_MULT + i], r[MC_MVE_LSHIFT + i] + r[MC_MVE_NRSHIFT + i]) + zp;
    (void)left_shift;
    dst[ch] = (int8_t)MC_CLAMP(v, lo, hi);
  }
#endif
}

/* ---- Dot products: blocks of 4 output channels -------------------------------------------------- */

/* Two input vectors x0, x1 against a block of 4 channels w (the layout above), steps chunks of 16
 * inputs (steps >= 1; x0 and x1 readable for 16 * steps bytes):
 *   a[4 p + c] = sum_k x_p[k] * w_c[k]     (p = 0, 1; c = 0..3; the sums start at 0).
 * MVE: 16 instructions per 128 MACs (VMLADAVA.S8 accumulates into even registers only: the eight
 * accumulators take r0, r2, ..., r12 and lr). */
static MC_MVE_INLINE void mc_mve_dot_2x4(const int8_t* x0, const int8_t* x1, const int8_t* w, int32_t steps,
                                         int32_t* a) {
#if MC_MVE
  register int32_t s0 __asm__("r0");
  register int32_t s1 __asm__("r2");
  register int32_t s2 __asm__("r4");
  register int32_t s3 __asm__("r6");
  register int32_t t0 __asm__("r8");
  register int32_t t1 __asm__("r10");
  register int32_t t2 __asm__("r12");
  register int32_t t3 __asm__("lr");
#define MC_MVE_DOT_2X4_STEP(MLA)                                                                        \
  "vldrb.8 q0, [%[x0]], #16\n\t"                                                                    \
  "vldrb.8 q1, [%[x1]], #16\n\t"                                                                    \
  "vldrb.8 q2, [%[w]], #16\n\t" MLA " %[s0], q0, q2\n\t" MLA " %[t0], q1, q2\n\t"                 \
  "vldrb.8 q2, [%[w]], #16\n\t" MLA " %[s1], q0, q2\n\t" MLA " %[t1], q1, q2\n\t"                 \
  "vldrb.8 q2, [%[w]], #16\n\t" MLA " %[s2], q0, q2\n\t" MLA " %[t2], q1, q2\n\t"                 \
  "vldrb.8 q2, [%[w]], #16\n\t" MLA " %[s3], q0, q2\n\t" MLA " %[t3], q1, q2\n\t"
  __asm__ volatile(MC_MVE_DOT_2X4_STEP("vmladav.s8")
                   : [s0] "=r"(s0), [s1] "=r"(s1), [s2] "=r"(s2), [s3] "=r"(s3), [t0] "=r"(t0), [t1] "=r"(t1),
                     [t2] "=r"(t2), [t3] "=r"(t3), [x0] "+r"(x0), [x1] "+r"(x1), [w] "+r"(w)
                   :
                   : "q0", "q1", "q2", "memory");
  if (--steps) {
    __asm__ volatile("1:\n\t" MC_MVE_DOT_2X4_STEP("vmladava.s8") "subs %[n], %[n], #1\n\t"
                     "bne 1b\n\t"
                     : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [t0] "+r"(t0), [t1] "+r"(t1),
                       [t2] "+r"(t2), [t3] "+r"(t3), [x0] "+r"(x0), [x1] "+r"(x1), [w] "+r"(w), [n] "+r"(steps)
                     :
                     : "q0", "q1", "q2", "cc", "memory");
  }
#undef MC_MVE_DOT_2X4_STEP
  a[0] = s0;
  a[1] = s1;
  a[2] = s2;
  a[3] = s3;
  a[4] = t0;
  a[5] = t1;
  a[6] = t2;
  a[7] = t3;
#else
  int32_t k, c;
  for (c = 0; c < 4; ++c) {
    uint32_t s = 0, t = 0;
    for (k = 0; k < 16 * steps; ++k) {
      const int32_t wk = w[(k / 16) * 64 + c * 16 + k % 16];
      s += (uint32_t)((int32_t)x0[k] * wk);
      t += (uint32_t)((int32_t)x1[k] * wk);
    }
    a[c] = (int32_t)s;
    a[4 + c] = (int32_t)t;
  }
#endif
}

#endif /* MICROCOMPILER_KERNEL_MVE_H_ */
