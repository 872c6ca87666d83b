/* The "lanes" encoding (see mc_expand_s8l in kernel_simd.h) for the 4-pixel im2col CONV_2D kernel
 * (on top of kernel_simd.h).
 *
 * Each int8 weight word w = (w0, w1, w2, w3) is read as the int16 lanes (w0 + 256 w1, w2 + 256 w3)
 * (the compiler checks they fit); the column holds, per pixel and group of 4 inputs, the pairs
 * P = (x1, x3) and Q = (256 x0 - x1 + 127, 256 x2 - x3 + 127). SMLAD(P, w) + SMLAD(Q, SXTB16(w)) =
 * 256 (x0 w0 + x1 w1 + x2 w2 + x3 w3) + 127 (w0 + w2): one SXTB16 per weight word serves the 4
 * pixels, 12 instructions per 16 MACs (13 with two SXTB16 per word). The accumulators start at
 * 256 * bias - 127 * sum(w0 + w2) and end at 256 * acc (exact for |acc| < 2^23, checked by the
 * compiler), so acc >> 7 = 2 * acc feeds mc_requant_fast2.
 */
#ifndef MICROCOMPILER_KERNEL_LANES_H_
#define MICROCOMPILER_KERNEL_LANES_H_

#include <stdint.h>

#include "microcompiler/kernel_simd.h"

/* steps groups of 4 int8 from src into P, Q pairs, one pixel's column layout (8 words apart). */
static inline int32_t* mc_im2col_s8l(int32_t* d, const int8_t* src, int32_t steps) {
#if MC_DSP_ASM
  /* two groups per iteration, each pair stored by one STRD with write-back: 6 instructions per
     group with the loop instead of 8 */
  if (steps & 1) {
    mc_expand_s8l_group(d, src);
    src += 4;
    d += 8;
  }
  for (steps >>= 1; steps > 0; --steps) {
    const int32_t v0 = mc_read_s8x4(src), v1 = mc_read_s8x4(src + 4);
    src += 8;
    __asm__("strd %[p], %[q], [%[d]], #32"
            : [d] "+r"(d), "=m"(*(int32_t(*)[2])d)
            : [p] "r"(mc_sxtb16_ror8(v0)), [q] "r"(mc_lanes_q(v0)));
    __asm__("strd %[p], %[q], [%[d]], #32"
            : [d] "+r"(d), "=m"(*(int32_t(*)[2])d)
            : [p] "r"(mc_sxtb16_ror8(v1)), [q] "r"(mc_lanes_q(v1)));
  }
#else
  for (; steps > 0; --steps, src += 4, d += 8) mc_expand_s8l_group(d, src);
#endif
  return d;
}

/* steps groups of the same P, Q (padding: the input zero point expanded). */
static inline int32_t* mc_fill_col_s8l(int32_t* d, int32_t p, int32_t q, int32_t steps) {
  for (; steps > 0; --steps, d += 8) {
#if MC_DSP_ASM
    mc_store_pair(d, p, q);
#else
    d[0] = p;
    d[1] = q;
#endif
  }
  return d;
}

#if MC_DSP_ASM
/* one step (4 inputs) of the 4 pixels' sums s0..s3 against a weight word, each sum's first SMLAD
 * adding to the operand named B0..B3 (the sum itself, or the start value) */
#define MC_DOT_P4L_STEP_FROM(B0, B1, B2, B3)        \
  "ldr %[wo], [%[w]], #4\n\t"                       \
  "ldmia %[col]!, {%[c0], %[c1], %[c2], %[c3]}\n\t" \
  "sxtb16 %[we], %[wo]\n\t"                         \
  "smlad %[s0], %[c0], %[wo], %[" #B0 "]\n\t"       \
  "smlad %[s0], %[c1], %[we], %[s0]\n\t"            \
  "smlad %[s1], %[c2], %[wo], %[" #B1 "]\n\t"       \
  "smlad %[s1], %[c3], %[we], %[s1]\n\t"            \
  "ldmia %[col]!, {%[c0], %[c1], %[c2], %[c3]}\n\t" \
  "smlad %[s2], %[c0], %[wo], %[" #B2 "]\n\t"       \
  "smlad %[s2], %[c1], %[we], %[s2]\n\t"            \
  "smlad %[s3], %[c2], %[wo], %[" #B3 "]\n\t"       \
  "smlad %[s3], %[c3], %[we], %[s3]\n\t"
#define MC_DOT_P4L_STEP MC_DOT_P4L_STEP_FROM(s0, s1, s2, s3)
#endif

/* a[p] (256-scaled) += sum over steps of pixel p's P, Q pairs against the weight words w; returns w + steps. */
static MC_ALWAYS_INLINE const int32_t* mc_dot_p4_s8l(const int32_t* col, const int32_t* w, int32_t steps, int32_t* a0,
                                           int32_t* a1, int32_t* a2, int32_t* a3) {
  int32_t s0 = *a0, s1 = *a1, s2 = *a2, s3 = *a3;
#if MC_DSP_ASM
  MC_DOT4_REGISTERS(c0, c1, c2, c3);
  int32_t we, wo;
  MC_DOT4_DRIVE(MC_DOT_P4L_STEP, MC_DOT_P4_OPS);
#else
  int32_t i;
  for (i = 0; i < steps; ++i, col += 8, ++w) {
    const int32_t we = mc_sxtb16(*w);
    s0 = mc_smlad(col[1], we, mc_smlad(col[0], *w, s0));
    s1 = mc_smlad(col[3], we, mc_smlad(col[2], *w, s1));
    s2 = mc_smlad(col[5], we, mc_smlad(col[4], *w, s2));
    s3 = mc_smlad(col[7], we, mc_smlad(col[6], *w, s3));
  }
#endif
  *a0 = s0;
  *a1 = s1;
  *a2 = s2;
  *a3 = s3;
  return w;
}

/* mc_dot_p4_s8l with the 4 sums starting at one value b: its first step adds the products to b
 * (SMLAD's accumulator operand; s3 holds b until its own first SMLAD, one register fewer) instead
 * of copying b into each sum first, then the other steps-1 as mc_dot_p4_s8l (steps >= 1). Where
 * steps % 4 != 0 the first step takes the place of one mc_dot_p4_s8l runs before its loop: no more
 * code; otherwise 4 steps more code (~170 bytes) and one loop pass fewer. */
static MC_ALWAYS_INLINE const int32_t* mc_dot_p4_s8l_b(const int32_t* col, const int32_t* w, int32_t steps, int32_t b,
                                             int32_t* a0, int32_t* a1, int32_t* a2, int32_t* a3) {
#if MC_DSP_ASM
  int32_t s0, s1, s2, s3 = b;
  MC_DOT4_REGISTERS(c0, c1, c2, c3);
  int32_t we, wo;
  __asm__ volatile(MC_DOT_P4L_STEP_FROM(s3, s3, s3, s3)
                   : [s0] "=&r"(s0), [s1] "=&r"(s1), [s2] "=&r"(s2), [s3] "+r"(s3), [col] "+r"(col), [w] "+r"(w),
                     [we] "=&r"(we), [wo] "=&r"(wo), [c0] "=&r"(c0), [c1] "=&r"(c1), [c2] "=&r"(c2), [c3] "=&r"(c3)
                   :
                   : "memory");
  steps -= 1;
  MC_DOT4_DRIVE(MC_DOT_P4L_STEP, MC_DOT_P4_OPS);
  *a0 = s0;
  *a1 = s1;
  *a2 = s2;
  *a3 = s3;
  return w;
#else
  *a0 = *a1 = *a2 = *a3 = b;
  return mc_dot_p4_s8l(col, w, steps, a0, a1, a2, a3);
#endif
}

#if MC_DSP_ASM
#undef MC_DOT_P4L_STEP
#undef MC_DOT_P4L_STEP_FROM
#endif

#endif /* MICROCOMPILER_KERNEL_LANES_H_ */
