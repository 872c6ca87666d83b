/* int16 piecewise-linear tables (TFLM's int16 LOGISTIC and TANH, microcompiler/ops/lut16.py) on
 * Helium, 4 elements per step, with a portable fallback.
 *
 * For each element x: t = x * multiplier + rounding, clamped to [clamp_min, clamp_max]; segment
 * s = (t >> segment_shift) - first, position f = (t >> shift) & mask; the output is
 * (base[s] + f * slope[s]) >> out_shift. With MVE the 4 lanes are int32: VLDRH.S32 (the inputs
 * sign-extended), VMLA, VMAX/VMIN (only when clamped), VSHL by a negative register (arithmetic
 * shifts right), the two table loads as gathers (VLDRW.U32 and VLDRH.S32 with shifted offsets),
 * VMUL + VADD and VSTRH.32 (the low halves stored); the elements left over one by one. Without MVE
 * (host builds, other cores) every element runs the scalar line, with the same results bit for bit.
 * Each group of 4 inputs is read before its outputs are written: in place is fine.
 */
#ifndef MICROCOMPILER_KERNEL_MVE_TABLES_H_
#define MICROCOMPILER_KERNEL_MVE_TABLES_H_

#include <stdint.h>

#include "microcompiler/kernel_mve.h" /* MC_MVE, arm_mve.h */

typedef struct {
  const int32_t* base;  /* per segment, from segment `first` on */
  const int16_t* slope; /* per segment */
  int32_t multiplier, rounding, clamp_min, clamp_max, first, mask;
  int shift, segment_shift, out_shift;
} mc_piecewise_s16;

static inline int16_t mc_piecewise_s16_one(const mc_piecewise_s16* p, int32_t x) {
  int32_t t = x * p->multiplier + p->rounding;
  t = t < p->clamp_min ? p->clamp_min : t > p->clamp_max ? p->clamp_max : t;
  {
    const int32_t s = (t >> p->segment_shift) - p->first;
    return (int16_t)((p->base[s] + ((t >> p->shift) & p->mask) * p->slope[s]) >> p->out_shift);
  }
}

static inline void mc_piecewise_s16_run(const mc_piecewise_s16* p, const int16_t* input, int16_t* output, int n,
                                        int clamped) {
  int i;
#if MC_MVE
  const int32x4_t rounding = vdupq_n_s32(p->rounding);
  const int32x4_t mask = vdupq_n_s32(p->mask);
  int blocks;
  for (blocks = n / 4; blocks > 0; --blocks, input += 4, output += 4) {
    int32x4_t t = vmlaq_n_s32(rounding, vldrhq_s32(input), p->multiplier);
    int32x4_t s, f, out;
    if (clamped) t = vminq_s32(vmaxq_s32(t, vdupq_n_s32(p->clamp_min)), vdupq_n_s32(p->clamp_max));
    s = vsubq_n_s32(vshlq_r_s32(t, -p->segment_shift), p->first);
    f = vandq_s32(vshlq_r_s32(t, -p->shift), mask);
    out = vldrwq_gather_shifted_offset_s32(p->base, vreinterpretq_u32_s32(s));
    out = vaddq_s32(out, vmulq_s32(f, vldrhq_gather_shifted_offset_s32(p->slope, vreinterpretq_u32_s32(s))));
    vstrhq_s32(output, vshlq_r_s32(out, -p->out_shift));
  }
  n %= 4;
#else
  (void)clamped;
#endif
  for (i = 0; i < n; ++i) output[i] = mc_piecewise_s16_one(p, input[i]);
}

#endif /* MICROCOMPILER_KERNEL_MVE_TABLES_H_ */
