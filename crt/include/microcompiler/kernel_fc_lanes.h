/* The lanes FULLY_CONNECTED kernel over 128-input chunks, a whole layer pass in one routine
 * (rows4 "extract": "lanes", "unroll": 32; on top of kernel_simd.h, whose mc_dot_r4_s8l explains
 * the lanes encoding: the accumulators hold 256 * acc).
 *
 * mc_fc_l128_run runs 4 output rows at a time over one chunk of 128 inputs (32 groups of 4, expanded
 * in the scratch as P, Q pairs) to the end of the weight stream. On the DSP path it is one assembly
 * routine: the chunk's 16 double steps unrolled (per 4 rows x 8 inputs one LDM of the 4 expanded
 * words, two LDM of 4 weight words, 8 SXTB16 and 16 SMLAD: 27 instructions per 32 MACs, no loop
 * counter), entered once per 4 rows and left through the pass's epilogue (one LDR PC):
 *   head: the start values from the weight stream (4 words before the block's weights: the bias)
 *         or from the partial sums at y;
 *   end:  requantized int8 outputs, or the partial sums stored back to y.
 * The requantization works on the 256-scaled accumulator s directly: SMMLA (truncating) with
 * C = 64 + 128 c (c = 2^(r-1) + zero point * 2^r, mc_requant_fast) then >> (r + 7) is exact:
 *   floor((C + floor(s M / 2^32)) / 2^(r+7)) = floor(floor((C + floor(128 v)) / 128) / 2^r)
 *     = floor((c + floor((floor(128 v) + 64) / 128)) / 2^r) = floor((c + floor(v + 1/2)) / 2^r)
 * with v = 2 acc M / 2^32 (s = 256 acc = 128 * 2 acc), floor(v + 1/2) being SMMLAR(2 acc, M) (nested
 * floors of divisions by integers, an integer added inside). A layer whose clamp starts below the output
 * zero point ("signed") subtracts 128 from C + floor(s M / 2^32) for s < 0: c - 1 before the shift by r,
 * TFLM's rounding of negative values (mc_requant_fast). The compiler checks |C| < 2^30 and r + 7 <= 31.
 */
#ifndef MICROCOMPILER_KERNEL_FC_LANES_H_
#define MICROCOMPILER_KERNEL_FC_LANES_H_

#include <stdint.h>

#include "microcompiler/kernel_simd.h"

/* One pass: xs the expanded chunk (64 words), y the int8 outputs or int32 partial sums, m and c the
 * requantization (c = 64 + 128 * (2^(r-1) + zero point * 2^r)), sh = r + 7, w..wend the weight stream,
 * mode = MC_FC_L128_* (head + end), acc the partial sums a head from them reads (may equal y). The
 * first six fields are copied to the routine's stack frame in this order. */
typedef struct {
  const int32_t* xs;
  void* y;
  int32_t m, c, sh;
  const int32_t* wend;
  const int32_t* w;
  int32_t mode;
  const int32_t* acc;
} mc_fc_l128_args;

/* head: + 0 the start values from the weight stream, + 1 from the partial sums at y; end: + 0
 * requantized with the clamp at or above the output zero point (no correction for negative sums),
 * + 2 with it, + 4 the partial sums stored to y */
enum { MC_FC_L128_FROM_ACC = 1, MC_FC_L128_SIGNED = 2, MC_FC_L128_PARTIAL = 4 };

#if MC_DSP_ASM
/* 4 rows x 8 inputs: r0-r3 the sums, r4 the expanded input, r5 the weights, r6-r9 P0 Q0 P1 Q1,
   r10-r12 and lr the weight words */
#define MC_FC_L128_HALF(P, Q)            \
  "ldmia r5!, {r10, r11, r12, lr}\n\t" \
  "smlad r0, " P ", r10, r0\n\t"       \
  "sxtb16 r10, r10\n\t"                \
  "smlad r0, " Q ", r10, r0\n\t"       \
  "smlad r1, " P ", r11, r1\n\t"       \
  "sxtb16 r11, r11\n\t"                \
  "smlad r1, " Q ", r11, r1\n\t"       \
  "smlad r2, " P ", r12, r2\n\t"       \
  "sxtb16 r12, r12\n\t"                \
  "smlad r2, " Q ", r12, r2\n\t"       \
  "smlad r3, " P ", lr, r3\n\t"        \
  "sxtb16 lr, lr\n\t"                  \
  "smlad r3, " Q ", lr, r3\n\t"
#define MC_FC_L128_STEP "ldmia r4!, {r6, r7, r8, r9}\n\t" MC_FC_L128_HALF("r6", "r7") MC_FC_L128_HALF("r8", "r9")
#define MC_FC_L128_STEP4 MC_FC_L128_STEP MC_FC_L128_STEP MC_FC_L128_STEP MC_FC_L128_STEP
/* the frame: [sp] xs, y, m, c, sh, wend, [sp + 24] the epilogue's address, [sp + 28] acc; r4, r6-r10
   reloaded by one LDM (xs back in r4 for the next block) */
#define MC_FC_L128_RELOAD "ldm sp, {r4, r6, r7, r8, r9, r10}\n\t"
/* one output: r7 = m, r8 = c, r9 = sh, y in r6 */
#define MC_FC_L128_OUT(S)             \
  "smmla " S ", " S ", r7, r8\n\t"   \
  "asr " S ", " S ", r9\n\t"         \
  "ssat " S ", #8, " S "\n\t"        \
  "strb " S ", [r6], #1\n\t"
#define MC_FC_L128_OUT_SIGNED(S)       \
  "smmla r11, " S ", r7, r8\n\t"      \
  "asr " S ", " S ", #31\n\t"         \
  "add r11, r11, " S ", lsl #7\n\t"   \
  "asr r11, r11, r9\n\t"              \
  "ssat r11, #8, r11\n\t"             \
  "strb r11, [r6], #1\n\t"
/* the end of a block: y stored back, the next block (HEAD: 1 = from the bias, 2 = from y) or done */
#define MC_FC_L128_NEXT(HEAD) \
  "str r6, [sp, #4]\n\t"      \
  "cmp r5, r10\n\t"           \
  "bne " HEAD "b\n\t"         \
  "b 9f\n\t"
#define MC_FC_L128_OUT4 MC_FC_L128_OUT("r0") MC_FC_L128_OUT("r1") MC_FC_L128_OUT("r2") MC_FC_L128_OUT("r3")
#define MC_FC_L128_OUT4_SIGNED \
  MC_FC_L128_OUT_SIGNED("r0") MC_FC_L128_OUT_SIGNED("r1") MC_FC_L128_OUT_SIGNED("r2") MC_FC_L128_OUT_SIGNED("r3")
/* mode k: the epilogue's address (Thumb bit set) into the frame, then the first block's head */
#define MC_FC_L128_MODE(K, EPI, HEAD) \
  "cmp r8, #" #K "\n\t"               \
  "bne 3" #K "f\n\t"                  \
  "adr.w r12, " EPI "f\n\t"             \
  "orr r12, r12, #1\n\t"              \
  "str r12, [sp, #24]\n\t"            \
  "b " HEAD "f\n\t"                   \
  "3" #K ":\n\t"

static __attribute__((naked, noinline)) void mc_fc_l128_asm(__attribute__((unused)) const mc_fc_l128_args* a) {
  __asm__ volatile(
      "push {r4-r11, lr}\n\t"
      "sub sp, #32\n\t"
      "ldm r0, {r1, r2, r3, r4, r5, r6, r7, r8, r9}\n\t"
      "stm sp, {r1, r2, r3, r4, r5, r6}\n\t"
      "str r9, [sp, #28]\n\t"
      "mov r4, r1\n\t"
      "mov r5, r7\n\t"
      MC_FC_L128_MODE(0, "40", "1")
      MC_FC_L128_MODE(1, "41", "2")
      MC_FC_L128_MODE(2, "42", "1")
      MC_FC_L128_MODE(3, "43", "2")
      MC_FC_L128_MODE(4, "44", "1")
      MC_FC_L128_MODE(5, "45", "2")
      "b 9f\n\t"
      "2:\n\t" /* from the partial sums at y */
      "ldr r6, [sp, #28]\n\t"
      "ldmia r6!, {r0, r1, r2, r3}\n\t"
      "str r6, [sp, #28]\n\t"
      "b 5f\n\t"
      "1:\n\t" /* from the weight stream */
      "ldmia r5!, {r0, r1, r2, r3}\n\t"
      "5:\n\t"
      MC_FC_L128_STEP4 MC_FC_L128_STEP4 MC_FC_L128_STEP4 MC_FC_L128_STEP4
      "ldr pc, [sp, #24]\n\t"
      "40:\n\t" MC_FC_L128_RELOAD MC_FC_L128_OUT4 MC_FC_L128_NEXT("1")
      "41:\n\t" MC_FC_L128_RELOAD MC_FC_L128_OUT4 MC_FC_L128_NEXT("2")
      "42:\n\t" MC_FC_L128_RELOAD MC_FC_L128_OUT4_SIGNED MC_FC_L128_NEXT("1")
      "43:\n\t" MC_FC_L128_RELOAD MC_FC_L128_OUT4_SIGNED MC_FC_L128_NEXT("2")
      "44:\n\t" MC_FC_L128_RELOAD "stmia r6!, {r0, r1, r2, r3}\n\t" MC_FC_L128_NEXT("1")
      "45:\n\t" MC_FC_L128_RELOAD "stmia r6!, {r0, r1, r2, r3}\n\t" MC_FC_L128_NEXT("2")
      "9:\n\t"
      "add sp, #32\n\t"
      "pop {r4-r11, pc}\n\t");
}
#endif

/* One pass over the chunk (see above); the same arithmetic in C off the DSP path. */
static inline void mc_fc_l128_run(const mc_fc_l128_args* a) {
#if MC_DSP_ASM
  mc_fc_l128_asm(a);
#else
  const int32_t* w = a->w;
  const int32_t* acc = a->acc;
  int32_t* part = (int32_t*)a->y;
  int8_t* y = (int8_t*)a->y;
  while (w != a->wend) {
    int32_t s[4], j, k;
    if (a->mode & MC_FC_L128_FROM_ACC) {
      memcpy(s, acc, sizeof s);
      acc += 4;
    } else {
      memcpy(s, w, sizeof s);
      w += 4;
    }
    for (k = 0; k < 32; ++k, w += 4) {
      const int32_t p = a->xs[2 * k], q = a->xs[2 * k + 1];
      for (j = 0; j < 4; ++j) s[j] = mc_smlad(q, mc_sxtb16(w[j]), mc_smlad(p, w[j], s[j]));
    }
    if (a->mode & MC_FC_L128_PARTIAL) {
      memcpy(part, s, sizeof s);
      part += 4;
      continue;
    }
    for (j = 0; j < 4; ++j) {
      /* SMMLA: c + the high word of s * m (truncated) */
      int32_t t = (int32_t)((uint32_t)a->c + (uint32_t)(int32_t)(((int64_t)s[j] * a->m) >> 32));
      if (a->mode & MC_FC_L128_SIGNED) t = (int32_t)((uint32_t)t - (s[j] < 0 ? 128u : 0u));
      *y++ = (int8_t)MC_SSAT8(t >> a->sh);
    }
  }
#endif
}

/* The chunk's 32 groups of 4 inputs x expanded into xs, then mc_fc_l128_run; returns the weight
 * stream's end. */
static inline const int32_t* mc_fc_l128(int32_t* xs, const int8_t* x, void* y, const int32_t* acc, const int32_t* w,
                                        int32_t words, int32_t m, int32_t c, int32_t sh, int32_t mode) {
  mc_fc_l128_args a;
  mc_expand_s8l(xs, x, 32);
  a.xs = xs;
  a.y = y;
  a.m = m;
  a.c = c;
  a.sh = sh;
  a.wend = w + words;
  a.w = w;
  a.mode = mode;
  a.acc = acc;
  mc_fc_l128_run(&a);
  return a.wend;
}

#endif /* MICROCOMPILER_KERNEL_FC_LANES_H_ */
