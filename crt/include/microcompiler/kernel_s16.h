/* Dot products of the fast int16x8 kernels (int16 activations, int8 weights; ops/fast/s16.py).
 *
 * Two int16 activations make one pair word as they lie in memory, and the weights are stored as
 * int16 pairs at compile time, so SMLAD does two multiply-accumulates per instruction (what
 * CMSIS-NN's s16 kernels do). SMLAD sums modulo 2^32; TFLM sums int16 x int8 products in int64.
 * The code generator proves that every 32-bit partial sum it asks for stays inside int32 (from the
 * weights: |x| <= 2^15, so a run of taps whose |weights| add up to W sums to at most 2^15 * W), and
 * adds the partial sums into int64: the result is TFLM's int64 sum exactly.
 */
#ifndef MICROCOMPILER_KERNEL_S16_H_
#define MICROCOMPILER_KERNEL_S16_H_

#include <stdint.h>

#include "microcompiler/kernel_simd.h"

/* LO_, HI_ = P_[0], P_[1] and P_ += 2: one post-indexed LDRD on the DSP cores (P_ word-aligned;
 * GCC splits such loads into two LDR). Only for constant weights: nothing the kernel writes
 * aliases them, so the asm needs no memory clobber. */
#if MC_DSP_ASM
#define MC_LOAD_2WORDS(P_, LO_, HI_) __asm__("ldrd %0, %1, [%2], #8" : "=r"(LO_), "=r"(HI_), "+r"(P_))
#else
#define MC_LOAD_2WORDS(P_, LO_, HI_) ((LO_) = (P_)[0], (HI_) = (P_)[1], (P_) += 2)
#endif

/* Four rows at once: acc[j] += x . (row j) over `words` pairs of x (words even), the rows stored
 * interleaved per pair (w[4 * s + j] is pair s of row j). x needs 2-byte alignment only, w word
 * alignment (the weights are read two words per load). Returns w past the pairs read. */
static MC_ALWAYS_INLINE const int32_t* mc_dot4_s16(const int16_t* x, const int32_t* w, int32_t words,
                                                   int32_t acc[4]) {
  int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
  const int16_t* const end = x + 2 * words;
  while (x < end) {
    const int32_t x0 = mc_read_s16x2(x), x1 = mc_read_s16x2(x + 2);
    int32_t w0, w1, w2, w3;
    MC_LOAD_2WORDS(w, w0, w1);
    MC_LOAD_2WORDS(w, w2, w3);
    a0 = mc_smlad(x0, w0, a0);
    a1 = mc_smlad(x0, w1, a1);
    a2 = mc_smlad(x0, w2, a2);
    a3 = mc_smlad(x0, w3, a3);
    MC_LOAD_2WORDS(w, w0, w1);
    MC_LOAD_2WORDS(w, w2, w3);
    a0 = mc_smlad(x1, w0, a0);
    a1 = mc_smlad(x1, w1, a1);
    a2 = mc_smlad(x1, w2, a2);
    a3 = mc_smlad(x1, w3, a3);
    x += 4;
  }
  acc[0] = a0;
  acc[1] = a1;
  acc[2] = a2;
  acc[3] = a3;
  return w;
}

/* One row: acc + x . w over `words` pairs (words even; w word-aligned). */
static MC_ALWAYS_INLINE int32_t mc_dot1_s16(const int16_t* x, const int32_t* w, int32_t words, int32_t acc) {
  const int16_t* const end = x + 2 * words;
  while (x < end) {
    int32_t w0, w1;
    MC_LOAD_2WORDS(w, w0, w1);
    acc = mc_smlad(mc_read_s16x2(x), w0, acc);
    acc = mc_smlad(mc_read_s16x2(x + 2), w1, acc);
    x += 4;
  }
  return acc;
}

/* acc + x[0] * (low half of w): the last tap of an odd-length row (x[1] is not read). */
static MC_ALWAYS_INLINE int32_t mc_tap_s16(const int16_t* x, int32_t w, int32_t acc) {
  return mc_smlabb((int32_t)x[0], w, acc);
}

/* mc_requantize64(x, multiplier, shift) for a sum x that fits int32 (the code generator proves
 * it from the weights and bias), with mc_requantize64's reduced multiplier (<= 2^15) and total
 * right shift 15 - shift (1..62) computed at compile time: the same arithmetic, one SMULL. */
static MC_ALWAYS_INLINE int32_t mc_requantize64_s32(int32_t x, int32_t reduced, int total_shift) {
  return (int32_t)(((int64_t)x * reduced + ((int64_t)1 << (total_shift - 1))) >> total_shift);
}

/* acc + a.lo * b.lo + a.hi * b.hi in 64 bits (SMLALD): exact for any int16 lanes (int16 x int16). */
static MC_ALWAYS_INLINE int64_t mc_smlald(int32_t a, int32_t b, int64_t acc) {
#if MC_DSP_ASM
  return __smlald(a, b, acc);
#else
  return acc + (int64_t)(mc_lo16(a) * mc_lo16(b)) + (int64_t)(mc_hi16(a) * mc_hi16(b));
#endif
}

/* Four columns of int16 at once: acc[j] += x . (column j) over `words` pairs of x, the columns stored
 * interleaved per pair (w[4 * s + j] is pair s of column j), summed in 64 bits (SMLALD: TFLM's
 * int64 sums of int16 x int16 products). Plain loads: w may be packed at run time. Returns w past
 * the pairs read. */
static MC_ALWAYS_INLINE const int32_t* mc_dot4_s16x16(const int16_t* x, const int32_t* w, int32_t words,
                                                      int64_t acc[4]) {
  int64_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
  for (; words > 0; --words, x += 2, w += 4) {
    const int32_t xp = mc_read_s16x2(x);
    a0 = mc_smlald(xp, w[0], a0);
    a1 = mc_smlald(xp, w[1], a1);
    a2 = mc_smlald(xp, w[2], a2);
    a3 = mc_smlald(xp, w[3], a3);
  }
  acc[0] = a0;
  acc[1] = a1;
  acc[2] = a2;
  acc[3] = a3;
  return w;
}

/* One column: acc + x . w over `words` pairs, in 64 bits. */
static MC_ALWAYS_INLINE int64_t mc_dot1_s16x16(const int16_t* x, const int32_t* w, int32_t words, int64_t acc) {
  for (; words > 0; --words, x += 2, ++w) acc = mc_smlald(mc_read_s16x2(x), w[0], acc);
  return acc;
}

/* x saturated to int16 (SSAT #16 on the DSP cores). */
static MC_ALWAYS_INLINE int32_t mc_sat16(int32_t x) {
#if MC_DSP_ASM
  return __ssat(x, 16);
#else
  return MC_CLAMP(x, -32768, 32767);
#endif
}

#endif /* MICROCOMPILER_KERNEL_S16_H_ */
