/* The lanes FULLY_CONNECTED kernel as one routine per layer (rows4 "extract": "lanes", "routine":
 * "l128"; on top of kernel_simd.h, whose mc_dot_r4_s8l explains the lanes encoding: the accumulators
 * hold 256 * acc), and its 8-input form MC_FC_L8 ("routine": "l8").
 *
 * mc_fc_l128_run runs a layer of 4k rows and 128n inputs (batch 1) in n passes over chunks of 128
 * inputs (32 groups of 4, expanded in the scratch as P, Q pairs), 4 output rows at a time. On the DSP
 * path it is one assembly routine per model (the layer's constants in flash, its C function a tail
 * call): a pass's 16 double steps unrolled (per 4 rows x 8 inputs one LDM of the 4 expanded words, two
 * LDM of 4 weight words, 8 SXTB16 and 16 SMLAD: 27 instructions per 32 MACs, no loop count), entered
 * once per 4 rows and left by one LDM of the frame with the PC into the pass's epilogue:
 *   head: the start values from the weight stream or from the partial sums in the scratch. In the
 *         first chunk each block's weights come after a record of 5 words: its 4 start values (the
 *         bias) and MC_FC_L128_GO, the body's address; the epilogue before it goes on with one LDM of
 *         the record into r0-r3 and the PC, no loop test. After the last block a terminator record
 *         (4 words unused) leaves the layer (MC_FC_L128_DONE) or goes on with its next chunk
 *         (MC_FC_L128_NEXT): 4 bytes of flash per block of the first chunk, 20 per layer, for 3
 *         instructions fewer per block;
 *   end:  requantized int8 outputs (the last pass: one naked function per shift, SSAT's immediate,
 *         going on with the next record, or in a chunked layer's last pass testing for the end and
 *         loading the next block's partial sums), or the partial sums stored back (the passes before
 *         it).
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

/* The inputs are taken swapped in pairs (x1 x0 x3 x2 per group of 4, the weights with them at compile
 * time): the lanes encoding's P = (x0, x2) is then SXTB16(v) and Q = (256 x1 - x0 + 127, 256 x3 - x2
 * + 127) is v ^ 0x007F007F (bytes 127 - x0, x1, 127 - x2, x3): 2 instructions per group of 4 inputs
 * where mc_expand_s8l takes 3. steps groups of 4 inputs x expanded to d (2 words per group). */
static inline void mc_expand_s8l_swapped(int32_t* d, const int8_t* x, int32_t steps) {
  for (; steps > 0; --steps, x += 4, d += 2) {
    d[0] = mc_pack16(x[0], x[2]);
    d[1] = mc_pack16(256 * x[1] - x[0] + 127, 256 * x[3] - x[2] + 127);
  }
}

/* One layer (batch 1): its constants, in flash. xs the scratch of one expanded chunk (64 words), acc
 * the int32 partial sums of the rows (chunks > 1), w the weight stream (per chunk and block of 4 rows
 * the 128 words of the 32 groups of 4 inputs, each block's record first in the first chunk, then the
 * terminator record), m and c the requantization (c = 64 + 128 * (2^(r-1) + zero point * 2^r), + 2^23 for r = 9), epi the last pass's
 * epilogue (MC_FC_L128_EPI, MC_FC_L128_EPI_CHUNKED: its shift sh = r + 7 an immediate), blocks = rows / 4, sh and mode
 * (MC_FC_L128_SIGNED for a clamp that starts below the output zero point) as numbers for the C path. */
typedef struct {
  int32_t* xs;
  int32_t* acc;
  const int32_t* w;
  int32_t m, c;
  void (*epi)(void);
  int32_t chunks, blocks, sh, mode;
} mc_fc_l128_layer;

enum { MC_FC_L128_SIGNED = 2 };

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
/* two groups of 4 inputs from r0 (any alignment) expanded to P0 Q0 P1 Q1 at r4 (mc_expand_s8l_swapped) */
#define MC_FC_L128_EXPAND2            \
  "ldr r2, [r0], #4\n\t"              \
  "ldr r3, [r0], #4\n\t"              \
  "sxtb16 r6, r2\n\t"                 \
  "eor r7, r2, #0x007F007F\n\t"       \
  "sxtb16 r8, r3\n\t"                 \
  "eor r9, r3, #0x007F007F\n\t"       \
  "stmia r4!, {r6, r7, r8, r9}\n\t"
/* four groups from a word-aligned r0: one LDM, each word's Q in place of it, one STM of 8 words */
#define MC_FC_L128_EXPAND4                             \
  "ldmia r0!, {r2, r6, r8, r10}\n\t"                   \
  "sxtb16 r1, r2\n\t"                                  \
  "eor r2, r2, #0x007F007F\n\t"                        \
  "sxtb16 r3, r6\n\t"                                  \
  "eor r6, r6, #0x007F007F\n\t"                        \
  "sxtb16 r7, r8\n\t"                                  \
  "eor r8, r8, #0x007F007F\n\t"                        \
  "sxtb16 r9, r10\n\t"                                 \
  "eor r10, r10, #0x007F007F\n\t"                      \
  "stmia r4!, {r1, r2, r3, r6, r7, r8, r9, r10}\n\t"
#define MC_FC_L128_EXPAND16 MC_FC_L128_EXPAND4 MC_FC_L128_EXPAND4 MC_FC_L128_EXPAND4 MC_FC_L128_EXPAND4
#define MC_FC_L128_EXPAND_SUB                                                                  \
  ".Lmc_fc_l128_expand:\n\t"                                                                   \
  "ldr r4, [sp]\n\t"                                                                           \
  "tst r0, #3\n\t"                                                                             \
  "bne 68f\n\t" MC_FC_L128_EXPAND16 MC_FC_L128_EXPAND16                                        \
  "ldr r4, [sp]\n\t"                                                                           \
  "bx lr\n\t"                                                                                  \
  "68:\n\t"                                                                                    \
  "add r11, r0, #128\n\t"                                                                      \
  "69:\n\t" MC_FC_L128_EXPAND2 MC_FC_L128_EXPAND2 MC_FC_L128_EXPAND2 MC_FC_L128_EXPAND2       \
  "cmp r0, r11\n\t"                                                                            \
  "bne 69b\n\t"                                                                                \
  "ldr r4, [sp]\n\t"                                                                           \
  "bx lr\n\t"
#define MC_FC_L128_EXPAND "bl .Lmc_fc_l128_expand\n\t"
/* the frame: [sp] xs, out (int8 outputs or partial sums), m, c, [sp + 16] the partial sums a chunked
   layer's last pass reads (during its partial passes: the layer), end (of out; the passes that run on
   the records need none), the epilogue's address, [sp + 28] a chunked layer's outputs; during its
   partial passes m and c hold the next chunk's input and the last chunk's input.
   The end of the body: r4, r6-r10 = xs, out, m, c, [sp + 16], end reloaded and the jump to the
   epilogue, one LDM (xs back in r4 for the next block). */
#define MC_FC_L128_TO_EPILOGUE "ldm sp, {r4, r6, r7, r8, r9, r10, pc}\n\t"
/* a partial pass's epilogue EPI: its address, Thumb bit set, into the frame */
#define MC_FC_L128_PARTIAL_EPI(EPI) "adr.w r12, " EPI "\n\torr r12, r12, #1\n\tstr r12, [sp, #24]\n\t"

/* The body, one per model: entered with r0-r3 the start values, r4 xs, r5 the block's weights (from a
   record's GO word: LDM of the 4 start values and the PC), left into the frame's epilogue. After it,
   the expansion subroutine (BL .Lmc_fc_l128_expand) that expands the chunk at r0 (advanced by 128)
   into the scratch: unrolled with LDM when r0 is word-aligned, else 8 groups per iteration; returns
   r4 = the scratch for the first block; r1-r3, r6-r11 clobbered. */
__attribute__((naked, noinline, unused)) static void mc_fc_l128_body(void) {
  __asm__ volatile(MC_FC_L128_STEP4 MC_FC_L128_STEP4 MC_FC_L128_STEP4 MC_FC_L128_STEP4 MC_FC_L128_TO_EPILOGUE
                       MC_FC_L128_EXPAND_SUB);
}
/* a one-pass layer's end: the PC of its terminator record */
__attribute__((naked, noinline, unused)) static void mc_fc_l128_done(void) {
  __asm__ volatile("add sp, #32\n\tpop {r4-r11, pc}\n\t");
}

/* The last pass's epilogue, one function per shift SH (the immediate of SSAT), jumped to (not called) from
   the body's frame: 4 outputs, then the next block. A one-pass layer's (mc_fc_l128_epi_*) stores out and
   goes on with the next record (LDM of its 4 start values and its GO, or the terminator's DONE: no loop
   test); a chunked layer's last pass (mc_fc_l128_epic_*) tests for the end of out and loads the next
   block's partial sums at r9 ([sp + 16]). Unused ones are not emitted. */
#define MC_FC_L128_OUT(S, SH)                   \
  "smmla " S ", " S ", r7, r8\n\t"              \
  "ssat " S ", #8, " S ", asr #" #SH "\n\t"     \
  "strb " S ", [r6], #1\n\t"
#define MC_FC_L128_OUT_SIGNED(S, SH)            \
  "smmla r11, " S ", r7, r8\n\t"                \
  "asr " S ", " S ", #31\n\t"                   \
  "add r11, r11, " S ", lsl #7\n\t"             \
  "ssat r11, #8, r11, asr #" #SH "\n\t"         \
  "strb r11, [r6], #1\n\t"
#define MC_FC_L128_END "str r6, [sp, #4]\n\tldmia r5!, {r0, r1, r2, r3, pc}\n\t"
#define MC_FC_L128_END_CHUNKED                  \
  "str r6, [sp, #4]\n\t"                        \
  "cmp r6, r10\n\t"                             \
  "beq 1f\n\t"                                  \
  "ldmia r9!, {r0, r1, r2, r3}\n\t"             \
  "str r9, [sp, #16]\n\t"                       \
  "b mc_fc_l128_body\n\t"                       \
  "1:\n\t"                                      \
  "add sp, #32\n\t"                             \
  "pop {r4-r11, pc}\n\t"
#define MC_FC_L128_EPI_FN(NAME, OUT, SH, END)                                                   \
  __attribute__((naked, noinline, unused)) static void NAME(void) {                           \
    __asm__ volatile(OUT("r0", SH) OUT("r1", SH) OUT("r2", SH) OUT("r3", SH) END);             \
  }
#define MC_FC_L128_EPILOGUE(SH)                                                                 \
  MC_FC_L128_EPI_FN(mc_fc_l128_epi_##SH, MC_FC_L128_OUT, SH, MC_FC_L128_END)                    \
  MC_FC_L128_EPI_FN(mc_fc_l128_epi_s##SH, MC_FC_L128_OUT_SIGNED, SH, MC_FC_L128_END)            \
  MC_FC_L128_EPI_FN(mc_fc_l128_epic_##SH, MC_FC_L128_OUT, SH, MC_FC_L128_END_CHUNKED)           \
  MC_FC_L128_EPI_FN(mc_fc_l128_epic_s##SH, MC_FC_L128_OUT_SIGNED, SH, MC_FC_L128_END_CHUNKED)
/* The shift 16: the 4 outputs are the high halves of the 4 sums; two PKHTB, two USAT16 (c holds 128 * 2^16
   more: the outputs + 128, unsigned), one ORR of the two pairs and one EOR back to int8, one STR: 12
   instructions where 4 x (SSAT, STRB) take 8 + ... (one fewer per 4 outputs) */
#define MC_FC_L128_T(S, SH) "smmla " S ", " S ", r7, r8\n\t"
#define MC_FC_L128_T_SIGNED(S, SH) "smmla r11, " S ", r7, r8\n\tasr " S ", " S ", #31\n\tadd " S ", r11, " S ", lsl #7\n\t"
#define MC_FC_L128_PACK16                \
  "pkhtb r11, r2, r0, asr #16\n\t"      \
  "pkhtb r12, r3, r1, asr #16\n\t"      \
  "usat16 r11, #8, r11\n\t"             \
  "usat16 r12, #8, r12\n\t"             \
  "orr r11, r11, r12, lsl #8\n\t"       \
  "eor r11, r11, #0x80808080\n\t"       \
  "str r11, [r6], #4\n\t"
#define MC_FC_L128_EPILOGUE_16                                                                  \
  MC_FC_L128_EPI_FN(mc_fc_l128_epi_16, MC_FC_L128_T, 16, MC_FC_L128_PACK16 MC_FC_L128_END)        \
  MC_FC_L128_EPI_FN(mc_fc_l128_epi_s16, MC_FC_L128_T_SIGNED, 16, MC_FC_L128_PACK16 MC_FC_L128_END) \
  MC_FC_L128_EPI_FN(mc_fc_l128_epic_16, MC_FC_L128_T, 16, MC_FC_L128_PACK16 MC_FC_L128_END_CHUNKED) \
  MC_FC_L128_EPI_FN(mc_fc_l128_epic_s16, MC_FC_L128_T_SIGNED, 16, MC_FC_L128_PACK16 MC_FC_L128_END_CHUNKED)
MC_FC_L128_EPILOGUE(8)
MC_FC_L128_EPILOGUE(9)
MC_FC_L128_EPILOGUE(10)
MC_FC_L128_EPILOGUE(11)
MC_FC_L128_EPILOGUE(12)
MC_FC_L128_EPILOGUE(13)
MC_FC_L128_EPILOGUE(14)
MC_FC_L128_EPILOGUE(15)
MC_FC_L128_EPILOGUE_16
MC_FC_L128_EPILOGUE(17)
MC_FC_L128_EPILOGUE(18)
MC_FC_L128_EPILOGUE(19)
MC_FC_L128_EPILOGUE(20)
MC_FC_L128_EPILOGUE(21)
MC_FC_L128_EPILOGUE(22)
MC_FC_L128_EPILOGUE(23)
MC_FC_L128_EPILOGUE(24)
MC_FC_L128_EPILOGUE(25)
MC_FC_L128_EPILOGUE(26)
MC_FC_L128_EPILOGUE(27)
MC_FC_L128_EPILOGUE(28)
MC_FC_L128_EPILOGUE(29)
MC_FC_L128_EPILOGUE(30)
MC_FC_L128_EPILOGUE(31)
/* the last pass's epilogue of shift SH (8..31); _SIGNED: with the correction for negative sums; _CHUNKED:
   a layer of several chunks */
#define MC_FC_L128_EPI(SH) mc_fc_l128_epi_##SH
#define MC_FC_L128_EPI_SIGNED(SH) mc_fc_l128_epi_s##SH
#define MC_FC_L128_EPI_CHUNKED(SH) mc_fc_l128_epic_##SH
#define MC_FC_L128_EPI_CHUNKED_SIGNED(SH) mc_fc_l128_epic_s##SH

/* A chunked layer's passes after its first (the PC of its first chunk's terminator record): a middle
   chunk (from the partial sums at out, epilogue 45: the partial sums stored back, the next block's
   loaded, straight into the body), or the last (from the partial sums at [sp + 16], the layer's
   MC_FC_L128_EPI_CHUNKED epilogue). */
__attribute__((naked, noinline, unused)) static void mc_fc_l128_next(void) {
  __asm__ volatile(
      "21:\n\t"
      "ldr r0, [sp, #8]\n\t"
      "ldr r1, [sp, #12]\n\t"
      "ldr r2, [sp, #16]\n\t"
      "cmp r0, r1\n\t"
      "beq 22f\n\t"
      "ldr r3, [r2, #4]\n\t"
      "str r3, [sp, #4]\n\t" MC_FC_L128_PARTIAL_EPI("45f") MC_FC_L128_EXPAND
      "str r0, [sp, #8]\n\t"
      "ldr r6, [sp, #4]\n\t"
      "ldm r6, {r0, r1, r2, r3}\n\t"
      "b mc_fc_l128_body\n\t"
      "22:\n\t"
      "ldr r1, [sp, #28]\n\t"
      "ldr r3, [r2, #4]\n\t"
      "str r3, [sp, #16]\n\t"
      "str r1, [sp, #4]\n\t"
      "add r12, r2, #12\n\t"
      "ldm r12, {r6, r7, r8, r9, r10}\n\t" /* m c epi chunks blocks */
      "strd r6, r7, [sp, #8]\n\t"
      "add r12, r1, r10, lsl #2\n\t"
      "strd r12, r8, [sp, #20]\n\t" MC_FC_L128_EXPAND
      "ldr r12, [sp, #16]\n\t"
      "ldmia r12!, {r0, r1, r2, r3}\n\t"
      "str r12, [sp, #16]\n\t"
      "b mc_fc_l128_body\n\t"
      "45:\n\t"
      "stmia r6!, {r0, r1, r2, r3}\n\t"
      "str r6, [sp, #4]\n\t"
      "cmp r6, r10\n\t"
      "beq 21b\n\t"
      "ldm r6, {r0, r1, r2, r3}\n\t"
      "b mc_fc_l128_body\n\t");
}

/* x: the input (int8, any alignment), y: the output, layer: its constants. A one-pass layer: the frame,
   the expansion, then the first record (LDM of the start values and the PC). */
#define MC_FC_L128_ENTRY(NAME)                                                                         \
  static __attribute__((naked, noinline)) void NAME(__attribute__((unused)) const int8_t* x,              \
                                                    __attribute__((unused)) int8_t* y,                    \
                                                    __attribute__((unused)) const mc_fc_l128_layer* layer)
#define MC_FC_L128_FRAME "push {r4-r11, lr}\n\tsub sp, #32\n\t"
MC_FC_L128_ENTRY(mc_fc_l128_one) {
  __asm__ volatile(
      MC_FC_L128_FRAME
      "ldm r2, {r3, r4, r5, r6, r7, r8}\n\t" /* xs acc w m c epi */
      "strd r3, r1, [sp]\n\t"
      "strd r6, r7, [sp, #8]\n\t"
      "str r8, [sp, #24]\n\t" MC_FC_L128_EXPAND
      "ldmia r5!, {r0, r1, r2, r3, pc}\n\t");
}
/* A chunked layer: its first pass from the records into the partial sums (epilogue 44), its terminator
   into mc_fc_l128_next. */
MC_FC_L128_ENTRY(mc_fc_l128_chunked) {
  __asm__ volatile(
      MC_FC_L128_FRAME
      "ldm r2, {r3, r4, r5, r6, r7, r8, r9, r10}\n\t" /* xs acc w m c epi chunks blocks */
      "strd r3, r4, [sp]\n\t"
      "str r1, [sp, #28]\n\t"
      "add r12, r0, r9, lsl #7\n\t"
      "sub r12, r12, #128\n\t"
      "strd r12, r2, [sp, #12]\n\t"
      "add r12, r4, r10, lsl #4\n\t"
      "str r12, [sp, #20]\n\t" MC_FC_L128_PARTIAL_EPI("44f") MC_FC_L128_EXPAND
      "str r0, [sp, #8]\n\t"
      "ldmia r5!, {r0, r1, r2, r3, pc}\n\t"
      "44:\n\t"
      "stmia r6!, {r0, r1, r2, r3}\n\t"
      "str r6, [sp, #4]\n\t"
      "ldmia r5!, {r0, r1, r2, r3, pc}\n\t");
}
/* the words of a record and the terminators in the weight stream */
#define MC_FC_L128_GO ((int32_t)(uintptr_t)&mc_fc_l128_body)
#define MC_FC_L128_DONE ((int32_t)(uintptr_t)&mc_fc_l128_done)
#define MC_FC_L128_NEXT ((int32_t)(uintptr_t)&mc_fc_l128_next)
#else
#define MC_FC_L128_EPI(SH) 0
#define MC_FC_L128_EPI_SIGNED(SH) 0
#define MC_FC_L128_EPI_CHUNKED(SH) 0
#define MC_FC_L128_EPI_CHUNKED_SIGNED(SH) 0
#define MC_FC_L128_GO 0
#define MC_FC_L128_DONE 0
#define MC_FC_L128_NEXT 0
#endif

#if !MC_DSP_ASM
/* The requantization of the 256-scaled sum s in C, before the saturation (the asm's SMMLA and SSAT's
 * shift): c + the high word of s * m (truncated), 128 less for s < 0 where the clamp starts below the
 * output zero point (signed), >> sh. */
static inline int32_t mc_lanes_requant(int32_t s, int32_t m, int32_t c, int32_t sh, int32_t is_signed) {
  int32_t t = (int32_t)((uint32_t)c + (uint32_t)(int32_t)(((int64_t)s * m) >> 32));
  if (is_signed && s < 0) t = (int32_t)((uint32_t)t - 128u);
  return t >> sh;
}
#endif

/* One layer, batch 1 (see above); the same arithmetic in C off the DSP path. */
static inline void mc_fc_l128_run(const int8_t* x, int8_t* y, const mc_fc_l128_layer* layer) {
#if MC_DSP_ASM
  if (layer->chunks == 1) {
    mc_fc_l128_one(x, y, layer);
  } else {
    mc_fc_l128_chunked(x, y, layer);
  }
#else
  const int32_t* w = layer->w;
  int32_t k, g, i, j;
  for (k = 0; k < layer->chunks; ++k) {
    const int last = k == layer->chunks - 1;
    mc_expand_s8l_swapped(layer->xs, x + 128 * k, 32);
    for (g = 0; g < layer->blocks; ++g) {
      int32_t s[4];
      if (k == 0) { /* the record: 4 start values, GO */
        memcpy(s, w, sizeof s);
        w += 5;
      } else {
        memcpy(s, layer->acc + 4 * g, sizeof s);
      }
      for (i = 0; i < 32; ++i, w += 4) {
        const int32_t p = layer->xs[2 * i], q = layer->xs[2 * i + 1];
        for (j = 0; j < 4; ++j) s[j] = mc_smlad(q, mc_sxtb16(w[j]), mc_smlad(p, w[j], s[j]));
      }
      if (!last) {
        memcpy(layer->acc + 4 * g, s, sizeof s);
        continue;
      }
      for (j = 0; j < 4; ++j) {
        /* the shift 16: c holds 128 * 2^16 more (MC_FC_L128_EPILOGUE_16) */
        const int32_t t = mc_lanes_requant(s[j], layer->m, layer->c, layer->sh, layer->mode & MC_FC_L128_SIGNED);
        y[4 * g + j] = (int8_t)MC_SSAT8(t - (layer->sh == 16 ? 128 : 0));
      }
    }
    if (k == 0) w += 5; /* the terminator record */
  }
#endif
}

/* A lanes layer of 8 inputs (batch 1, rows any): the 2 groups' P, Q expanded into 4 registers, then
 * per row one LDM of its start value and 2 weight words, 6 multiply instructions and the requantization
 * as in mc_fc_l128 (SMMLA with C = 64 + 128 c, SSAT with the shift SH_ = r + 7, an immediate; SIGNED_:
 * the correction for negative sums): 10 instructions per row (12 with the correction), 4 rows per
 * iteration. W_: per row [start, word 0, word 1]. */
#if MC_DSP_ASM
#define MC_FC_L8_ROW(SIGNED_)                                     \
  "ldmia %[w]!, {%[s], %[a], %[b]}\n\t"                           \
  "smlad %[s], %[p0], %[a], %[s]\n\t"                             \
  "sxtb16 %[a], %[a]\n\t"                                         \
  "smlad %[s], %[q0], %[a], %[s]\n\t"                             \
  "smlad %[s], %[p1], %[b], %[s]\n\t"                             \
  "sxtb16 %[b], %[b]\n\t"                                         \
  "smlad %[s], %[q1], %[b], %[s]\n\t"                             \
  "smmla %[a], %[s], %[m], %[c]\n\t"                              \
  SIGNED_                                                         \
  "ssat %[a], #8, %[a], asr %[sh]\n\t"                            \
  "strb %[a], [%[y]], #1\n\t"
#define MC_FC_L8_SIGN "asr %[s], %[s], #31\n\tadd %[a], %[a], %[s], lsl #7\n\t"
#define MC_FC_L8(X_, Y_, W_, ROWS_, M_, C_, SH_, SIGNED_)                                                 \
  do {                                                                                                    \
    const int32_t v0_ = mc_read_s8x4(X_), v1_ = mc_read_s8x4((X_) + 4);                                  \
    const int32_t p0_ = mc_sxtb16(v0_), q0_ = (int32_t)((uint32_t)v0_ ^ 0x007F007Fu), p1_ = mc_sxtb16(v1_), \
                  q1_ = (int32_t)((uint32_t)v1_ ^ 0x007F007Fu);                                          \
    const int32_t* w_ = (W_);                                                                             \
    int8_t* y_ = (Y_);                                                                                    \
    int8_t* const e4_ = y_ + ((ROWS_) & ~3);                                                              \
    int32_t m_ = (M_), c_ = (C_);                                                                         \
    register int32_t s_ __asm__("r8"), a_ __asm__("r9"), b_ __asm__("r10"); /* LDM: ascending */          \
    while (y_ != e4_) {                                                                                   \
      __asm__ volatile(MC_FC_L8_ROW(SIGNED_) MC_FC_L8_ROW(SIGNED_) MC_FC_L8_ROW(SIGNED_) MC_FC_L8_ROW(SIGNED_) \
                       : [w] "+r"(w_), [y] "+r"(y_), [s] "=&r"(s_), [a] "=&r"(a_), [b] "=&r"(b_)          \
                       : [p0] "r"(p0_), [q0] "r"(q0_), [p1] "r"(p1_), [q1] "r"(q1_), [m] "r"(m_), [c] "r"(c_), \
                         [sh] "n"(SH_)                                                                    \
                       : "memory");                                                                      \
    }                                                                                                     \
    while (y_ != e4_ + ((ROWS_) & 3)) {                                                                   \
      __asm__ volatile(MC_FC_L8_ROW(SIGNED_)                                                              \
                       : [w] "+r"(w_), [y] "+r"(y_), [s] "=&r"(s_), [a] "=&r"(a_), [b] "=&r"(b_)          \
                       : [p0] "r"(p0_), [q0] "r"(q0_), [p1] "r"(p1_), [q1] "r"(q1_), [m] "r"(m_), [c] "r"(c_), \
                         [sh] "n"(SH_)                                                                    \
                       : "memory");                                                                      \
    }                                                                                                     \
  } while (0)
#define MC_FC_L8_SIGNED MC_FC_L8_SIGN
#define MC_FC_L8_NN ""
#else
#define MC_FC_L8_SIGNED 1
#define MC_FC_L8_NN 0
#define MC_FC_L8(X_, Y_, W_, ROWS_, M_, C_, SH_, SIGNED_)                                            \
  do {                                                                                               \
    int32_t d_[4], o_;                                                                               \
    const int32_t* w_ = (W_);                                                                        \
    mc_expand_s8l_swapped(d_, (X_), 2);                                                              \
    for (o_ = 0; o_ < (ROWS_); ++o_, w_ += 3) {                                                      \
      int32_t s_ = mc_smlad(d_[1], mc_sxtb16(w_[1]), mc_smlad(d_[0], w_[1], w_[0]));                \
      s_ = mc_smlad(d_[3], mc_sxtb16(w_[2]), mc_smlad(d_[2], w_[2], s_));                            \
      (Y_)[o_] = (int8_t)MC_SSAT8(mc_lanes_requant(s_, (M_), (C_), (SH_), (SIGNED_)));               \
    }                                                                                                \
  } while (0)
#endif

#endif /* MICROCOMPILER_KERNEL_FC_LANES_H_ */
