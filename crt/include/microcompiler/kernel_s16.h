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
 * GCC splits such loads into two LDR). The two words are a memory input of the asm, so the load
 * stays after the stores that wrote them (the weights widened into the scratch, mc_widen_s8). */
#if MC_DSP_ASM
#define MC_LOAD_2WORDS(P_, LO_, HI_)                                                                    \
  __asm__("ldrd %0, %1, [%2], #8" : "=r"(LO_), "=r"(HI_), "+r"(P_) : "m"(*(const int32_t(*)[2])(P_)))
#else
#define MC_LOAD_2WORDS(P_, LO_, HI_) ((LO_) = (P_)[0], (HI_) = (P_)[1], (P_) += 2)
#endif

/* One step of mc_dot4_s16: 4 taps x[0..3] of the four rows (8 pair words of w). Returns w past them. */
static MC_ALWAYS_INLINE const int32_t* mc_dot4_s16_step(const int16_t* x, const int32_t* w, int32_t acc[4]) {
  const int32_t x0 = mc_read_s16x2(x), x1 = mc_read_s16x2(x + 2);
  int32_t w0, w1, w2, w3;
  MC_LOAD_2WORDS(w, w0, w1);
  MC_LOAD_2WORDS(w, w2, w3);
  acc[0] = mc_smlad(x0, w0, acc[0]);
  acc[1] = mc_smlad(x0, w1, acc[1]);
  acc[2] = mc_smlad(x0, w2, acc[2]);
  acc[3] = mc_smlad(x0, w3, acc[3]);
  MC_LOAD_2WORDS(w, w0, w1);
  MC_LOAD_2WORDS(w, w2, w3);
  acc[0] = mc_smlad(x1, w0, acc[0]);
  acc[1] = mc_smlad(x1, w1, acc[1]);
  acc[2] = mc_smlad(x1, w2, acc[2]);
  acc[3] = mc_smlad(x1, w3, acc[3]);
  return w;
}

/* The weights of the four-row dot products: int16 pairs (mc_dot4_s16_step) or int8 words widened
 * in registers (mc_dot4_s16_s8_step, below). */
enum { MC_ROWS_S16 = 0, MC_ROWS_S8 = 1 };

static MC_ALWAYS_INLINE const int32_t* mc_dot4_s16_s8_step(const int16_t* x, const int32_t* w, int32_t a[4]);

/* The loop of the four-row dot products over the first `taps` int16 of x (x at 2-byte alignment;
 * taps a multiple of 4, of 8 with two steps per iteration), then one more step of 4 if odd_step:
 * the sums in locals (registers) rather than through acc, one step of 4 taps per iteration or two
 * (the loop control once per 16 or 32 SMLAD). weights and two_per_iteration are constants, folded
 * where this is inlined. Returns w past the words read. */
static MC_ALWAYS_INLINE const int32_t* mc_dot4_rows(const int16_t* x, const int32_t* w, int32_t taps, int32_t odd_step,
                                                    int32_t weights, int32_t two_per_iteration, int32_t acc[4]) {
  int32_t a[4];
  const int16_t* const end = x + taps;
  a[0] = acc[0], a[1] = acc[1], a[2] = acc[2], a[3] = acc[3];
  for (; x < end; x += two_per_iteration ? 8 : 4) {
    w = weights == MC_ROWS_S8 ? mc_dot4_s16_s8_step(x, w, a) : mc_dot4_s16_step(x, w, a);
    if (two_per_iteration) w = weights == MC_ROWS_S8 ? mc_dot4_s16_s8_step(x + 4, w, a) : mc_dot4_s16_step(x + 4, w, a);
  }
  if (odd_step) w = weights == MC_ROWS_S8 ? mc_dot4_s16_s8_step(x, w, a) : mc_dot4_s16_step(x, w, a);
  acc[0] = a[0];
  acc[1] = a[1];
  acc[2] = a[2];
  acc[3] = a[3];
  return w;
}

/* Four rows at once: acc[j] += x . (row j) over `words` pairs of x (words even), the rows stored
 * interleaved per pair (w[4 * s + j] is pair s of row j). x needs 2-byte alignment only, w word
 * alignment (the weights are read two words per load). Returns w past the pairs read. */
static MC_ALWAYS_INLINE const int32_t* mc_dot4_s16(const int16_t* x, const int32_t* w, int32_t words,
                                                   int32_t acc[4]) {
  return mc_dot4_rows(x, w, 2 * words, 0, MC_ROWS_S16, 0, acc);
}

/* mc_dot4_s16 with two steps (8 taps) per iteration, `words` a multiple of 4: the loop control
 * once per 16 SMLAD instead of once per 8. */
static MC_ALWAYS_INLINE const int32_t* mc_dot4_s16_x2(const int16_t* x, const int32_t* w, int32_t words,
                                                      int32_t acc[4]) {
  return mc_dot4_rows(x, w, 2 * words, 0, MC_ROWS_S16, 1, acc);
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

/* The int8-weight forms of mc_dot4_s16 / mc_dot1_s16 (FULLY_CONNECTED int16-rows4-s8): one int8
 * word holds 4 taps of a row, its bytes stored (w0, w2, w1, w3) at compile time (ops/fast/s16.py,
 * pack_rows_s8), so that SXTB16 gives the int16 pair (w0, w1) and SXTB16 ROR #8 the pair (w2, w3),
 * each multiplied with the activation pair by SMLAD: the weights are widened in registers and stay
 * at the model file's size in flash (two SXTB16 more per 4 taps than mc_dot4_s16). */
static MC_ALWAYS_INLINE void mc_smlad_s8x4(int32_t x0, int32_t x1, int32_t w, int32_t* acc) {
  *acc = mc_smlad(x1, mc_sxtb16_ror8(w), mc_smlad(x0, mc_sxtb16(w), *acc));
}

/* One step of mc_dot4_s16_s8: 4 taps x[0..3] of the four rows (4 int8 words of w). Returns w past them. */
static MC_ALWAYS_INLINE const int32_t* mc_dot4_s16_s8_step(const int16_t* x, const int32_t* w, int32_t a[4]) {
  const int32_t x0 = mc_read_s16x2(x), x1 = mc_read_s16x2(x + 2);
  int32_t w0, w1, w2, w3;
  MC_LOAD_2WORDS(w, w0, w1);
  MC_LOAD_2WORDS(w, w2, w3);
  mc_smlad_s8x4(x0, x1, w0, &a[0]);
  mc_smlad_s8x4(x0, x1, w1, &a[1]);
  mc_smlad_s8x4(x0, x1, w2, &a[2]);
  mc_smlad_s8x4(x0, x1, w3, &a[3]);
  return w;
}

/* Four rows at once: acc[j] += x . (row j) over `steps` steps of 4 taps, the rows interleaved per
 * step (w[4 * s + j] holds taps 4s..4s+3 of row j). x needs 2-byte alignment, w word alignment.
 * Two steps per iteration (the loop control once per 32 MACs), an odd last step after the loop.
 * Returns w past the words read. */
static MC_ALWAYS_INLINE const int32_t* mc_dot4_s16_s8(const int16_t* x, const int32_t* w, int32_t steps,
                                                      int32_t acc[4]) {
  return mc_dot4_rows(x, w, 4 * (steps & ~1), steps & 1, MC_ROWS_S8, 1, acc);
}

/* One row: acc + x . w over `steps` steps of 4 taps (one word each). */
static MC_ALWAYS_INLINE int32_t mc_dot1_s16_s8(const int16_t* x, const int32_t* w, int32_t steps, int32_t acc) {
  const int16_t* const end = x + 4 * steps;
  for (; x < end; x += 4) mc_smlad_s8x4(mc_read_s16x2(x), mc_read_s16x2(x + 2), *w++, &acc);
  return acc;
}

/* acc + x . (the first `taps` (1-3) taps of the int8 word w, stored as above): the row's last taps
 * (x[taps..3] are not read). */
static MC_ALWAYS_INLINE int32_t mc_tail_s16_s8(const int16_t* x, int32_t w, int taps, int32_t acc) {
  if (taps >= 2) acc = mc_smlad(mc_read_s16x2(x), mc_sxtb16(w), acc);
  if (taps == 1) acc = mc_smlabb((int32_t)x[0], mc_sxtb16(w), acc);
  if (taps == 3) acc = mc_smlabb((int32_t)x[2], mc_sxtb16_ror8(w), acc);
  return acc;
}

/* acc + x[0] * (low half of w): the last tap of an odd-length row (x[1] is not read). */
static MC_ALWAYS_INLINE int32_t mc_tap_s16(const int16_t* x, int32_t w, int32_t acc) {
  return mc_smlabb((int32_t)x[0], w, acc);
}

/* The int8 weights of a block widened into the int16 pairs the dot products above read: each int8
 * word (bytes b0 b1 b2 b3) becomes the pair words (b0, b2) and (b1, b3) (SXTB16, SXTB16 ROR #8).
 * The code generator orders the bytes so that the pairs come out in the order the dot products read
 * them (ops/fast/s16.py, pack_widened). d word-aligned, `words` int8 words from s. The kernels widen
 * one block of output channels once and reuse it for every output pixel: the weights stay int8 in
 * flash at the cost of two SXTB16 per 4 weights per layer, not per pixel. */
static inline void mc_widen_s8(int32_t* d, const int32_t* s, int32_t words) {
#if MC_DSP_ASM
  for (; words >= 4; words -= 4, d += 8) { /* 2 LDRD, 8 SXTB16, 4 STRD: 16 instructions per 16 weights */
    int32_t a, b, c, e;
    MC_LOAD_2WORDS(s, a, b);
    MC_LOAD_2WORDS(s, c, e);
    mc_store_pair(d, mc_sxtb16(a), mc_sxtb16_ror8(a));
    mc_store_pair(d + 2, mc_sxtb16(b), mc_sxtb16_ror8(b));
    mc_store_pair(d + 4, mc_sxtb16(c), mc_sxtb16_ror8(c));
    mc_store_pair(d + 6, mc_sxtb16(e), mc_sxtb16_ror8(e));
  }
#endif
  for (; words > 0; --words, d += 2) {
    const int32_t v = *s++;
    d[0] = mc_sxtb16(v);
    d[1] = mc_sxtb16_ror8(v);
  }
}

/* SXTB16 of x rotated right by 16 or 24 bits: the low half is byte 2 or byte 3 of x, sign-extended. */
#if MC_DSP_ASM
static inline int32_t mc_sxtb16_ror16(int32_t x) {
  int32_t r;
  __asm__("sxtb16 %0, %1, ror #16" : "=r"(r) : "r"(x));
  return r;
}
static inline int32_t mc_sxtb16_ror24(int32_t x) {
  int32_t r;
  __asm__("sxtb16 %0, %1, ror #24" : "=r"(r) : "r"(x));
  return r;
}
#else
static inline int32_t mc_sxtb16_ror16(int32_t x) {
  return mc_sxtb16((int32_t)(((uint32_t)x >> 16) | ((uint32_t)x << 16)));
}
static inline int32_t mc_sxtb16_ror24(int32_t x) {
  return mc_sxtb16((int32_t)(((uint32_t)x >> 24) | ((uint32_t)x << 8)));
}
#endif

/* The int8 weights of one channel widened one tap per word for SMLABB (the weight in the low half):
 * each int8 word (t0 t1 t2 t3) becomes 4 words whose low halves are t0, t1, t2, t3. */
static inline void mc_widen_s8_taps(int32_t* d, const int32_t* s, int32_t words) {
  for (; words > 0; --words, d += 4) {
    const int32_t v = *s++;
    d[0] = mc_sxtb16(v);
    d[1] = mc_sxtb16_ror8(v);
    d[2] = mc_sxtb16_ror16(v);
    d[3] = mc_sxtb16_ror24(v);
  }
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
