/* The portable C helpers shared by the layers of a model where one copy beats each layer's own loops
 * (cores without the DSP extension that have the long multiply: Cortex-M3, the host): the packed
 * CONV_2D's column of two output pixels (mc_pack2_pair_s8, a layer's geometry one mc_packed_geom) and
 * the requantization of FULLY_CONNECTED's two batch rows (mc_fc_rows2_store). Plain C99 on
 * kernel_portable.h's two-lane sums. */
#ifndef MICROCOMPILER_KERNEL_PORTABLE_RUNS_H_
#define MICROCOMPILER_KERNEL_PORTABLE_RUNS_H_

#include <stdint.h>

#include "microcompiler/kernel_math.h"
#include "microcompiler/kernel_portable.h"
#include "microcompiler/kernel_simd.h"

#if MC_LONG_MULTIPLY
/* mc_pack2_s8 for mc_pack2_pair_s8 (a kernel row's run of inputs, or one tap's), the lane a variable:
 * d[k] = x0[k] + x1[k] * unit for k < n (n >= 1, unit = 2^L: one MLA), 4 inputs per iteration
 * (Cortex-M3: 4.75 instructions per input in the loop). */
static MC_ALWAYS_INLINE void mc_pack2_run_s8(int32_t* d, const int8_t* x0, const int8_t* x1, int32_t n, int32_t unit) {
  int32_t* const end = d + n;
  for (; n & 3; --n) *d++ = *x0++ + *x1++ * unit;
  for (; d != end; d += 4, x0 += 4, x1 += 4) {
    d[0] = x0[0] + x1[0] * unit;
    d[1] = x0[1] + x1[1] * unit;
    d[2] = x0[2] + x1[2] * unit;
    d[3] = x0[3] + x1[3] * unit;
  }
}

/* Four pixels: d[2 k] = x0[k] + x1[k] * unit, d[2 k + 1] = x2[k] + x3[k] * unit for k < n (n >= 1; the
 * interleaving of mc_pack4_s8), 2 inputs per iteration. */
static MC_ALWAYS_INLINE void mc_pack4_run_s8(int32_t* d, const int8_t* x0, const int8_t* x1, const int8_t* x2,
                                             const int8_t* x3, int32_t n, int32_t unit) {
  int32_t* const end = d + 2 * n;
  if (n & 1) {
    d[0] = *x0++ + *x1++ * unit;
    d[1] = *x2++ + *x3++ * unit;
    d += 2;
  }
  for (; d != end; d += 4, x0 += 2, x1 += 2, x2 += 2, x3 += 2) {
    d[0] = x0[0] + x1[0] * unit;
    d[1] = x2[0] + x3[0] * unit;
    d[2] = x0[1] + x1[1] * unit;
    d[3] = x2[1] + x3[1] * unit;
  }
}

/* A CONV_2D packed layer's geometry (one constant per layer): its scratch (the packed column, the two
 * patches), the input, kernel, strides, dilations and padding, the output's rows and columns and a
 * batch's input bytes, the interior (pairs of output pixels on one row whose every tap is inside:
 * rows y_lo..y_hi, columns x_lo..x_hi; y_lo > y_hi where there is none, dilation across above 1
 * too), the input zero point, unit = 2^L and (mc_pack4_quad_s8) the pixels of the last step, 1..4. */
typedef struct {
  int32_t* packed;
  int8_t* patch;
  int32_t batch_bytes, unit;
  int16_t in_h, in_w, in_c, k_h, k_w, stride_h, stride_w, dil_h, dil_w, pad_h, pad_w, out_h, out_w;
  int16_t y_lo, y_hi, x_lo, x_hi, zero, rest;
} mc_packed_geom;

/* mc_pack2_pair_s8 where a pixel has taps outside the input, or the pair is not on one row: both
 * patches gathered into g->patch (taps outside the input: the zero point), then packed. */
/* The patch of output pixel (batch base b, row oy, column ox) into e (taps outside the input: the zero
 * point); returns e past it. */
static MC_ALWAYS_INLINE int8_t* mc_patch_s8(int8_t* e, const int8_t* b, int32_t oy, int32_t ox, const mc_packed_geom* g) {
  const int32_t c = g->in_c;
  int32_t ky, kx, i;
  for (ky = 0; ky < g->k_h; ++ky) {
    const uint32_t iy = (uint32_t)(oy * g->stride_h - g->pad_h + ky * g->dil_h);
    for (kx = 0; kx < g->k_w; ++kx) {
      const uint32_t ix = (uint32_t)(ox * g->stride_w - g->pad_w + kx * g->dil_w);
      const int8_t* src = b + ((int32_t)iy * g->in_w + (int32_t)ix) * c;
      if (iy >= (uint32_t)g->in_h || ix >= (uint32_t)g->in_w) {
        for (i = 0; i < c; ++i) *e++ = (int8_t)g->zero;
      } else {
        for (i = 0; i < c; ++i) *e++ = src[i];
      }
    }
  }
  return e;
}

/* The next output pixel in raster order (row, column, batch base). */
#define MC_NEXT_PIXEL(b_, oy_, ox_, g_)  \
  if (++(ox_) == (g_)->out_w) {          \
    (ox_) = 0;                           \
    if (++(oy_) == (g_)->out_h) {        \
      (oy_) = 0;                         \
      (b_) += (g_)->batch_bytes;         \
    }                                    \
  }

MC_HELPER_FN void mc_pack2_edge_s8(const int8_t* b, int32_t oy, int32_t ox, const mc_packed_geom* g) {
  const int32_t k = g->k_h * g->k_w * g->in_c, twice = ox < 0;
  int8_t* e = g->patch;
  int32_t t;
  if (twice) ox = -1 - ox;
  for (t = 0; t < 2; ++t) {
    if (t && !twice) {
      MC_NEXT_PIXEL(b, oy, ox, g)
    }
    e = mc_patch_s8(e, b, oy, ox, g);
  }
  mc_pack2_run_s8(g->packed, g->patch, g->patch + k, k, g->unit);
}

/* Whether output pixels ox..ox + last of row oy all lie in the interior (ox < 0 fails: x_lo >= 0). */
#define MC_PACKED_INSIDE(g_, oy_, ox_, last_) \
  ((ox_) >= (g_)->x_lo && (ox_) + (last_) <= (g_)->x_hi && (oy_) >= (g_)->y_lo && (oy_) <= (g_)->y_hi)

/* The input of the first tap of output pixel (batch base b, row oy, column ox). */
static MC_ALWAYS_INLINE const int8_t* mc_packed_src(const int8_t* b, int32_t oy, int32_t ox, const mc_packed_geom* g) {
  const int32_t c = g->in_c;
  return b + (oy * g->stride_h - g->pad_h) * (g->in_w * c) + (ox * g->stride_w - g->pad_w) * c;
}

/* The packed columns of 2 or 4 pixels (a literal) on one row whose every tap is inside, s the first
 * pixel's first tap: one run of k_w in_c inputs per kernel row. */
static MC_ALWAYS_INLINE void mc_pack_rows_s8(const int8_t* s, const mc_packed_geom* g, int pixels) {
  const int32_t c = g->in_c, run = g->k_w * c, step = g->stride_w * c, next = g->dil_h * g->in_w * c;
  int32_t* d = g->packed;
  int32_t ky;
  for (ky = g->k_h; ky > 0; --ky, s += next, d += (pixels / 2) * run) {
    if (pixels == 4) {
      mc_pack4_run_s8(d, s, s + step, s + 2 * step, s + 3 * step, run, g->unit);
    } else {
      mc_pack2_run_s8(d, s, s + step, run, g->unit);
    }
  }
}

/* The packed column of output pixel (batch base b, row oy, column ox) and the next one in raster
 * order (ox < 0: the odd last pixel -1 - ox, twice) into g->packed:
 * packed[(ky k_w + kx) in_c + c] = x0 + x1 2^L of tap (ky, kx), channel c. Pairs inside: one run of
 * k_w in_c inputs per kernel row straight from the input; else mc_pack2_edge_s8 (a tail call). */
MC_HELPER_FN void mc_pack2_pair_s8(const int8_t* b, int32_t oy, int32_t ox, const mc_packed_geom* g) {
  if (MC_PACKED_INSIDE(g, oy, ox, 1)) {
    mc_pack_rows_s8(mc_packed_src(b, oy, ox, g), g, 2);
    return;
  }
  mc_pack2_edge_s8(b, oy, ox, g);
}

/* d[2 k] = x0[k] + x1[k] * unit for k < n (n >= 1): one pair's words of mc_pack4_quad_s8. */
static MC_ALWAYS_INLINE void mc_pack2_run2_s8(int32_t* d, const int8_t* x0, const int8_t* x1, int32_t n, int32_t unit) {
  int32_t* const end = d + 2 * n;
  for (; d != end; d += 2) *d = *x0++ + *x1++ * unit;
}

/* mc_pack4_quad_s8 where the four pixels are not all inside on one row: pair by pair (pixels 0 and 1
 * into the even words, 2 and 3 into the odd ones), one run per kernel row where both pixels of the
 * pair are inside on one row, else both patches gathered into g->patch (ox < 0: the last step,
 * g->rest pixels from -1 - ox, the last one again after them). */
MC_HELPER_FN void mc_pack4_edge_s8(const int8_t* b, int32_t oy, int32_t ox, const mc_packed_geom* g) {
  const int32_t c = g->in_c, k = g->k_h * g->k_w * c, n = ox < 0 ? g->rest : 4;
  int32_t h;
  if (ox < 0) ox = -1 - ox;
  for (h = 0; h < 2; ++h) {
    int32_t* const d = g->packed + h;
    const int8_t* b1 = b;
    int32_t oy1 = oy, ox1 = ox;
    if (2 * h + 1 < n) {
      MC_NEXT_PIXEL(b1, oy1, ox1, g)
    }
    if (oy1 == oy && MC_PACKED_INSIDE(g, oy, ox, ox1 - ox)) {
      const int32_t run = g->k_w * c, next = g->dil_h * g->in_w * c;
      const int8_t* s = mc_packed_src(b, oy, ox, g);
      const int32_t step = (ox1 - ox) * g->stride_w * c; /* 0: the same pixel twice */
      int32_t ky;
      for (ky = 0; ky < g->k_h; ++ky, s += next) mc_pack2_run2_s8(d + 2 * ky * run, s, s + step, run, g->unit);
    } else {
      mc_patch_s8(g->patch, b, oy, ox, g);
      mc_patch_s8(g->patch + k, b1, oy1, ox1, g);
      mc_pack2_run2_s8(d, g->patch, g->patch + k, k, g->unit);
    }
    b = b1; /* the pair's second pixel; the next pair starts after it */
    oy = oy1;
    ox = ox1;
    if (2 * h + 2 < n) {
      MC_NEXT_PIXEL(b, oy, ox, g)
    }
  }
}

/* The packed columns of output pixels (batch base b, row oy, column ox) and the next three in raster
 * order (ox < 0: the last step of g->rest pixels from -1 - ox) into g->packed, interleaved as
 * mc_pack4_s8's (pixels 0 and 1 in the even words, 2 and 3 in the odd ones, per tap and channel as
 * mc_pack2_pair_s8's). Four pixels inside, on one row: one run of k_w in_c inputs per kernel row; else
 * mc_pack4_edge_s8 (a tail call). */
MC_HELPER_FN void mc_pack4_quad_s8(const int8_t* b, int32_t oy, int32_t ox, const mc_packed_geom* g) {
  if (MC_PACKED_INSIDE(g, oy, ox, 3)) {
    mc_pack_rows_s8(mc_packed_src(b, oy, ox, g), g, 4);
    return;
  }
  mc_pack4_edge_s8(b, oy, ox, g);
}

/* FULLY_CONNECTED, two batch rows at a time (the layer's constants in one mc_fc_rows2, per-row
 * requantization): the two-lane sums acc of output rows o..o + 3 (mc_dot_x2r4_s8i on both rows'
 * packed inputs) requantized (mc_requant_fast), clamped to [lo, hi] and stored into y0, y1. One copy
 * per file. */
typedef struct {
  const int32_t *bias, *multiplier, *c, *r; /* per row; the bias with the input zero point folded in */
  int32_t lane, lo, hi;
} mc_fc_rows2;
MC_HELPER_FN void mc_fc_rows2_store(const int64_t* acc, int32_t o, int8_t* y0, int8_t* y1, const mc_fc_rows2* p) {
  const int32_t lane = p->lane;
  int32_t j;
  for (j = 0; j < 4; ++j) {
    const int32_t i = o + j, m = p->multiplier[i], c = p->c[i], r = p->r[i];
    const uint32_t b = (uint32_t)p->bias[i];
    const int32_t s0 = MC_LANE0(acc[j], lane), s1 = MC_LANE1(acc[j], s0, lane);
    const int32_t t0 = mc_requant_fast((int32_t)(b + (uint32_t)s0), m, c, r);
    const int32_t t1 = mc_requant_fast((int32_t)(b + (uint32_t)s1), m, c, r);
    y0[i] = (int8_t)MC_CLAMP(t0, p->lo, p->hi);
    y1[i] = (int8_t)MC_CLAMP(t1, p->lo, p->hi);
  }
}

#endif

#endif /* MICROCOMPILER_KERNEL_PORTABLE_RUNS_H_ */
