/* FULLY_CONNECTED "pairs-u8" in portable C (cores without the DSP extension): one input vector that is
 * an activation of the model, offset by 128 in place for the layer and restored after, against the
 * int8 weights + 128 of 8 rows per pass (kernel_portable.h's mc_pairs_u8_pass: one LDRB, one LDRD,
 * 2 AND and 4 UMLAL per 8 MACs with the long multiply; int32 row by row without it). Plain C99. */
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
MC_HELPER_FN int32_t mc_offset128_sum(int8_t* p, int32_t n) {
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

#endif /* MICROCOMPILER_KERNEL_PORTABLE_FC_H_ */
