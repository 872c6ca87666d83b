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
 * Requantization records per block of 4 channels: bias[4] (input zero point folded in),
 * multiplier[4], -right shift[4], then left shift[4] (TFLM's shift split as in its
 * MultiplyByQuantizedMultiplier) only in the layers where a channel shifts left ("general"):
 * 16 int32 there, 12 elsewhere (MC_MVE_RECORD_OF).
 */
#ifndef MICROCOMPILER_KERNEL_MVE_H_
#define MICROCOMPILER_KERNEL_MVE_H_

#include <stdint.h>
#include <string.h>

#include "microcompiler/kernel_math.h"
#include "microcompiler/kernel_mve_ort.h" /* ONNX Runtime's requantization (general == MC_MVE_ORT_REQUANT) */

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
#define MC_MVE_NRSHIFT 8
#define MC_MVE_LSHIFT 12 /* only in the records of a "general" layer (a channel shifts left) */
#define MC_MVE_RECORD 16
/* int32 per record: without left shifts (general 0) the record stops before them */
#define MC_MVE_RECORD_OF(general) ((general) ? MC_MVE_RECORD : MC_MVE_LSHIFT)

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
 * top). MVE: VSHL (only when general), VQRDMULH (= SaturatingRoundingDoublingHighMul), then
 * RoundingDivideByPOT as VRSHL by -r after adding -1 to negative values when r > 0 (VAND with -r
 * keeps the sign bit only then). */
static MC_MVE_INLINE mc_v4 mc_v4_requant(mc_v4 acc, const int32_t* q, int general) {
#if MC_MVE
  if (general == MC_MVE_ORT_REQUANT) return mc_ort_requant_x4(acc, q + MC_MVE_BIAS, q + MC_MVE_MULT);
  const int32x4_t nr = vldrwq_s32(q + MC_MVE_NRSHIFT);
  int32x4_t x = vaddq_s32(acc, vldrwq_s32(q + MC_MVE_BIAS));
  if (general) x = vshlq_s32(x, vldrwq_s32(q + MC_MVE_LSHIFT));
  x = vqrdmulhq_s32(x, vldrwq_s32(q + MC_MVE_MULT));
  /* general 0: every lane shifts right by at least 1 and none left (the code generator checks), so
   * the -1 for negative values needs no mask */
  x = vqaddq_s32(x, vshrq_n_s32(general ? vandq_s32(x, nr) : x, 31));
  return vrshlq_s32(x, nr);
#else
  int i;
  for (i = 0; i < 4; ++i) {
    const int32_t a = (int32_t)((uint32_t)acc.v[i] + (uint32_t)q[MC_MVE_BIAS + i]);
    acc.v[i] = general == MC_MVE_ORT_REQUANT
                   ? mc_ort_requant_lane(acc.v[i], q[MC_MVE_BIAS + i], q[MC_MVE_MULT + i])
                   : mc_requantize(a, q[MC_MVE_MULT + i], (general ? q[MC_MVE_LSHIFT + i] : 0) + q[MC_MVE_NRSHIFT + i]);
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

/* ---- Gathering ---------------------------------------------------------------------------------- */

/* d[0 .. n-1] = s[0 .. n-1] and d[0 .. n-1] = value, n a compile-time constant in the kernels: below
 * 8 bytes the compiler's own inline copy, else 16 bytes per VLDRB/VSTRB and a predicated tail (no
 * library call). */
#define MC_MVE_SHORT_COPY 8

static MC_MVE_INLINE void mc_mve_copy(int8_t* d, const int8_t* s, int32_t n) {
#if MC_MVE
  if (n < MC_MVE_SHORT_COPY) {
    memcpy(d, s, (size_t)n);
    return;
  }
  for (; n >= 16; n -= 16, d += 16, s += 16) vstrbq_s8(d, vldrbq_s8(s));
  if (n) {
    const mve_pred16_t p = vctp8q((uint32_t)n);
    vstrbq_p_s8(d, vldrbq_z_s8(s, p), p);
  }
#else
  memcpy(d, s, (size_t)n);
#endif
}

static MC_MVE_INLINE void mc_mve_fill(int8_t* d, int32_t value, int32_t n) {
#if MC_MVE
  int8x16_t v;
  if (n < MC_MVE_SHORT_COPY) {
    memset(d, value, (size_t)n);
    return;
  }
  v = vdupq_n_s8((int8_t)value);
  for (; n >= 16; n -= 16, d += 16) vstrbq_s8(d, v);
  if (n) vstrbq_p_s8(d, v, vctp8q((uint32_t)n));
#else
  memset(d, value, (size_t)n);
#endif
}

/* d[0 .. n-1] = s[0 .. n-1] for a run-time n >= 1: 16 bytes per predicated VLDRB/VSTRB (no library
 * call; the gathers' copies of the part of a kernel row inside the image). */
static MC_MVE_INLINE void mc_mve_copy_n(int8_t* d, const int8_t* s, int32_t n) {
#if MC_MVE
  for (; n > 0; n -= 16, d += 16, s += 16) {
    const mve_pred16_t p = vctp8q((uint32_t)n);
    vstrbq_p_s8(d, vldrbq_z_s8(s, p), p);
  }
#else
  memcpy(d, s, (size_t)n);
#endif
}

/* d[i] = s[off[i]] for i < 16 (off: byte offsets): one VLDRB.U8 gather (a receptive field's chunk of
 * 16 taps read in one instruction instead of a copy per kernel row). */
static MC_MVE_INLINE void mc_mve_gather16(int8_t* d, const int8_t* s, const uint8_t* off) {
#if MC_MVE
  vstrbq_s8(d, vldrbq_gather_offset_s8(s, vldrbq_u8(off)));
#else
  int i;
  for (i = 0; i < 16; ++i) d[i] = s[off[i]];
#endif
}

/* ---- Dot products: blocks of 4 output channels -------------------------------------------------- */

/* Two input vectors x0, x1 against a block of 4 channels w (the layout above), each input vector made
 * of `rows` rows of 16 * row_steps bytes, row r at x_p + r * stride_p (row_steps >= 1):
 *   p0[c] = sum_k x0[k] * w_c[k],  p1[c] = sum_k x1[k] * w_c[k]   (c = 0..3; the sums start at 0).
 * MVE: 14 instructions per 128 MACs for the first chunk of 16 inputs, 15 per chunk after it (two
 * chunks per loop iteration, or none for short rows). VMLADAVA.S8 accumulates into even registers only: the eight
 * accumulators take r0, r2, ..., r12 and lr, and go to Q registers with two VMOVs per vector
 * (VMOV Qd[2], Qd[0], Rt, Rt2 puts Rt in lane 0 and Rt2 in lane 2). */
/* Rows of at most this many chunks run unrolled. */
#define MC_MVE_UNROLLED_STEPS 4
/* ... and kernels of at most this many rows of them (each row at most MC_MVE_UNROLLED_STEPS chunks). */
#define MC_MVE_UNROLLED_ROWS 8

static MC_MVE_INLINE void mc_mve_dot_2x4_rows(const int8_t* x0, int32_t stride0, const int8_t* x1, int32_t stride1,
                                              const int8_t* w, int32_t rows, int32_t row_steps, mc_v4* p0,
                                              mc_v4* p1) {
#if MC_MVE && defined(__OPTIMIZE__) /* unoptimized builds cannot give the asm its 12 registers */
  register int32_t s0 __asm__("r0");
  register int32_t s1 __asm__("r2");
  register int32_t s2 __asm__("r4");
  register int32_t s3 __asm__("r6");
  register int32_t t0 __asm__("r8");
  register int32_t t1 __asm__("r10");
  register int32_t t2 __asm__("r12");
  register int32_t t3 __asm__("lr");
  int32_t r, n, steps = row_steps - 1;
  const int32_t skip0 = stride0 - 16 * row_steps, skip1 = stride1 - 16 * row_steps;
#define MC_MVE_DOT_2X4_STEP(MLA)                                                                        \
  "vldrb.8 q0, [%[x0]], #16\n\t"                                                                    \
  "vldrb.8 q1, [%[x1]], #16\n\t"                                                                    \
  "vldrb.8 q2, [%[w]], #16\n\t" MLA " %[s0], q0, q2\n\t" MLA " %[t0], q1, q2\n\t"                 \
  "vldrb.8 q2, [%[w]], #16\n\t" MLA " %[s1], q0, q2\n\t" MLA " %[t1], q1, q2\n\t"                 \
  "vldrb.8 q2, [%[w]], #16\n\t" MLA " %[s2], q0, q2\n\t" MLA " %[t2], q1, q2\n\t"                 \
  "vldrb.8 q2, [%[w]], #16\n\t" MLA " %[s3], q0, q2\n\t" MLA " %[t3], q1, q2\n\t"
#define MC_MVE_DOT_2X4_OPERANDS                                                                          \
  [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [t0] "+r"(t0), [t1] "+r"(t1), [t2] "+r"(t2), \
      [t3] "+r"(t3), [x0] "+r"(x0), [x1] "+r"(x1), [w] "+r"(w)
  __asm__ volatile(MC_MVE_DOT_2X4_STEP("vmladav.s8")
                   : [s0] "=r"(s0), [s1] "=r"(s1), [s2] "=r"(s2), [s3] "=r"(s3), [t0] "=r"(t0), [t1] "=r"(t1),
                     [t2] "=r"(t2), [t3] "=r"(t3), [x0] "+r"(x0), [x1] "+r"(x1), [w] "+r"(w)
                   :
                   : "q0", "q1", "q2", "memory");
#define MC_MVE_DOT_2X4_STEP_IF(STEPS, K)                                                                 \
  if ((STEPS) >= (K)) {                                                                                  \
    __asm__ volatile(MC_MVE_DOT_2X4_STEP("vmladava.s8") : MC_MVE_DOT_2X4_OPERANDS : : "q0", "q1", "q2", "memory"); \
  }
  if (row_steps <= MC_MVE_UNROLLED_STEPS && rows <= MC_MVE_UNROLLED_ROWS) {
    /* compile-time constants: straight-line code, no counter, the rows unrolled too (a row costs its
     * steps and two pointer additions) */
#define MC_MVE_DOT_2X4_SHORT_ROW(R)                                                                      \
  if ((R) < rows) {                                                                                      \
    if (R) {                                                                                             \
      x0 += skip0;                                                                                       \
      x1 += skip1;                                                                                       \
    }                                                                                                    \
    MC_MVE_DOT_2X4_STEP_IF((R) ? row_steps : steps, 1)                                                   \
    MC_MVE_DOT_2X4_STEP_IF((R) ? row_steps : steps, 2)                                                   \
    MC_MVE_DOT_2X4_STEP_IF((R) ? row_steps : steps, 3)                                                   \
    MC_MVE_DOT_2X4_STEP_IF((R) ? row_steps : steps, 4)                                                   \
  }
    MC_MVE_DOT_2X4_SHORT_ROW(0)
    MC_MVE_DOT_2X4_SHORT_ROW(1)
    MC_MVE_DOT_2X4_SHORT_ROW(2)
    MC_MVE_DOT_2X4_SHORT_ROW(3)
    MC_MVE_DOT_2X4_SHORT_ROW(4)
    MC_MVE_DOT_2X4_SHORT_ROW(5)
    MC_MVE_DOT_2X4_SHORT_ROW(6)
    MC_MVE_DOT_2X4_SHORT_ROW(7)
#undef MC_MVE_DOT_2X4_SHORT_ROW
  } else {
    for (r = 0; r < rows; ++r) {
      if (r) {
        x0 += skip0;
        x1 += skip1;
        steps = row_steps;
      }
      if (row_steps <= MC_MVE_UNROLLED_STEPS) {
        MC_MVE_DOT_2X4_STEP_IF(steps, 1)
        MC_MVE_DOT_2X4_STEP_IF(steps, 2)
        MC_MVE_DOT_2X4_STEP_IF(steps, 3)
        MC_MVE_DOT_2X4_STEP_IF(steps, 4)
        continue;
      }
      if (steps & 1) {
        __asm__ volatile(MC_MVE_DOT_2X4_STEP("vmladava.s8") : MC_MVE_DOT_2X4_OPERANDS : : "q0", "q1", "q2", "memory");
      }
      n = steps >> 1;
      if (n) {
        __asm__ volatile("1:\n\t" MC_MVE_DOT_2X4_STEP("vmladava.s8") MC_MVE_DOT_2X4_STEP("vmladava.s8")
                         "subs %[n], %[n], #1\n\t"
                         "bne 1b\n\t"
                         : MC_MVE_DOT_2X4_OPERANDS, [n] "+r"(n)
                         :
                         : "q0", "q1", "q2", "cc", "memory");
      }
    }
  }
#undef MC_MVE_DOT_2X4_STEP_IF
  __asm__("vmov %q[p0][2], %q[p0][0], %[s0], %[s2]\n\t"
          "vmov %q[p0][3], %q[p0][1], %[s1], %[s3]\n\t"
          "vmov %q[p1][2], %q[p1][0], %[t0], %[t2]\n\t"
          "vmov %q[p1][3], %q[p1][1], %[t1], %[t3]\n\t"
          : [p0] "=&w"(*p0), [p1] "=&w"(*p1)
          : [s0] "r"(s0), [s1] "r"(s1), [s2] "r"(s2), [s3] "r"(s3), [t0] "r"(t0), [t1] "r"(t1), [t2] "r"(t2),
            [t3] "r"(t3));
#undef MC_MVE_DOT_2X4_STEP
#undef MC_MVE_DOT_2X4_OPERANDS
#elif MC_MVE
  int32_t a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int32_t r, k, c;
  for (r = 0; r < rows; ++r) {
    for (k = 0; k < row_steps; ++k) {
      const int8x16_t u = vldrbq_s8(x0 + r * stride0 + 16 * k), v = vldrbq_s8(x1 + r * stride1 + 16 * k);
      for (c = 0; c < 4; ++c, w += 16) {
        const int8x16_t wc = vldrbq_s8(w);
        a[c] = vmladavaq_s8(a[c], u, wc);
        a[4 + c] = vmladavaq_s8(a[4 + c], v, wc);
      }
    }
  }
  *p0 = vldrwq_s32(a);
  *p1 = vldrwq_s32(a + 4);
#else
  int32_t r, k, c;
  for (c = 0; c < 4; ++c) {
    uint32_t s = 0, t = 0;
    for (r = 0; r < rows; ++r) {
      for (k = 0; k < 16 * row_steps; ++k) {
        const int32_t wk = w[(r * row_steps + k / 16) * 64 + c * 16 + k % 16];
        s += (uint32_t)((int32_t)x0[r * stride0 + k] * wk);
        t += (uint32_t)((int32_t)x1[r * stride1 + k] * wk);
      }
    }
    p0->v[c] = (int32_t)s;
    p1->v[c] = (int32_t)t;
  }
#endif
}

/* mc_mve_dot_2x4_rows for one pixel (the last of an odd count, or a layer's only one: a
 * FULLY_CONNECTED's batch of one): *p0 = its sums against the block of 4 channels. 9 instructions per
 * 64 MACs (VLDRB of x, then VLDRB + VMLADAVA.S8 per channel), where pairing the pixel with itself
 * took 15. */
static MC_MVE_INLINE void mc_mve_dot_1x4_rows(const int8_t* x0, int32_t stride0, const int8_t* w, int32_t rows,
                                              int32_t row_steps, mc_v4* p0) {
  int32_t r, k;
#if MC_MVE
  int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (r = 0; r < rows; ++r, x0 += stride0) {
    const int8_t* x = x0;
    for (k = 0; k < row_steps; ++k, x += 16, w += 64) {
      const int8x16_t v = vldrbq_s8(x);
      s0 = vmladavaq_s8(s0, v, vldrbq_s8(w));
      s1 = vmladavaq_s8(s1, v, vldrbq_s8(w + 16));
      s2 = vmladavaq_s8(s2, v, vldrbq_s8(w + 32));
      s3 = vmladavaq_s8(s3, v, vldrbq_s8(w + 48));
    }
  }
  *p0 = vsetq_lane_s32(s3, vsetq_lane_s32(s2, vsetq_lane_s32(s1, vdupq_n_s32(s0), 1), 2), 3);
#else
  int32_t c;
  for (c = 0; c < 4; ++c) {
    uint32_t s = 0;
    for (r = 0; r < rows; ++r) {
      for (k = 0; k < 16 * row_steps; ++k) {
        s += (uint32_t)((int32_t)x0[r * stride0 + k] * w[(r * row_steps + k / 16) * 64 + c * 16 + k % 16]);
      }
    }
    p0->v[c] = (int32_t)s;
  }
#endif
}

/* ---- AVERAGE_POOL_2D (8 channels) and MAX_POOL_2D (16 channels) ------------------------------------------------------------------ */

/* dst[0..7] = TFLM's average of a rows x cols window of 8 int8 channels at src (pixels `pixel` bytes
 * apart, `row_skip` more bytes from the end of a row to the next): the sum (int16 lanes: at most 255
 * taps x 128 < 2^15), then sign(s) * ((|s| + count / 2) / count) (rounding half away from zero),
 * the division as (t * magic) >> (32 + shift), which the code generator checked for every t the sum
 * can reach; clamped to [lo, hi]. */
static MC_MVE_INLINE void mc_mve_avgpool8(int8_t* dst, const int8_t* src, int32_t rows, int32_t cols, int32_t pixel,
                                          int32_t row_skip, int32_t count, int32_t magic, int32_t shift, int32_t lo,
                                          int32_t hi) {
  int32_t fy, fx;
#if MC_MVE
  int16x8_t acc = vdupq_n_s16(0);
  int32x4_t half[2];
  int h;
  for (fy = 0; fy < rows; ++fy, src += row_skip) {
    for (fx = 0; fx < cols; ++fx, src += pixel) acc = vaddq_s16(acc, vldrbq_s16(src));
  }
  half[0] = vmovlbq_s16(acc);
  half[1] = vmovltq_s16(acc);
  for (h = 0; h < 2; ++h) {
    const int32x4_t sign = vshrq_n_s32(half[h], 31);
    int32x4_t q = vmulhq_s32(vaddq_n_s32(vabsq_s32(half[h]), count / 2), vdupq_n_s32(magic));
    q = vshlq_s32(q, vdupq_n_s32(-shift));
    q = vsubq_s32(veorq_s32(q, sign), sign);
    half[h] = vminq_s32(vmaxq_s32(q, vdupq_n_s32(lo)), vdupq_n_s32(hi));
  }
  vstrbq_s16(dst, vmovntq_s32(vmovnbq_s32(vdupq_n_s16(0), half[0]), half[1]));
#else
  int32_t sum[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int32_t c;
  (void)magic;
  (void)shift;
  for (fy = 0; fy < rows; ++fy, src += row_skip) {
    for (fx = 0; fx < cols; ++fx, src += pixel) {
      for (c = 0; c < 8; ++c) sum[c] += src[c];
    }
  }
  for (c = 0; c < 8; ++c) {
    const int32_t avg = sum[c] > 0 ? (sum[c] + count / 2) / count : (sum[c] - count / 2) / count;
    dst[c] = (int8_t)MC_CLAMP(avg, lo, hi);
  }
#endif
}

/* dst[0..15] = the maximum of a rows x cols window of 16 int8 channels at src (pixels `pixel` bytes
 * apart, `row_skip` more bytes from the end of a row to the next), clamped to [lo, hi]. */
static MC_MVE_INLINE void mc_mve_maxpool16(int8_t* dst, const int8_t* src, int32_t rows, int32_t cols, int32_t pixel,
                                           int32_t row_skip, int32_t lo, int32_t hi) {
  int32_t fy, fx;
#if MC_MVE
  int8x16_t m = vdupq_n_s8(-128);
  for (fy = 0; fy < rows; ++fy, src += row_skip) {
    for (fx = 0; fx < cols; ++fx, src += pixel) m = vmaxq_s8(m, vldrbq_s8(src));
  }
  vstrbq_s8(dst, vminq_s8(vmaxq_s8(m, vdupq_n_s8((int8_t)lo)), vdupq_n_s8((int8_t)hi)));
#else
  int32_t m[16];
  int32_t c;
  for (c = 0; c < 16; ++c) m[c] = -128;
  for (fy = 0; fy < rows; ++fy, src += row_skip) {
    for (fx = 0; fx < cols; ++fx, src += pixel) {
      for (c = 0; c < 16; ++c) m[c] = MC_MAX(m[c], (int32_t)src[c]);
    }
  }
  for (c = 0; c < 16; ++c) dst[c] = (int8_t)MC_CLAMP(m[c], lo, hi);
#endif
}

/* ---- ADD / SUB of int8 tensors of one shape ------------------------------------------------------ */

/* TFLM's RoundingDivideByPOT(x, r) (r >= 0) of 4 lanes: VRSHL by -r after adding -1 to negative
 * lanes (only when r > 0). */
#if MC_MVE
static MC_MVE_INLINE int32x4_t mc_v4_rdivpot(int32x4_t x, int32_t r) {
  if (r == 0) return x;
  return vrshlq_n_s32(vqaddq_s32(x, vshrq_n_s32(x, 31)), -r);
}

/* TFLM's input rescaling of 4 int8 lanes: MultiplyByQuantizedMultiplierSmallerThanOneExp(
 * (x + offset) << left_shift, m, -r); VMLAS computes x * 2^left_shift + offset * 2^left_shift. */
static MC_MVE_INLINE int32x4_t mc_v4_rescale_s8(int32x4_t x, int32x4_t scale, int32_t offset_scaled, int32_t m,
                                                int32_t r) {
  return mc_v4_rdivpot(vqrdmulhq_n_s32(vmlasq_n_s32(x, scale, offset_scaled), m), r);
}
#endif

/* y = clamp(rescale(sum) + zp) with sum = rescale1(x1) +/- rescale2(x2) (subtract: 0 or 1), n
 * elements, 4 per step (the n % 4 last ones predicated), as TFLM's int8 ADD and SUB; every shift right
 * (r1, r2, ro >= 0). y may be x1 or x2 (each step reads its inputs before it writes). */
static MC_MVE_INLINE void mc_mve_add_s8(const int8_t* x1, const int8_t* x2, int8_t* y, int32_t n, int subtract,
                                        int left_shift, int32_t off1, int32_t m1, int32_t r1, int32_t off2,
                                        int32_t m2, int32_t r2, int32_t mo, int32_t ro, int32_t zp, int32_t lo,
                                        int32_t hi) {
#if MC_MVE
  const int32x4_t scale = vdupq_n_s32((int32_t)1 << left_shift);
  const int32x4_t vlo = vdupq_n_s32(lo), vhi = vdupq_n_s32(hi);
  const int32_t o1 = (int32_t)((uint32_t)off1 << left_shift), o2 = (int32_t)((uint32_t)off2 << left_shift);
  int32_t i;
#define MC_MVE_ADD_STEP(LOAD1, LOAD2, STORE)                                                                \
  do {                                                                                                       \
    const int32x4_t a_ = mc_v4_rescale_s8(LOAD1, scale, o1, m1, r1);                                          \
    const int32x4_t b_ = mc_v4_rescale_s8(LOAD2, scale, o2, m2, r2);                                          \
    int32x4_t v_ = mc_v4_rdivpot(vqrdmulhq_n_s32(subtract ? vsubq_s32(a_, b_) : vaddq_s32(a_, b_), mo), ro);   \
    v_ = vminq_s32(vmaxq_s32(vaddq_n_s32(v_, zp), vlo), vhi);                                                   \
    STORE;                                                                                                   \
  } while (0)
  for (i = n >> 2; i > 0; --i, x1 += 4, x2 += 4, y += 4) {
    MC_MVE_ADD_STEP(vldrbq_s32(x1), vldrbq_s32(x2), vstrbq_s32(y, v_));
  }
  if (n & 3) {
    const mve_pred16_t p = vctp32q((uint32_t)(n & 3));
    MC_MVE_ADD_STEP(vldrbq_z_s32(x1, p), vldrbq_z_s32(x2, p), vstrbq_p_s32(y, v_, p));
  }
#undef MC_MVE_ADD_STEP
#else
  int32_t i;
  for (i = 0; i < n; ++i) {
    const int32_t a = mc_requantize((int32_t)((uint32_t)(x1[i] + off1) << left_shift), m1, -r1);
    const int32_t b = mc_requantize((int32_t)((uint32_t)(x2[i] + off2) << left_shift), m2, -r2);
    const int32_t v = mc_requantize(subtract ? a - b : a + b, mo, -ro) + zp;
    y[i] = (int8_t)MC_CLAMP(v, lo, hi);
  }
#endif
}

#endif /* MICROCOMPILER_KERNEL_MVE_H_ */
