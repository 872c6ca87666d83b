/* Helium (MVE) depthwise kernels of the "mve-channels16" and "mve-pixels2x8" int8 DEPTHWISE_CONV_2D
 * variants (microcompiler/ops/fast/mve.py, mve_depthwise.py), with portable fallbacks of the same
 * arithmetic bit for bit (the host build). The requantization records are those of kernel_mve.h. */
#ifndef MICROCOMPILER_KERNEL_MVE_DW_H_
#define MICROCOMPILER_KERNEL_MVE_DW_H_

#include <stdint.h>

#include "microcompiler/kernel_math.h"
#include "microcompiler/kernel_mve.h"

/* ---- Depthwise: 16 channels ---------------------------------------------------------------------
 * VMULLB/VMULLT.S8 multiply the even/odd int8 lanes into int16 products, VMOVLB/VMOVLT widen them
 * into four int32 accumulators holding the channels A = (0, 4, 8, 12), B = (2, 6, 10, 14),
 * C = (1, 5, 9, 13), D = (3, 7, 11, 15) (the requantization records of a group of 16 channels come
 * in that order); the saturating narrowings VQMOVNB/VQMOVNT put them back in channel order. */
typedef struct {
#if MC_MVE
  int32x4_t a, b, c, d;
#else
  int32_t v[16]; /* in channel order */
#endif
} mc_dw16;

/* The accumulators of channel order 0..15 -> the group (0 A, 1 B, 2 C, 3 D) and lane of each. */
#define MC_DW16_GROUP(ch) ((((ch) & 1) << 1) | (((ch) >> 1) & 1))
#define MC_DW16_LANE(ch) ((ch) >> 2)

/* The widening of the int16 products e (even channels) and o (odd channels) into the accumulators
 * (t: a scratch register). GCC inline assembly keeps the four accumulators and four temporaries in
 * the eight Q registers (the intrinsics' code spilled them). */
#define MC_DW16_WIDEN_FIRST(E, O)                                                                        \
  "vmovlb.s16 %q[a], %q[" E "]\n\t"                                                                  \
  "vmovlt.s16 %q[b], %q[" E "]\n\t"                                                                  \
  "vmovlb.s16 %q[c], %q[" O "]\n\t"                                                                  \
  "vmovlt.s16 %q[d], %q[" O "]\n\t"
#define MC_DW16_WIDEN(E, O)                                                                              \
  "vmovlb.s16 %q[t], %q[" E "]\n\t"                                                                  \
  "vadd.i32 %q[a], %q[a], %q[t]\n\t"                                                                 \
  "vmovlt.s16 %q[t], %q[" E "]\n\t"                                                                  \
  "vadd.i32 %q[b], %q[b], %q[t]\n\t"                                                                 \
  "vmovlb.s16 %q[t], %q[" O "]\n\t"                                                                  \
  "vadd.i32 %q[c], %q[c], %q[t]\n\t"                                                                 \
  "vmovlt.s16 %q[t], %q[" O "]\n\t"                                                                  \
  "vadd.i32 %q[d], %q[d], %q[t]\n\t"

/* The taps' inputs are read at x + OFF (OFF a literal in -127..127: VLDRB's immediate offset), the
 * weights at *wp, which advances by 16 per tap. FIRST: the accumulators start with this tap (no
 * zeroing). */
#define MC_DW16_TAP_ASM(WIDEN, ACC, OFF)                                                                         \
  __asm__("vldrb.8 %q[t], [%[x], #%c[off]]\n\t"                                                          \
          "vldrb.8 %q[u], [%[w]], #16\n\t"                                                             \
          "vmullb.s8 %q[e], %q[t], %q[u]\n\t"                                                          \
          "vmullt.s8 %q[o], %q[t], %q[u]\n\t" WIDEN("e", "o")                                            \
          : [a] ACC(dw_->a), [b] ACC(dw_->b), [c] ACC(dw_->c), [d] ACC(dw_->d), [t] "=&w"(vt_), [u] "=&w"(vu_),      \
            [e] "=&w"(ve_), [o] "=&w"(vo_), [w] "+r"(wq_)                                                    \
          : [x] "r"(x_), [off] "n"(OFF)                                                                   \
          : "memory")
#define MC_DW16_TAP2_ASM(WIDEN, ACC, OFF0, OFF1)                                                                          \
  __asm__("vldrb.8 %q[t], [%[x0], #%c[o0]]\n\t"                                                        \
          "vldrb.8 %q[u], [%[w]], #16\n\t"                                                             \
          "vmullb.s8 %q[e], %q[t], %q[u]\n\t"                                                          \
          "vmullt.s8 %q[o], %q[t], %q[u]\n\t"                                                          \
          "vldrb.8 %q[t], [%[x1], #%c[o1]]\n\t"                                                        \
          "vldrb.8 %q[u], [%[w]], #16\n\t"                                                             \
          "vmullb.s8 %q[t], %q[t], %q[u]\n\t"                                                          \
          "vadd.i16 %q[e], %q[e], %q[t]\n\t"                                                           \
          "vldrb.8 %q[t], [%[x1], #%c[o1]]\n\t"                                                        \
          "vmullt.s8 %q[t], %q[t], %q[u]\n\t"                                                          \
          "vadd.i16 %q[o], %q[o], %q[t]\n\t" WIDEN("e", "o")                                             \
          : [a] ACC(dw_->a), [b] ACC(dw_->b), [c] ACC(dw_->c), [d] ACC(dw_->d), [t] "=&w"(vt_), [u] "=&w"(vu_),      \
            [e] "=&w"(ve_), [o] "=&w"(vo_), [w] "+r"(wq_)                                                    \
          : [x0] "r"(x0_), [x1] "r"(x1_), [o0] "n"(OFF0), [o1] "n"(OFF1)                                 \
          : "memory")

/* s (+)= x[OFF + c] * w[c] for the 16 channels c (one tap): 12 instructions per 16 MACs (8 FIRST). */
#if MC_MVE
#define MC_DW16_TAP(S_, X_, OFF, WP_, FIRST)                                                             \
  do {                                                                                                   \
    mc_dw16* const dw_ = (S_);                                                                                   \
    const int8_t* const x_ = (X_); /* the macro arguments are evaluated once */                                                                        \
    const int8_t* wq_ = *(WP_);                                                                            \
    int8x16_t vt_, vu_, ve_, vo_;                                                                                \
    if (FIRST) {                                                                                         \
      MC_DW16_TAP_ASM(MC_DW16_WIDEN_FIRST, "=&w", OFF);                                                              \
    } else {                                                                                             \
      MC_DW16_TAP_ASM(MC_DW16_WIDEN, "+w", OFF);                                                                    \
    }                                                                                                    \
    *(WP_) = wq_;                                                                                          \
  } while (0)
/* Two taps at once: the two int16 products are added in int16 before widening, which is exact when
 * no weight is -128 (|x w0 + x' w1| <= 2 * 128 * 127 < 2^15; the code generator checks): 19
 * instructions per 32 MACs (15 FIRST). */
#define MC_DW16_TAP2(S_, X0_, OFF0, X1_, OFF1, WP_, FIRST)                                               \
  do {                                                                                                   \
    mc_dw16* const dw_ = (S_);                                                                                   \
    const int8_t* const x0_ = (X0_);                                                                      \
    const int8_t* const x1_ = (X1_);                                                                      \
    const int8_t* wq_ = *(WP_);                                                                            \
    int8x16_t vt_, vu_, ve_, vo_;                                                                                \
    if (FIRST) {                                                                                         \
      MC_DW16_TAP2_ASM(MC_DW16_WIDEN_FIRST, "=&w", OFF0, OFF1);                                                             \
    } else {                                                                                             \
      MC_DW16_TAP2_ASM(MC_DW16_WIDEN, "+w", OFF0, OFF1);                                                                   \
    }                                                                                                    \
    *(WP_) = wq_;                                                                                          \
  } while (0)
#else
static inline void mc_dw16_tap_c(mc_dw16* s, const int8_t* x, const int8_t** wp, int first) {
  int c;
  const int8_t* w = *wp;
  for (c = 0; c < 16; ++c) {
    const uint32_t prev = first ? 0u : (uint32_t)s->v[c];
    s->v[c] = (int32_t)(prev + (uint32_t)((int32_t)x[c] * (int32_t)w[c]));
  }
  *wp = w + 16;
}
#define MC_DW16_TAP(S_, X_, OFF, WP_, FIRST) mc_dw16_tap_c((S_), (X_) + (OFF), (WP_), (FIRST))
#define MC_DW16_TAP2(S_, X0_, OFF0, X1_, OFF1, WP_, FIRST)                                               \
  do {                                                                                                   \
    mc_dw16_tap_c((S_), (X0_) + (OFF0), (WP_), (FIRST));                                                 \
    mc_dw16_tap_c((S_), (X1_) + (OFF1), (WP_), 0);                                                       \
  } while (0)
#endif

/* Requantize the 16 channels with the 4 records at q (groups A, B, C, D), + zero point, clamp,
 * store 16 int8 in channel order. */
/* The requantization of accumulator X with the record at byte offset B of q (mc_v4_requant in GCC inline
 * assembly: one base register and immediate offsets for the 16 loads, the accumulators requantized
 * in place; the intrinsics' code kept a pointer per record field and spilled them). */
#define MC_DW16_RQ_RIGHT(X, B, M, N)                                                                     \
  "vldrw.u32 %q[t], [%[q], #" B "]\n\t"                                                                 \
  "vadd.i32 %q[" X "], %q[" X "], %q[t]\n\t"                                                           \
  "vldrw.u32 %q[t], [%[q], #" M "]\n\t"                                                                 \
  "vqrdmulh.s32 %q[" X "], %q[" X "], %q[t]\n\t"                                                       \
  "vldrw.u32 %q[u], [%[q], #" N "]\n\t"                                                                 \
  "vshr.s32 %q[t], %q[" X "], #31\n\t"                                                                 \
  "vqadd.s32 %q[" X "], %q[" X "], %q[t]\n\t"                                                          \
  "vrshl.s32 %q[" X "], %q[" X "], %q[u]\n\t"
#define MC_DW16_RQ_GENERAL(X, B, M, L, N)                                                                \
  "vldrw.u32 %q[t], [%[q], #" B "]\n\t"                                                                 \
  "vadd.i32 %q[" X "], %q[" X "], %q[t]\n\t"                                                           \
  "vldrw.u32 %q[t], [%[q], #" L "]\n\t"                                                                 \
  "vshl.s32 %q[" X "], %q[" X "], %q[t]\n\t"                                                           \
  "vldrw.u32 %q[t], [%[q], #" M "]\n\t"                                                                 \
  "vqrdmulh.s32 %q[" X "], %q[" X "], %q[t]\n\t"                                                       \
  "vldrw.u32 %q[u], [%[q], #" N "]\n\t"                                                                 \
  "vand %q[t], %q[" X "], %q[u]\n\t"                                                                   \
  "vshr.s32 %q[t], %q[t], #31\n\t"                                                                     \
  "vqadd.s32 %q[" X "], %q[" X "], %q[t]\n\t"                                                          \
  "vrshl.s32 %q[" X "], %q[" X "], %q[u]\n\t"
/* The saturating narrowing of the four requantized accumulators, + zero point in saturating int16
 * (a lane that saturates is far outside int8 either way), into y in channel order. */
#define MC_DW16_NARROW                                                                                   \
  "vqmovnb.s32 %q[t], %q[a]\n\t"                                                                       \
  "vqmovnt.s32 %q[t], %q[b]\n\t"                                                                       \
  "vqmovnb.s32 %q[u], %q[c]\n\t"                                                                       \
  "vqmovnt.s32 %q[u], %q[d]\n\t"                                                                       \
  "vqadd.s16 %q[t], %q[t], %[zp]\n\t"                                                                  \
  "vqadd.s16 %q[u], %q[u], %[zp]\n\t"                                                                  \
  "vqmovnb.s16 %q[y], %q[t]\n\t"                                                                       \
  "vqmovnt.s16 %q[y], %q[u]\n\t"

/* Requantize the 16 channels with the 4 records at q (groups A, B, C, D), + zero point, clamp,
 * store 16 int8 in channel order. MVE: 8 instructions per 4 channels (11 general), 10 more for the
 * narrowing and the store. */
static MC_MVE_INLINE void mc_dw16_store(int8_t* dst, const mc_dw16* s, const int32_t* q, int general, int32_t zp,
                                        int32_t lo, int32_t hi) {
#if MC_MVE
#if defined(__OPTIMIZE__)
  if (general != MC_MVE_ORT_REQUANT) { /* ONNX Runtime's float requantization: mc_v4_requant below */
    int32x4_t a = s->a, b = s->b, c = s->c, d = s->d, t, u;
    int8x16_t y;
    if (general) {
      __asm__(MC_DW16_RQ_GENERAL("a", "0", "16", "48", "32") MC_DW16_RQ_GENERAL("b", "64", "80", "112", "96")
                  MC_DW16_RQ_GENERAL("c", "128", "144", "176", "160") MC_DW16_RQ_GENERAL("d", "192", "208", "240", "224")
                      MC_DW16_NARROW
              : [a] "+&w"(a), [b] "+&w"(b), [c] "+&w"(c), [d] "+&w"(d), [t] "=&w"(t), [u] "=&w"(u), [y] "=&w"(y)
              : [q] "r"(q), [zp] "r"(zp)
              : "memory");
    } else {
      __asm__(MC_DW16_RQ_RIGHT("a", "0", "16", "32") MC_DW16_RQ_RIGHT("b", "48", "64", "80")
                  MC_DW16_RQ_RIGHT("c", "96", "112", "128") MC_DW16_RQ_RIGHT("d", "144", "160", "176") MC_DW16_NARROW
              : [a] "+&w"(a), [b] "+&w"(b), [c] "+&w"(c), [d] "+&w"(d), [t] "=&w"(t), [u] "=&w"(u), [y] "=&w"(y)
              : [q] "r"(q), [zp] "r"(zp)
              : "memory");
    }
    if (lo > -128) y = vmaxq_s8(y, vdupq_n_s8((int8_t)lo)); /* the saturation already clamps to int8 */
    if (hi < 127) y = vminq_s8(y, vdupq_n_s8((int8_t)hi));
    vstrbq_s8(dst, y);
    return;
  }
#endif
  const int32x4_t a = mc_v4_requant(s->a, q, general);
  const int32x4_t b = mc_v4_requant(s->b, q + MC_MVE_RECORD_OF(general), general);
  const int32x4_t c = mc_v4_requant(s->c, q + 2 * MC_MVE_RECORD_OF(general), general);
  const int32x4_t d = mc_v4_requant(s->d, q + 3 * MC_MVE_RECORD_OF(general), general);
  const int16x8_t even = vqaddq_n_s16(vqmovntq_s32(vqmovnbq_s32(vuninitializedq_s16(), a), b), (int16_t)zp);
  const int16x8_t odd = vqaddq_n_s16(vqmovntq_s32(vqmovnbq_s32(vuninitializedq_s16(), c), d), (int16_t)zp);
  int8x16_t y = vqmovntq_s16(vqmovnbq_s16(vuninitializedq_s8(), even), odd);
  if (lo > -128) y = vmaxq_s8(y, vdupq_n_s8((int8_t)lo));
  if (hi < 127) y = vminq_s8(y, vdupq_n_s8((int8_t)hi));
  vstrbq_s8(dst, y);
#else
  int ch;
  for (ch = 0; ch < 16; ++ch) {
    const int32_t* r = q + MC_MVE_RECORD_OF(general) * MC_DW16_GROUP(ch);
    const int i = MC_DW16_LANE(ch);
    const int32_t acc = (int32_t)((uint32_t)s->v[ch] + (uint32_t)r[MC_MVE_BIAS + i]);
    const int32_t v =
        (general == MC_MVE_ORT_REQUANT
             ? mc_ort_requant_lane(s->v[ch], r[MC_MVE_BIAS + i], r[MC_MVE_MULT + i])
             : mc_requantize(acc, r[MC_MVE_MULT + i], (general ? r[MC_MVE_LSHIFT + i] : 0) + r[MC_MVE_NRSHIFT + i])) +
        zp;
    dst[ch] = (int8_t)MC_CLAMP(v, lo, hi);
  }
#endif
}

#endif /* MICROCOMPILER_KERNEL_MVE_DW_H_ */
