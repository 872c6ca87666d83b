/* FULLY_CONNECTED "pairs-u8" in portable C (cores without the DSP extension): one input vector that is
 * an activation of the model, offset by 128 in place for the layer and restored after, against the
 * int8 weights + 128 of 8 rows per pass (kernel_portable.h's mc_pairs_u8_pass: one LDRB, one LDRD,
 * 2 AND and 4 UMLAL per 8 MACs with the long multiply; int32 row by row without it); and the
 * whole-layer kernels of "pairs" and "pairs-u8" (mc_fc_r4_s8p, mc_fc_r8_u8p: one shared function, a
 * record per layer). Plain C99. */
#ifndef MICROCOMPILER_KERNEL_PORTABLE_FC_H_
#define MICROCOMPILER_KERNEL_PORTABLE_FC_H_

#include <stdint.h>
#include <string.h>

#include "microcompiler/kernel_portable.h"

/* 128 in each byte of a word: x ^ MC_OFFSET128_X4 is x + 128 (mod 256) in each byte */
#define MC_OFFSET128_X4 0x80808080u

/* FULLY_CONNECTED "pairs-u8" (one input vector, an activation the layer may change and restore): the
 * n bytes of p offset by 128 in place (int8 x <-> uint8 x + 128; a second call restores them), four
 * at a time where p is word-aligned; returns 128 times the sum of the offset values (of x + 128). */
static MC_ALWAYS_INLINE int32_t mc_offset128_sum_inline(int8_t* p, int32_t n) {
  uint32_t sum = 0;
  if (((uintptr_t)p & 3u) == 0) {
    for (; n >= 4; n -= 4, p += 4) {
      uint32_t v, lanes;
      memcpy(&v, p, 4); /* one LDR and one STR (memcpy: no aliasing of the int8 tensor) */
      v ^= MC_OFFSET128_X4;
      memcpy(p, &v, 4);
      lanes = (v & 0x00FF00FFu) + ((v >> 8) & 0x00FF00FFu); /* the 4 bytes' sum in two 16-bit lanes */
      sum += (lanes & 0xFFFFu) + (lanes >> 16);
    }
  }
  for (; n > 0; --n, ++p) {
    const uint32_t u = (uint32_t)(uint8_t)*p ^ 0x80u;
    *p = (int8_t)(uint8_t)u;
    sum += u;
  }
  return (int32_t)(sum << 7);
}
MC_HELPER_FN int32_t mc_offset128_sum(int8_t* p, int32_t n) { return mc_offset128_sum_inline(p, n); }

/* Eight output rows against the input offset by 128 (x', mc_offset128_sum; sx its 128 sum x') with
 * the weights + 128 as mc_pairs_u8_pass reads them, passes of MC_PAIRS_CHUNK inputs: acc[r] =
 * start[r] - sx + sum_k x'[k] (w_r[k] + 128) = start[r] + sum_k (x[k] + 128) w_r[k], k < n (n >= 1),
 * wrapping (the caller proves the final sums fit int32; start holds bias - (zero point + 128) sum w).
 * Returns w past the 8 rows. */
MC_HELPER_FN const uint32_t* mc_dot_r8_u8p(const uint8_t* x, const uint32_t* w, int32_t n, int32_t sx,
                                           const int32_t* start, int32_t* acc) {
  int r;
  for (r = 0; r < 8; ++r) acc[r] = (int32_t)((uint32_t)start[r] - (uint32_t)sx);
  MC_PAIRS_PASSES(mc_pairs_u8_pass, x, w, n, acc);
  return w;
}

/* ---- Whole FULLY_CONNECTED layers: one shared function per kind, the layer's constants in a record --
 * The layer function passes its record, input and output (a tail call, no frame), and the kernel
 * runs every row block, its requantization (per tensor, mc_requant_fast, saturated to int8: layers
 * whose activation clamps no further) and stores: one frame on the deepest path of the model
 * instead of the layer's plus the dot kernel's (AD on the Cortex-M3: 112 bytes from main, where
 * 176), and the requantization straight from the pass's sums (no array of them in memory). */
typedef struct {
  const uint32_t* w;     /* the packed weights (mc_pairs_u8_pass's or mc_pairs_pass's words) */
  const int32_t* start;  /* per row: the bias with the input offsets folded in */
  int32_t rows, n;       /* output rows (a multiple of the kernel's 8 or 4) and inputs */
  int32_t m, c, r;       /* the requantization: multiplier, 2^(r - 1) + output zero point 2^r, right shift */
} mc_fc_layer;

/* acc requantized (the output zero point in p->c) and saturated to int8: the layers whose activation
 * clamps nothing more (_requant.j2's store with fast = True, nn = False) */
static MC_ALWAYS_INLINE int8_t mc_fc_out(uint32_t acc, int32_t m, int32_t c, int32_t r) {
  return (int8_t)MC_SSAT8(mc_requant_fast((int32_t)acc, m, c, r));
}

#if MC_LONG_MULTIPLY
/* the four rows of the sums T = t, T' = t1 (mc_pairs_u_flush) from their starts b[0..3] - sx, stored
 * requantized to d[0..3]. mc_pairs_u_flush's decoding written out again on purpose: through its acc
 * array AD on the Cortex-M3 takes 390,200 instructions instead of 382,080 and 132 bytes of stack
 * instead of 120 (GCC 12 keeps the array in memory). */
static MC_ALWAYS_INLINE void mc_fc_u_store4(uint64_t t, uint64_t t1, const int32_t* b, uint32_t sx, int8_t* d,
                                            const mc_fc_layer* p) {
  const uint32_t a2 = (uint32_t)t1 & 0xFFFFFFu, a1 = (uint32_t)(t1 >> 24);
  const uint64_t rest = t - ((uint64_t)a1 << 8) - ((uint64_t)a2 << 16);
  const int32_t m = p->m, c = p->c, r = p->r; /* read once: the stores may alias the record */
  d[0] = mc_fc_out((uint32_t)b[0] - sx + ((uint32_t)rest & 0xFFFFFFu), m, c, r);
  d[1] = mc_fc_out((uint32_t)b[1] - sx + a1, m, c, r);
  d[2] = mc_fc_out((uint32_t)b[2] - sx + a2, m, c, r);
  d[3] = mc_fc_out((uint32_t)b[3] - sx + (uint32_t)(rest >> 24), m, c, r);
}
#endif

/* FULLY_CONNECTED pairs-u8, the whole layer: y[o] for every row of p over the input xm (offset by 128
 * in place, restored after; p->n a multiple of 8, at most MC_PAIRS_CHUNK), 8 rows per pass of
 * mc_pairs_u8_sums. Few values live across the passes (p, xm, y, o, sx, w): the rest is reloaded. */
MC_HELPER_FN void mc_fc_r8_u8p(const mc_fc_layer* p, int8_t* xm, int8_t* y) {
  const uint32_t sx = (uint32_t)mc_offset128_sum_inline(xm, p->n); /* inline: no frame below this one */
  const uint32_t* w = p->w;
  int32_t o;
  for (o = 0; o < p->rows; o += 8) {
#if MC_LONG_MULTIPLY
    int64_t s[4];
    w = mc_pairs_u8_sums((const uint8_t*)xm, w, p->n & ~7, s); /* & ~7: no loop for a tail */
    mc_fc_u_store4((uint64_t)s[0], (uint64_t)s[1], p->start + o, sx, y + o, p);
    mc_fc_u_store4((uint64_t)s[2], (uint64_t)s[3], p->start + o + 4, sx, y + o + 4, p);
#else
    int32_t acc[8];
    int r;
    for (r = 0; r < 8; ++r) acc[r] = 0;
    w = mc_pairs_u8_pass((const uint8_t*)xm, w, p->n, acc);
    for (r = 0; r < 8; ++r) y[o + r] = mc_fc_out((uint32_t)p->start[o + r] - sx + (uint32_t)acc[r], p->m, p->c, p->r);
#endif
  }
  (void)mc_offset128_sum_inline(xm, p->n); /* the input as it was */
}

/* FULLY_CONNECTED pairs, the whole layer: y[o] for every row of p over the int8 input x (any depth,
 * in passes of MC_PAIRS_CHUNK), 4 rows per mc_pairs_pass. */
MC_HELPER_FN void mc_fc_r4_s8p(const mc_fc_layer* p, const int8_t* x, int8_t* y) {
  const uint32_t* w = p->w;
  const int32_t* start = p->start;
  int8_t* const end = y + p->rows;
  uint32_t sx = 0;
  int32_t k;
  for (k = 0; k < p->n; ++k) sx += (uint32_t)x[k];
  sx <<= 7;
  for (; y != end; y += 4, start += 4) {
    int32_t acc[4];
    const int8_t* xk = x;
    int32_t n = p->n;
    acc[0] = (int32_t)((uint32_t)start[0] - sx);
    acc[1] = start[1];
    acc[2] = (int32_t)((uint32_t)start[2] - sx);
    acc[3] = start[3];
    MC_PAIRS_PASSES(mc_pairs_pass, xk, w, n, acc);
    {
      const int32_t m = p->m, c = p->c, r = p->r; /* read once: the stores may alias the record */
      y[0] = mc_fc_out((uint32_t)acc[0], m, c, r); /* unrolled: acc stays in registers */
      y[1] = mc_fc_out((uint32_t)acc[1], m, c, r);
      y[2] = mc_fc_out((uint32_t)acc[2], m, c, r);
      y[3] = mc_fc_out((uint32_t)acc[3], m, c, r);
    }
  }
}

#endif /* MICROCOMPILER_KERNEL_PORTABLE_FC_H_ */
