/* The int8 LSTM cell update (UNIDIRECTIONAL_SEQUENCE_LSTM with the mve-rows4 gates, ops/lstm.py) on
 * Helium, 4 units per step, with a portable fallback.
 *
 * Per unit s, from the gate pre-activations (int16 Q3.12, [4][n]: forget, input, cell, output):
 * the gates' sigmoid and tanh (TFLM's int16 table with linear interpolation, mc_sigmoid_s16 and
 * mc_tanh_s16 of kernel_activation.h), cell = sat16(rq(forget * cell) + rq(input * cell gate))
 * (clipped), hidden = sat8(rq(output * tanh(cell))), each rq an mc_requant_fast. With MVE the 4
 * lanes are int32: the table reads are gathers (VLDRH.U32 with shifted offsets), SMMLAR is VRMULH
 * (the same rounding: (a * b + 2^31) >> 32) plus the constant, the loads and stores widen and narrow
 * (VLDRH.S32, VSTRH.32, VSTRB.32). The units left over (n % 4) and every unit without MVE run the
 * scalar line, with the same results bit for bit.
 */
#ifndef MICROCOMPILER_KERNEL_MVE_LSTM_H_
#define MICROCOMPILER_KERNEL_MVE_LSTM_H_

#include <stdint.h>

#include "microcompiler/kernel_activation.h" /* mc_sigmoid_s16, mc_tanh_s16 */
#include "microcompiler/kernel_mve.h"        /* MC_MVE, arm_mve.h */
#include "microcompiler/kernel_simd.h"       /* mc_requant_fast */

/* One mc_requant_fast: multiplier, rounding constant (with the zero point), right shift. */
typedef struct {
  int32_t m, c, r;
} mc_lstm_rq;

typedef struct {
  const uint16_t* table; /* TFLM's sigmoid_table_uint16 */
  mc_lstm_rq forget, input, hidden;
  int32_t clip; /* cell_clip in cell units; 0: none */
  int32_t tanh_m, tanh_rounding, tanh_shift; /* the cell state into tanh's input: (c * m + rounding) >> shift */
} mc_lstm_cell_s8_params;

static inline int32_t mc_lstm_tanh_input(const mc_lstm_cell_s8_params* p, int32_t c) {
  return p->tanh_shift ? (c * p->tanh_m + p->tanh_rounding) >> p->tanh_shift : c * p->tanh_m;
}

#if MC_MVE
/* mc_sigmoid_s16(v) (tanh = 0) or mc_tanh_s16(v / 2) (tanh = 1: the caller doubles tanh's input) of
 * 4 lanes, one function (one copy per file: flash). For tanh, |2v| >> 9 is its segment and
 * (|2v| & 0x1FF) twice its position, so the interpolation r is twice mc_tanh_s16's (exact), and its
 * last steps are taken on 2r, one bit further right. */
/* per function (sigmoid, tanh): the value past the table's end, the rounding of positive and the
 * reflection of negative inputs */
static const int32_t mc_lstm_table_k[2][3] = {{0x7FFF << 10, 1 << 9, (1 << 25) + (1 << 9) - 1},
                                              {0xFFFF << 9, -(1 << 24) + (1 << 8), (1 << 24) + (1 << 8) - 2}};
#if defined(__GNUC__)
__attribute__((noinline, unused))
#endif
static int32x4_t mc_lstm_table_x4(int32x4_t v, const uint16_t* table, int tanh) {
  const uint32x4_t mag = vreinterpretq_u32_s32(vabsq_s32(v));
  const uint32x4_t seg = vshrq_n_u32(mag, 9);
  const uint32x4_t idx = vminq_u32(seg, vdupq_n_u32(254));
  const int32x4_t a = vreinterpretq_s32_u32(vldrhq_gather_shifted_offset_u32(table, idx));
  const int32x4_t b = vreinterpretq_s32_u32(vldrhq_gather_shifted_offset_u32(table + 1, idx));
  const int32x4_t f = vreinterpretq_s32_u32(vandq_u32(mag, vdupq_n_u32(0x1FF)));
  int32x4_t r = vaddq_s32(vshlq_n_s32(a, 9), vmulq_s32(f, vsubq_s32(b, a)));
  const int32_t* const k = mc_lstm_table_k[tanh];
  r = vpselq_s32(vdupq_n_s32(k[0]), r, vcmpcsq_n_u32(seg, 255));
  r = vpselq_s32(vaddq_n_s32(r, k[1]), vsubq_s32(vdupq_n_s32(k[2]), r), vcmpgeq_n_s32(v, 0));
  r = vshlq_r_s32(r, tanh - 10); /* >> 10, tanh's >> 9 */
  return vmovlbq_s16(vreinterpretq_s16_s32(r)); /* the int16 conversion (VMOVLB.S16) */
}

/* mc_requant_fast of 4 lanes (|p| < 2^30). */
static MC_MVE_INLINE int32x4_t mc_requant_fast_x4(int32x4_t p, const mc_lstm_rq* q) {
  const int32x4_t t = vrmulhq_s32(vshlq_n_s32(p, 1), vdupq_n_s32(q->m));
  return vshlq_r_s32(vaddq_s32(t, vaddq_n_s32(vshrq_n_s32(p, 31), q->c)), -q->r);
}

static MC_MVE_INLINE int32x4_t mc_clamp_x4(int32x4_t x, int32_t lo, int32_t hi) {
  return vminq_s32(vmaxq_s32(x, vdupq_n_s32(lo)), vdupq_n_s32(hi));
}
#endif

/* n units: gate [4][n] (Q3.12), cell [n] updated, y [n] the new hidden state. */
static inline void mc_lstm_cell_s8(const mc_lstm_cell_s8_params* p, const int16_t* gate, int16_t* cell, int8_t* y,
                                   int n) {
  const int16_t* const g1 = gate + n;
  const int16_t* const g2 = gate + 2 * n;
  const int16_t* const g3 = gate + 3 * n;
  int s = 0, rest = n;
#if MC_MVE
  int blocks;
  rest = n & 3;
  for (blocks = n >> 2; blocks > 0; --blocks, s += 4) {
    const int32x4_t fg = mc_lstm_table_x4(vmulq_n_s32(vldrhq_s32(gate + s), 3), p->table, 0);
    const int32x4_t ig = mc_lstm_table_x4(vmulq_n_s32(vldrhq_s32(g1 + s), 3), p->table, 0);
    const int32x4_t cg = mc_lstm_table_x4(vmulq_n_s32(vldrhq_s32(g2 + s), 6), p->table, 1);
    const int32x4_t og = mc_lstm_table_x4(vmulq_n_s32(vldrhq_s32(g3 + s), 3), p->table, 0);
    const int32x4_t kept = mc_clamp_x4(mc_requant_fast_x4(vmulq_s32(fg, vldrhq_s32(cell + s)), &p->forget), -32768, 32767);
    const int32x4_t added = mc_clamp_x4(mc_requant_fast_x4(vmulq_s32(ig, cg), &p->input), -32768, 32767);
    int32x4_t c = mc_clamp_x4(vaddq_s32(kept, added), -32768, 32767);
    int32x4_t t;
    if (p->clip) c = mc_clamp_x4(c, -p->clip, p->clip);
    vstrhq_s32(cell + s, c);
    t = vmulq_n_s32(c, p->tanh_m);
    if (p->tanh_shift) t = vshlq_r_s32(vaddq_n_s32(t, p->tanh_rounding), -p->tanh_shift);
    t = mc_requant_fast_x4(vmulq_s32(og, mc_lstm_table_x4(vshlq_n_s32(t, 1), p->table, 1)), &p->hidden);
    vstrbq_s32(y + s, mc_clamp_x4(t, -128, 127));
  }
#endif
  for (; rest > 0; --rest, ++s) {
    const int32_t forget_gate = mc_sigmoid_s16(3 * (int32_t)gate[s], p->table);
    const int32_t input_gate = mc_sigmoid_s16(3 * (int32_t)g1[s], p->table);
    const int32_t cell_gate = mc_tanh_s16(3 * (int32_t)g2[s], p->table);
    const int32_t output_gate = mc_sigmoid_s16(3 * (int32_t)g3[s], p->table);
    const int32_t kept = MC_CLAMP(mc_requant_fast(forget_gate * (int32_t)cell[s], p->forget.m, p->forget.c, p->forget.r),
                                  -32768, 32767);
    const int32_t added =
        MC_CLAMP(mc_requant_fast(input_gate * cell_gate, p->input.m, p->input.c, p->input.r), -32768, 32767);
    int32_t c = MC_CLAMP(kept + added, -32768, 32767);
    int32_t h;
    if (p->clip) c = MC_CLAMP(c, -p->clip, p->clip);
    cell[s] = (int16_t)c;
    h = mc_requant_fast(output_gate * (int32_t)mc_tanh_s16(mc_lstm_tanh_input(p, c), p->table), p->hidden.m,
                        p->hidden.c, p->hidden.r);
    y[s] = (int8_t)MC_CLAMP(h, -128, 127);
  }
}

#endif /* MICROCOMPILER_KERNEL_MVE_LSTM_H_ */
