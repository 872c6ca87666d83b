/* Building blocks of the channel-plane int8 kernels (DEPTHWISE_CONV_2D "planes"), with portable
 * fallbacks.
 *
 * A plane is one input channel sign-extended to int16, row after row, with a border of the input
 * zero point wide enough that every tap of every output pixel lies inside it (the bias accounts for
 * the zero point, so padded and interior pixels share one loop). Two horizontally adjacent plane
 * values form a pair (low lane = the left one), which SMLAD multiplies with a pair of weights.
 */
#ifndef MICROCOMPILER_KERNEL_PLANES_H_
#define MICROCOMPILER_KERNEL_PLANES_H_

#include <stdint.h>
#include <string.h>

#include "microcompiler/kernel_simd.h"

#if MC_DSP_ASM
/* acc + a.hi * b.lo */
static inline int32_t mc_smlatb(int32_t a, int32_t b, int32_t acc) { return __smlatb(a, b, acc); }
/* acc + a.lo * b.hi */
static inline int32_t mc_smlabt(int32_t a, int32_t b, int32_t acc) { return __smlabt(a, b, acc); }
#else
static inline int32_t mc_smlatb(int32_t a, int32_t b, int32_t acc) {
  return (int32_t)((uint32_t)acc + (uint32_t)(mc_hi16(a) * mc_lo16(b)));
}
static inline int32_t mc_smlabt(int32_t a, int32_t b, int32_t acc) {
  return (int32_t)((uint32_t)acc + (uint32_t)(mc_lo16(a) * mc_hi16(b)));
}
#endif

#if MC_DSP_ASM
/* (lo, hi) as the low and high halves of a word: one PKHBT. */
static inline int32_t mc_pkhbt16(int32_t lo, int32_t hi) {
  int32_t r;
  __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(lo), "r"(hi));
  return r;
}
#endif

/* The pair of plane values at p (any halfword alignment: LDR allows unaligned words on M4/M7). */
static inline int32_t mc_plane_pair(const int16_t* p) {
  int32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* One plane value. */
static inline void mc_plane_set(int16_t* d, int32_t v) {
  const int16_t h = (int16_t)v;
  memcpy(d, &h, 2);
}

/* Copy one channel of an NHWC int8 tensor into a plane: rows x cols values, stride bytes apart in
 * a row (the channel count) and src_row bytes from row to row, written as int16 at d, pitch values
 * from row to row. With the DSP extension 4 values per step, paired by PKHBT and stored as two words
 * (any halfword alignment): about 2.75 instructions per value with the loop instead of 5. */
static inline void mc_plane_load(int16_t* d, const int8_t* s, int32_t rows, int32_t cols, int32_t stride,
                                 int32_t src_row, int32_t pitch) {
  int32_t y, x;
  for (y = 0; y < rows; ++y, d += pitch, s += src_row) {
    const int8_t* sp = s;
#if MC_DSP_ASM
    for (x = 0; x + 3 < cols; x += 4, sp += 4 * stride) {
      const int32_t lo = mc_pkhbt16(sp[0], sp[stride]), hi = mc_pkhbt16(sp[2 * stride], sp[3 * stride]);
      memcpy(d + x, &lo, 4);
      memcpy(d + x + 2, &hi, 4);
    }
    if (x + 1 < cols) {
      const int32_t v = mc_pkhbt16(sp[0], sp[stride]);
      memcpy(d + x, &v, 4);
      x += 2;
      sp += 2 * stride;
    }
    if (x < cols) mc_plane_set(d + x, *sp);
#else
    for (x = 0; x < cols; ++x, sp += stride) mc_plane_set(d + x, *sp);
#endif
  }
}

/* A run of a layer's channels whose requantization right shift is the same (channels grouped by
 * shift, the shift a literal in the code that runs them): their weights and records from the run's
 * first channel on, how many channels, and the shift. */
typedef struct {
  const int8_t* weights;
  const int32_t* params;
  int16_t count;
  int16_t right_shift;
} mc_planes_run_t;

/* n words of the same pair (the zero-point border of a plane). */
static inline void mc_plane_fill(int32_t* d, int32_t pair, int32_t n) {
  for (; n > 0; --n) *d++ = pair;
}

#endif /* MICROCOMPILER_KERNEL_PLANES_H_ */
