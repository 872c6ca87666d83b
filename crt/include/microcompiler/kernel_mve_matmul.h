/* Helium (MVE) building blocks of issue 21's matmul-like kernels, with portable fallbacks (as
 * kernel_mve.h, whose blocks of 4 rows, requantization records and mc_v4 lanes they use): the
 * matrix-vector product of the LSTM gates ("mve-rows4", ops/fast/lstm_gates.py), the BATCH_MATMUL
 * right-hand side's packing (strided 16-byte gathers) and zero-point sums ("mve-dot",
 * ops/fast/batch_matmul_mve.py), and the int16 BATCH_MATMUL's 64-bit dot products ("mve-s16").
 * On the host build the same arithmetic in plain C, bit for bit.
 */
#ifndef MICROCOMPILER_KERNEL_MVE_MATMUL_H_
#define MICROCOMPILER_KERNEL_MVE_MATMUL_H_

#include <stdint.h>

#include "microcompiler/kernel_math.h"
#include "microcompiler/kernel_mve.h"

/* One input vector x against a block of 4 rows w (the layout above), `steps` chunks of 16 inputs
 * (steps >= 0): p[c] = sum_k x[k] * w_c[k] (the sums start at 0). MVE: 9 instructions per 64 MACs
 * (VLDRB of x, then VLDRB + VMLADAVA.S8 per row), for the matrix-vector products (the LSTM gates). */
static MC_MVE_INLINE mc_v4 mc_mve_dot_1x4(const int8_t* x, const int8_t* w, int32_t steps) {
#if MC_MVE
  int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int32x4_t p;
  for (; steps > 0; --steps, x += 16, w += 64) {
    const int8x16_t v = vldrbq_s8(x);
    s0 = vmladavaq_s8(s0, v, vldrbq_s8(w));
    s1 = vmladavaq_s8(s1, v, vldrbq_s8(w + 16));
    s2 = vmladavaq_s8(s2, v, vldrbq_s8(w + 32));
    s3 = vmladavaq_s8(s3, v, vldrbq_s8(w + 48));
  }
  p = vdupq_n_s32(s0);
  p = vsetq_lane_s32(s1, p, 1);
  p = vsetq_lane_s32(s2, p, 2);
  return vsetq_lane_s32(s3, p, 3);
#else
  mc_v4 p;
  int32_t k, c;
  for (c = 0; c < 4; ++c) {
    uint32_t s = 0;
    for (k = 0; k < 16 * steps; ++k) s += (uint32_t)((int32_t)x[k] * (int32_t)w[(k / 16) * 64 + c * 16 + k % 16]);
    p.v[c] = (int32_t)s;
  }
  return p;
#endif
}

/* a + b and a + n, lane by lane, modulo 2^32 (TFLM's int32 sums). */
static MC_MVE_INLINE mc_v4 mc_v4_add(mc_v4 a, mc_v4 b) {
#if MC_MVE
  return vaddq_s32(a, b);
#else
  int i;
  for (i = 0; i < 4; ++i) a.v[i] = (int32_t)((uint32_t)a.v[i] + (uint32_t)b.v[i]);
  return a;
#endif
}

static MC_MVE_INLINE mc_v4 mc_v4_add_n(mc_v4 a, int32_t n) {
#if MC_MVE
  return vaddq_n_s32(a, n);
#else
  int i;
  for (i = 0; i < 4; ++i) a.v[i] = (int32_t)((uint32_t)a.v[i] + (uint32_t)n);
  return a;
#endif
}

/* The 4 lanes to int32 dst[0..3]. */
static MC_MVE_INLINE void mc_v4_store_s32(int32_t* dst, mc_v4 a) {
#if MC_MVE
  vstrwq_s32(dst, a);
#else
  memcpy(dst, a.v, sizeof a.v);
#endif
}

/* acc + the sum of the 16 int8 at p (VADDVA.S8), modulo 2^32. */
static MC_MVE_INLINE int32_t mc_mve_sum16_s8(const int8_t* p, int32_t acc) {
#if MC_MVE
  return vaddvaq_s8(acc, vldrbq_s8(p));
#else
  int k;
  uint32_t s = (uint32_t)acc;
  for (k = 0; k < 16; ++k) s += (uint32_t)(int32_t)p[k];
  return (int32_t)s;
#endif
}

/* d[t] = s[t * stride] for t < n, d[t] = 0 for n <= t < 16 (1 <= n <= 16; 15 * stride < 2^16): one
 * 16-byte chunk of a strided column (VLDRB gathers of the even and odd t as int16 lanes, narrowed
 * back into one vector), or of a contiguous one (stride 1: one predicated VLDRB). */
static MC_MVE_INLINE void mc_mve_gather16_s8(int8_t* d, const int8_t* s, int32_t stride, int32_t n) {
#if MC_MVE
  if (stride == 1) {
    vstrbq_s8(d, vldrbq_z_s8(s, vctp8q((uint32_t)n)));
  } else {
    const uint16x8_t even = vmulq_n_u16(vidupq_n_u16(0, 2), (uint16_t)stride);
    const uint16x8_t odd = vaddq_n_u16(even, (uint16_t)stride);
    const int16x8_t e = vldrbq_gather_offset_z_s16(s, even, vctp16q((uint32_t)(n + 1) >> 1));
    const int16x8_t o = vldrbq_gather_offset_z_s16(s, odd, vctp16q((uint32_t)n >> 1));
    vstrbq_s8(d, vmovntq_s16(vmovnbq_s16(vdupq_n_s8(0), e), o));
  }
#else
  int32_t t;
  for (t = 0; t < 16; ++t) d[t] = t < n ? s[t * stride] : 0;
#endif
}

/* dst[0..3] = sat16(sat16(a) + sat16(b)) (the LSTM gate: input FC part + recurrent FC part, each
 * saturated to int16, added with saturation). */
static MC_MVE_INLINE void mc_v4_store_sum_s16(int16_t* dst, mc_v4 a, mc_v4 b) {
#if MC_MVE
  const int32x4_t lo = vdupq_n_s32(-32768), hi = vdupq_n_s32(32767);
  const int32x4_t s = vaddq_s32(vminq_s32(vmaxq_s32(a, lo), hi), vminq_s32(vmaxq_s32(b, lo), hi));
  vstrhq_s32(dst, vminq_s32(vmaxq_s32(s, lo), hi));
#else
  int i;
  for (i = 0; i < 4; ++i) {
    const int32_t s = MC_CLAMP(a.v[i], -32768, 32767) + MC_CLAMP(b.v[i], -32768, 32767);
    dst[i] = (int16_t)MC_CLAMP(s, -32768, 32767);
  }
#endif
}

/* ---- int16: 4 columns x 8 k, 64-bit sums ------------------------------------------------------- */

/* acc[c] += sum_k x[k] * w_c[k] (c = 0..3) over `steps` chunks of 8 int16 inputs, w in blocks of 4
 * columns x 8 k (per chunk the 8 int16 of columns 0, 1, 2, 3): VLDRH + VMLALDAVA.S16 (8 int16
 * products summed into a 64-bit accumulator, exact: TFLM's int64 sums of int16 x int16). */
static MC_MVE_INLINE void mc_mve_dot_1x4_s16(const int16_t* x, const int16_t* w, int32_t steps, int64_t acc[4]) {
#if MC_MVE
  int64_t s0 = acc[0], s1 = acc[1], s2 = acc[2], s3 = acc[3];
  for (; steps > 0; --steps, x += 8, w += 32) {
    const int16x8_t v = vldrhq_s16(x);
    s0 = vmlaldavaq_s16(s0, v, vldrhq_s16(w));
    s1 = vmlaldavaq_s16(s1, v, vldrhq_s16(w + 8));
    s2 = vmlaldavaq_s16(s2, v, vldrhq_s16(w + 16));
    s3 = vmlaldavaq_s16(s3, v, vldrhq_s16(w + 24));
  }
  acc[0] = s0;
  acc[1] = s1;
  acc[2] = s2;
  acc[3] = s3;
#else
  int32_t k, c;
  for (c = 0; c < 4; ++c) {
    for (k = 0; k < 8 * steps; ++k) acc[c] += (int64_t)((int32_t)x[k] * (int32_t)w[(k / 8) * 32 + c * 8 + k % 8]);
  }
#endif
}

/* d[t] = s[t * stride] for t < n, d[t] = 0 for n <= t < 8 (1 <= n <= 8; 7 * stride < 2^16): one chunk
 * of 8 int16 of a strided column (a VLDRH gather), or of a contiguous one (stride 1: a predicated VLDRH). */
static MC_MVE_INLINE void mc_mve_gather8_s16(int16_t* d, const int16_t* s, int32_t stride, int32_t n) {
#if MC_MVE
  const mve_pred16_t p = vctp16q((uint32_t)n);
  if (stride == 1) {
    vstrhq_s16(d, vldrhq_z_s16(s, p));
  } else {
    vstrhq_s16(d, vldrhq_gather_shifted_offset_z_s16(s, vmulq_n_u16(vidupq_n_u16(0, 1), (uint16_t)stride), p));
  }
#else
  int32_t t;
  for (t = 0; t < 8; ++t) d[t] = t < n ? s[t * stride] : 0;
#endif
}

#endif /* MICROCOMPILER_KERNEL_MVE_MATMUL_H_ */
