/* The portable C dot kernels of the int8 CONV_2D and FULLY_CONNECTED variants on cores without the
 * DSP extension (Cortex-M0/M0+/M3, and the host build): plain C99, no intrinsics nor inline assembly
 * (the same C serves the Cortex-M0, which has no long multiply and only 8 low registers). Built on
 * kernel_simd.h's helpers (mc_lane, MC_ALWAYS_INLINE). Each kernel states the bound its caller proves
 * for its signed arithmetic. */
#ifndef MICROCOMPILER_KERNEL_PORTABLE_H_
#define MICROCOMPILER_KERNEL_PORTABLE_H_

#include <stdint.h>

#include "microcompiler/kernel_simd.h"

/* Four pixels x two output channels in portable C (CONV_2D im2col without the DSP extension): the
 * column as mc_dot_p4 reads it, the int8 weight rows of channels c and c + 1 (row_bytes apart, a
 * literal where this is inlined): acc[p] += sum_k col_p[k] * w[k], acc[4 + p] += sum_k col_p[k] *
 * w[row_bytes + k], k < 4 * steps (steps >= 1). Each column value is loaded once for both channels:
 * per input 2 LDRSB of weights, 4 LDRSH of the column, 8 MLA (Cortex-M3: about 1.9 instructions per
 * MAC where mc_dot_p4's 2.6). Signed arithmetic (separate MLA chains): the caller proves the partial
 * sums stay within int32 (full groups of valid pixels, |bias| + 255 sum|w| < 2^30). Returns w past
 * the two rows. */
#define MC_P4X2_K(J, L)                \
  u = w[(J)];                          \
  v = w[row_bytes + (J)];              \
  t = mc_lane(col, (L));               \
  a0 += t * u;                         \
  b0 += t * v;                         \
  t = mc_lane(col, 4 + (L));           \
  a1 += t * u;                         \
  b1 += t * v;                         \
  t = mc_lane(col, 8 + (L));           \
  a2 += t * u;                         \
  b2 += t * v;                         \
  t = mc_lane(col, 12 + (L));          \
  a3 += t * u;                         \
  b3 += t * v
static MC_ALWAYS_INLINE const int8_t* mc_dot_p4x2_s8(const int32_t* col, const int8_t* w, int32_t row_bytes,
                                                     int32_t steps, int32_t* acc) {
  int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
  int32_t b0 = acc[4], b1 = acc[5], b2 = acc[6], b3 = acc[7];
  const int32_t* const end = col + 8 * steps;
  for (; col != end; col += 8, w += 4) {
    int32_t u, v, t;
    MC_P4X2_K(0, 0); /* the lanes of pixel p: 4p k0, 4p + 1 k2, 4p + 2 k1, 4p + 3 k3 */
    MC_P4X2_K(1, 2);
    MC_P4X2_K(2, 1);
    MC_P4X2_K(3, 3);
  }
  acc[0] = a0;
  acc[1] = a1;
  acc[2] = a2;
  acc[3] = a3;
  acc[4] = b0;
  acc[5] = b1;
  acc[6] = b2;
  acc[7] = b3;
  return w + row_bytes;
}
#undef MC_P4X2_K

/* FULLY_CONNECTED rows4 in portable C (no DSP extension): four output rows against one input vector,
 * the rows' int8 weights interleaved per input (w[4 k + r]: the 4 rows' weights of input k together,
 * so one pointer with small immediate offsets reaches them): acc[r] += sum_k x[k] w[4 k + r], k < n
 * (n >= 0; acc holds the bias on entry). Signed arithmetic, so that the compiler keeps the four MLA
 * chains (with wrapping arithmetic GCC reassociates them into spills): the caller guarantees that no
 * partial sum leaves int32 (|bias| + 128 sum|w| < 2^31, fully_connected.py). The n mod 8 inputs first,
 * then 8 per iteration: per input one LDRSB of x, 4 LDRSB + 4 MLA, and the loop's 5 instructions per
 * 8 inputs (Cortex-M3: 2.4 instructions per MAC; 8 registers saved, no spills). One copy per file
 * (not inlined): every layer calls it. */
#if defined(__GNUC__)
#define MC_HELPER_FN static __attribute__((noinline, unused))
#else
#define MC_HELPER_FN static
#endif
MC_HELPER_FN void mc_dot_r4_s8i(const int8_t* x, const int8_t* w, int32_t n, int32_t* acc) {
  int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
  const int8_t* end;
  for (; n & 7; --n, ++x, w += 4) {
    const int32_t v = x[0];
    a0 += v * w[0];
    a1 += v * w[1];
    a2 += v * w[2];
    a3 += v * w[3];
  }
  for (end = x + n; x != end; x += 8, w += 32) {
    int32_t v;
    v = x[0];
    a0 += v * w[0];
    a1 += v * w[1];
    a2 += v * w[2];
    a3 += v * w[3];
    v = x[1];
    a0 += v * w[4];
    a1 += v * w[5];
    a2 += v * w[6];
    a3 += v * w[7];
    v = x[2];
    a0 += v * w[8];
    a1 += v * w[9];
    a2 += v * w[10];
    a3 += v * w[11];
    v = x[3];
    a0 += v * w[12];
    a1 += v * w[13];
    a2 += v * w[14];
    a3 += v * w[15];
    v = x[4];
    a0 += v * w[16];
    a1 += v * w[17];
    a2 += v * w[18];
    a3 += v * w[19];
    v = x[5];
    a0 += v * w[20];
    a1 += v * w[21];
    a2 += v * w[22];
    a3 += v * w[23];
    v = x[6];
    a0 += v * w[24];
    a1 += v * w[25];
    a2 += v * w[26];
    a3 += v * w[27];
    v = x[7];
    a0 += v * w[28];
    a1 += v * w[29];
    a2 += v * w[30];
    a3 += v * w[31];
  }
  acc[0] = a0;
  acc[1] = a1;
  acc[2] = a2;
  acc[3] = a3;
}

/* CONV_2D 1x1 ("pointwise") in portable C: two pixels (x and x + stride) x four output channels, the
 * weights interleaved per input as for mc_dot_r4_s8i (w[4 k + r]); each weight is loaded once for
 * both pixels: acc[r] += sum_k x[k] w[4 k + r], acc[4 + r] += sum_k x[stride + k] w[4 k + r], k < n
 * (n >= 0; acc holds the biases on entry). Signed arithmetic as in mc_dot_r4_s8i (the caller proves
 * the partial sums stay within int32). The n mod 4 inputs first, then 4 per iteration: per input 2
 * LDRSB of x, 4 LDRSB of w, 8 MLA (Cortex-M3: 1.9 instructions per MAC with the loop). */
MC_HELPER_FN void mc_dot_p2r4_s8i(const int8_t* x, int32_t stride, const int8_t* w, int32_t n, int32_t* acc) {
  int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
  int32_t b0 = acc[4], b1 = acc[5], b2 = acc[6], b3 = acc[7];
  const int8_t* end;
  int32_t u, v, t;
  for (; n & 3; --n, ++x, w += 4) {
    u = x[0];
    v = x[stride];
    t = w[0];
    a0 += u * t;
    b0 += v * t;
    t = w[1];
    a1 += u * t;
    b1 += v * t;
    t = w[2];
    a2 += u * t;
    b2 += v * t;
    t = w[3];
    a3 += u * t;
    b3 += v * t;
  }
  for (end = x + n; x != end; x += 4, w += 16) {
    u = x[0];
    v = x[0 + stride];
    t = w[0];
    a0 += u * t;
    b0 += v * t;
    t = w[1];
    a1 += u * t;
    b1 += v * t;
    t = w[2];
    a2 += u * t;
    b2 += v * t;
    t = w[3];
    a3 += u * t;
    b3 += v * t;
    u = x[1];
    v = x[1 + stride];
    t = w[4];
    a0 += u * t;
    b0 += v * t;
    t = w[5];
    a1 += u * t;
    b1 += v * t;
    t = w[6];
    a2 += u * t;
    b2 += v * t;
    t = w[7];
    a3 += u * t;
    b3 += v * t;
    u = x[2];
    v = x[2 + stride];
    t = w[8];
    a0 += u * t;
    b0 += v * t;
    t = w[9];
    a1 += u * t;
    b1 += v * t;
    t = w[10];
    a2 += u * t;
    b2 += v * t;
    t = w[11];
    a3 += u * t;
    b3 += v * t;
    u = x[3];
    v = x[3 + stride];
    t = w[12];
    a0 += u * t;
    b0 += v * t;
    t = w[13];
    a1 += u * t;
    b1 += v * t;
    t = w[14];
    a2 += u * t;
    b2 += v * t;
    t = w[15];
    a3 += u * t;
    b3 += v * t;
  }
  acc[0] = a0;
  acc[1] = a1;
  acc[2] = a2;
  acc[3] = a3;
  acc[4] = b0;
  acc[5] = b1;
  acc[6] = b2;
  acc[7] = b3;
}

/* ---- Two pixels per multiply: lanes in a 64-bit sum ---------------------------------------------
 * Where the core has a 32 x 32 -> 64 multiply-accumulate (SMLAL: Armv7-M and up, and the host),
 * two pixels' int8 inputs x0, x1 of input k are packed into one word X = x0 + x1 * 2^L, and one SMLAL
 * per (input, output channel) adds w * X = w x0 + w x1 * 2^L to a 64-bit sum: two MACs per
 * instruction. The low L bits then hold S0 = sum w x0 and the bits above them S1 = sum w x1,
 * exactly, while S0 fits L bits signed: the code generator chooses L from the weights
 * (128 sum|w| < 2^(L - 1), L <= 23 so that X fits int32). Cores without the long multiply (Armv6-M:
 * Cortex-M0/M0+, and Armv8-M Baseline) run the int32 kernels above instead (MC_LONG_MULTIPLY = 0):
 * the same weight layout, the same results. */
#ifndef MC_LONG_MULTIPLY /* a build may set it to 0 (the tests run both paths on the host) */
#if defined(__ARM_ARCH_6M__) || defined(__ARM_ARCH_8M_BASE__)
#define MC_LONG_MULTIPLY 0
#else
#define MC_LONG_MULTIPLY 1
#endif
#endif

#if MC_LONG_MULTIPLY
/* d[k] = x0[k] + x1[k] * 2^L for k < n (n >= 1; L a literal where this is inlined). */
static MC_ALWAYS_INLINE void mc_pack2_s8(int32_t* d, const int8_t* x0, const int8_t* x1, int32_t n, int L) {
  const int32_t* const end = d + n;
  do {
    *d++ = (int32_t)((uint32_t)(int32_t)*x0++ + ((uint32_t)(int32_t)*x1++ << L));
  } while (d != end);
}

/* S0 (the low L bits, sign-extended) and S1 (the rest) of a two-lane sum: S >> L (bits L.. of S, one
 * 64-bit shift's low word) is S1 - 1 where S0 < 0. */
#define MC_LANE0(S_, L_) ((int32_t)((uint32_t)(uint64_t)(S_) << (32 - (L_))) >> (32 - (L_)))
#define MC_LANE1(S_, LANE0_, L_) ((int32_t)((uint32_t)((uint64_t)(S_) >> (L_)) - (uint32_t)((LANE0_) >> 31)))
/* The lanes of a sum that started at 2^(L - 1) (mc_dot_x4r2_s8i): the low lane plus 2^(L - 1), in
 * [0, 2^L) while |S0| < 2^(L - 1), and the high lane, S >> L with no sign correction. */
#define MC_LANE0_OFS(S_, L_) ((int32_t)((uint32_t)(uint64_t)(S_) & ((1u << (L_)) - 1u)))
#define MC_LANE1_OFS(S_, L_) ((int32_t)(uint32_t)((uint64_t)(S_) >> (L_)))

/* Four output channels against a packed column X (n words, n >= 1) with the weights interleaved per
 * input as for mc_dot_r4_s8i (w[4 k + r]): acc[r] = sum_k X[k] w[4 k + r]. Per input one LDR of X,
 * 4 LDRSB of w and 4 SMLAL; 4 inputs per iteration (Cortex-M3: about 40 instructions per 32 MACs). No overflow: |acc| < 2^31 * 128 n. */
/* (the products of even inputs in the order 0..3, of odd ones 3..0: written in one order, GCC moves
 * the 64-bit sums between registers in the unrolled loop on the Cortex-M3) */
#define MC_X2R4_UP(v)                \
  a0 += (int64_t)(v) * w[0];          \
  a1 += (int64_t)(v) * w[1];          \
  a2 += (int64_t)(v) * w[2];          \
  a3 += (int64_t)(v) * w[3];          \
  w += 4
#define MC_X2R4_DOWN(v)              \
  a3 += (int64_t)(v) * w[3];          \
  a2 += (int64_t)(v) * w[2];          \
  a1 += (int64_t)(v) * w[1];          \
  a0 += (int64_t)(v) * w[0];          \
  w += 4
MC_HELPER_FN void mc_dot_x2r4_s8i(const int32_t* X, const int8_t* w, int32_t n, int64_t* acc) {
  int64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  const int32_t* end;
  for (; n & 3; --n) {
    const int32_t v = *X++;
    MC_X2R4_UP(v);
  }
  for (end = X + n; X != end; X += 4) {
    MC_X2R4_UP(X[0]);
    MC_X2R4_DOWN(X[1]);
    MC_X2R4_UP(X[2]);
    MC_X2R4_DOWN(X[3]);
  }
  acc[0] = a0;
  acc[1] = a1;
  acc[2] = a2;
  acc[3] = a3;
}
#undef MC_X2R4_UP
#undef MC_X2R4_DOWN

/* Four pixels: two packed columns interleaved, d[2 k] = x0[k] + x1[k] * 2^L and d[2 k + 1] = x2[k] +
 * x3[k] * 2^L for k < n (n >= 1; L a literal where this is inlined). */
static MC_ALWAYS_INLINE void mc_pack4_s8(int32_t* d, const int8_t* x0, const int8_t* x1, const int8_t* x2,
                                         const int8_t* x3, int32_t n, int L) {
  const int32_t* const end = d + 2 * n;
  do {
    d[0] = (int32_t)((uint32_t)(int32_t)*x0++ + ((uint32_t)(int32_t)*x1++ << L));
    d[1] = (int32_t)((uint32_t)(int32_t)*x2++ + ((uint32_t)(int32_t)*x3++ << L));
    d += 2;
  } while (d != end);
}

/* Two output channels (w[4 k] and w[4 k + 1], the interleaving of mc_dot_x2r4_s8i) against the two
 * interleaved packed columns of mc_pack4_s8 (XX[2 k], XX[2 k + 1], n inputs, n a multiple of 8,
 * n >= 8): acc[0], acc[1] the first column's sums, acc[2], acc[3] the second's, all four starting at
 * the caller's acc[0] (the only one it writes). Per input one LDRD of
 * both columns, 2 LDRSB of weights and 4 SMLAL for 8 MACs, 8 inputs per iteration (Cortex-M3: 60
 * instructions per 64 MACs in the loop, no spill; mc_dot_x2r4_s8i takes 40 per 32). The order alternates
 * between inputs as in mc_dot_x2r4_s8i. No head loop for other depths (mc_dot_x2r4_s8i4 takes them):
 * with one, GCC allocates the loop's registers worse. */
#define MC_X4R2_UP(J)                                        \
  {                                                          \
    const int32_t X0 = XX[2 * (J)], X1 = XX[2 * (J) + 1];    \
    int32_t v = w[4 * (J)];                                  \
    a0 += (int64_t)X0 * v;                                   \
    b0 += (int64_t)X1 * v;                                   \
    v = w[4 * (J) + 1];                                      \
    b1 += (int64_t)X1 * v;                                   \
    a1 += (int64_t)X0 * v;                                   \
  }
#define MC_X4R2_DOWN(J)                                      \
  {                                                          \
    const int32_t X0 = XX[2 * (J)], X1 = XX[2 * (J) + 1];    \
    int32_t v = w[4 * (J) + 1];                              \
    a1 += (int64_t)X0 * v;                                   \
    b1 += (int64_t)X1 * v;                                   \
    v = w[4 * (J)];                                          \
    b0 += (int64_t)X1 * v;                                   \
    a0 += (int64_t)X0 * v;                                   \
  }
#define MC_X4R2_FOUR(J)    \
  {                        \
    MC_X4R2_UP(J);         \
    MC_X4R2_DOWN((J) + 1); \
    MC_X4R2_UP((J) + 2);   \
    MC_X4R2_DOWN((J) + 3); \
  }
/* A depth GCC knows (one caller's constant) but one iteration or less: hidden from the optimizer, so
 * that the loop stays a loop (where every call of a file had n = 8, GCC scheduled the one iteration's
 * loads first and spilled 116 bytes of stack); larger constant depths keep their constant. */
#if defined(__GNUC__)
#define MC_X4R2_OPAQUE_SMALL(n)                               \
  do {                                                        \
    if (__builtin_constant_p(n) && (n) <= 8) __asm__("" : "+r"(n)); \
  } while (0)
#else
#define MC_X4R2_OPAQUE_SMALL(n) (void)0
#endif
MC_HELPER_FN void mc_dot_x4r2_s8i(const int32_t* XX, const int8_t* w, int32_t n, int64_t* acc) {
  int64_t a0 = acc[0], a1 = a0, b0 = a0, b1 = a0;
  MC_X4R2_OPAQUE_SMALL(n);
  for (n >>= 3; n; --n, XX += 16, w += 32) { /* (a count: with an end pointer GCC spills a sum) */
    MC_X4R2_FOUR(0);
    MC_X4R2_FOUR(4);
  }
  acc[0] = a0;
  acc[1] = a1;
  acc[2] = b0;
  acc[3] = b1;
}
/* The same for any n >= 1 (the n mod 4 inputs first, then 4 per iteration: 32 instructions per 32
 * MACs where every caller's n is a multiple of 4); the kernels take it where n is not a multiple of 8
 * (one copy, dropped by the linker where unused). */
MC_HELPER_FN void mc_dot_x4r2_s8i4(const int32_t* XX, const int8_t* w, int32_t n, int64_t* acc) {
  int64_t a0 = acc[0], a1 = a0, b0 = a0, b1 = a0;
  MC_X4R2_OPAQUE_SMALL(n);
  for (; n & 3; --n, XX += 2, w += 4) MC_X4R2_UP(0);
  for (n >>= 2; n; --n, XX += 8, w += 16) MC_X4R2_FOUR(0);
  acc[0] = a0;
  acc[1] = a1;
  acc[2] = b0;
  acc[3] = b1;
}
#undef MC_X4R2_UP
#undef MC_X4R2_DOWN
#undef MC_X4R2_FOUR
#undef MC_X4R2_OPAQUE_SMALL
#endif

/* ---- Two output rows per multiply: FULLY_CONNECTED "pairs" (one input vector) -------------------
 * Four output rows against one input vector with the int8 weights as they are in the model file (one
 * byte each), input by input one word of the 4 rows' weights stored [w0 ^ 0x80, w3, w2 ^ 0x80, w1]
 * (bytes from the lowest; ^ 0x80: w + 128, unsigned). Masked with 0xFF0000FF the word is the int32
 * E = (w0 + 128) + w1 2^24, rotated by 16 and masked E' = (w2 + 128) + w3 2^24, so one 32 x 32 -> 64
 * multiply-accumulate of the input x adds x (w0 + 128) in the low 24 bits and x w1 above them:
 * per input one LDRSB, one LDR, two AND, two SMLAL for 4 MACs (Cortex-M3: 1.63 instructions per MAC
 * with the loop, where mc_dot_r4_s8i's 2.4). The low lane holds sum x (w + 128) exactly while it
 * fits 24 bits signed: 256 inputs per pass (256 * 128 * 255 < 2^23), then both lanes are added into
 * the int32 sums. acc[r] += sum_k x[k] w_r[k] for k < n (n >= 0); the low lanes' 128 sum x is taken
 * off (mc_dot_r4_s8p sums the vector once for all the rows of a layer). Wrapping
 * arithmetic on acc: the caller proves only that the final sums fit int32. Without the long
 * multiply (MC_LONG_MULTIPLY = 0: Cortex-M0/M0+) the same layout row by row in int32. */
#define MC_PAIRS_CHUNK 256
/* x[0..n) in passes of MC_PAIRS_CHUNK inputs of PASS (mc_pairs_pass, mc_pairs_u8_pass) into acc;
 * advances x and w, leaves n at 0 */
#define MC_PAIRS_PASSES(PASS, x, w, n, acc)                                   \
  while ((n) > 0) {                                                           \
    const int32_t chunk_ = (n) < MC_PAIRS_CHUNK ? (n) : MC_PAIRS_CHUNK;       \
    (w) = PASS((x), (w), chunk_, (acc));                                      \
    (x) += chunk_;                                                            \
    (n) -= chunk_;                                                            \
  }
#if MC_LONG_MULTIPLY
#define MC_PAIRS_MASK(v_) ((int32_t)((v_) & mask))
#define MC_PAIRS_MASK_ROR(v_) ((int32_t)((((v_) >> 16) | ((v_) << 16)) & mask))
#define MC_PAIRS_K(J)                          \
  t = x[(J)];                                  \
  v = w[(J)];                                  \
  s0 += (int64_t)t * MC_PAIRS_MASK(v);         \
  s1 += (int64_t)t * MC_PAIRS_MASK_ROR(v)
/* the two lanes of s (low: 24 bits signed) added into acc[0] (low) and acc[1] (high) */
static MC_ALWAYS_INLINE void mc_pairs_flush(int64_t s, int32_t* acc) {
  const int32_t lo = (int32_t)((uint32_t)(uint64_t)s << 8) >> 8;
  const int32_t hi = (int32_t)(uint32_t)(uint64_t)(s >> 24) - (lo >> 31);
  acc[0] = (int32_t)((uint32_t)acc[0] + (uint32_t)lo);
  acc[1] = (int32_t)((uint32_t)acc[1] + (uint32_t)hi);
}
/* One pass of at most MC_PAIRS_CHUNK inputs (n >= 1; a literal where this is inlined): pair[0..3] +=
 * the 4 rows' sums with the low lanes' 128 sum x in; returns w past the pass. */
static MC_ALWAYS_INLINE const uint32_t* mc_pairs_pass(const int8_t* x, const uint32_t* w, int32_t n, int32_t* pair) {
  const uint32_t mask = 0xFF0000FFu;
  const int8_t* const end = x + n;
  int64_t s0 = 0, s1 = 0;
  uint32_t v;
  int32_t t;
  for (; (end - x) & 7; ++x, ++w) {
    MC_PAIRS_K(0);
  }
  for (; x != end; x += 8, w += 8) { /* 8 inputs per iteration (Cortex-M3: 52 instructions per 32 MACs, 56 with 4) */
    MC_PAIRS_K(0);
    MC_PAIRS_K(1);
    MC_PAIRS_K(2);
    MC_PAIRS_K(3);
    MC_PAIRS_K(4);
    MC_PAIRS_K(5);
    MC_PAIRS_K(6);
    MC_PAIRS_K(7);
  }
  mc_pairs_flush(s0, pair);
  mc_pairs_flush(s1, pair + 2);
  return w;
}
#undef MC_PAIRS_K
#undef MC_PAIRS_MASK
#undef MC_PAIRS_MASK_ROR
#else
/* the same words row by row in int32: the low lanes' rows with their 128 sum x, as the long path */
static MC_ALWAYS_INLINE const uint32_t* mc_pairs_pass(const int8_t* x, const uint32_t* w, int32_t n, int32_t* pair) {
  const uint8_t* b = (const uint8_t*)w;
  uint32_t a0 = (uint32_t)pair[0], a1 = (uint32_t)pair[1], a2 = (uint32_t)pair[2], a3 = (uint32_t)pair[3];
  const int8_t* const end = x + n;
  for (; x != end; ++x, b += 4) {
    const int32_t t = x[0];
    a0 += (uint32_t)(t * (int32_t)b[0]);
    a3 += (uint32_t)(t * (int32_t)(int8_t)b[1]);
    a2 += (uint32_t)(t * (int32_t)b[2]);
    a1 += (uint32_t)(t * (int32_t)(int8_t)b[3]);
  }
  pair[0] = (int32_t)a0;
  pair[1] = (int32_t)a1;
  pair[2] = (int32_t)a2;
  pair[3] = (int32_t)a3;
  return (const uint32_t*)b;
}
#endif
/* The whole depth in passes of MC_PAIRS_CHUNK: acc[r] = start[r] + the row's sum over the n inputs x
 * (n >= 0); *sx: 128 times the sum of x[0..n), computed where it is still 0 (by the first call of a
 * layer, for the others). Returns w past the 4 rows. */
MC_HELPER_FN const uint32_t* mc_dot_r4_s8p(const int8_t* x, const uint32_t* w, int32_t n, int32_t* sx,
                                           const int32_t* start, int32_t* acc) {
  if (*sx == 0) {
    int32_t sum = 0, k;
    for (k = 0; k < n; ++k) sum += x[k];
    *sx = (int32_t)((uint32_t)sum << 7);
  }
  acc[0] = (int32_t)((uint32_t)start[0] - (uint32_t)*sx);
  acc[1] = start[1];
  acc[2] = (int32_t)((uint32_t)start[2] - (uint32_t)*sx);
  acc[3] = start[3];
  MC_PAIRS_PASSES(mc_pairs_pass, x, w, n, acc);
  return w;
}

/* ---- The same with unsigned inputs: 5 instructions per 4 MACs ------------------------------------
 * Where the input vector can be offset to x + 128 (unsigned bytes x'), all four weights of a word are
 * stored w + 128 (u, unsigned bytes, in row order: w[4 k + r] ^ 0x80) and the whole word is one
 * operand: T = sum x' (u0 + u1 2^8 + u2 2^16 + u3 2^24) (UMLAL, no mask), next to
 * T' = sum x' (u2 + u1 2^24) (the word rotated by 16 and masked): T' gives A2 = sum x' u2 (low 24
 * bits) and A1 (above), T - 2^8 A1 - 2^16 A2 gives A0 and A3 the same way; every lane is below 2^24
 * for at most 256 inputs (256 * 255 * 255 < 2^24). Per input one LDRB, one LDR, one AND, two UMLAL
 * (Cortex-M3: 1.5 instructions per MAC with the loop). acc[r] += sum_k x'[k] u_r[k], k < n (n >= 1,
 * at most MC_PAIRS_CHUNK; a literal where this is inlined), wrapping; the caller takes the offsets
 * off (sum x' u = sum x' w + 128 sum x'). Returns w past the pass. Without the long multiply the same
 * layout row by row. */
#if MC_LONG_MULTIPLY
/* (signed sums of the unsigned products: with unsigned ones GCC reassociates them, UMULL + ADDS/ADC) */
#define MC_PAIRS_UK(J)                                  \
  t = x[(J)];                                           \
  v = w[(J)];                                           \
  s0 += (int64_t)((uint64_t)t * v);                     \
  s1 += (int64_t)((uint64_t)t * ((((v) >> 16) | ((v) << 16)) & mask))
/* the four rows of T = s (whole words) and T' = s1 (rotated and masked) added into acc[0..3] */
static MC_ALWAYS_INLINE void mc_pairs_u_flush(int64_t s, int64_t s1, int32_t* acc) {
  const uint32_t a2 = (uint32_t)s1 & 0xFFFFFFu;
  const uint32_t a1 = (uint32_t)(s1 >> 24);
  const uint64_t rest = (uint64_t)s - ((uint64_t)a1 << 8) - ((uint64_t)a2 << 16);
  acc[0] = (int32_t)((uint32_t)acc[0] + ((uint32_t)rest & 0xFFFFFFu));
  acc[1] = (int32_t)((uint32_t)acc[1] + a1);
  acc[2] = (int32_t)((uint32_t)acc[2] + a2);
  acc[3] = (int32_t)((uint32_t)acc[3] + (uint32_t)(rest >> 24));
}
static MC_ALWAYS_INLINE const uint32_t* mc_pairs_u_pass(const uint8_t* x, const uint32_t* w, int32_t n, int32_t* acc) {
  const uint32_t mask = 0xFF0000FFu;
  const uint8_t* const end = x + n;
  int64_t s0 = 0, s1 = 0;
  uint32_t v, t;
  for (; (end - x) & 3; ++x, ++w) {
    MC_PAIRS_UK(0);
  }
  for (; x != end; x += 4, w += 4) {
    MC_PAIRS_UK(0);
    MC_PAIRS_UK(1);
    MC_PAIRS_UK(2);
    MC_PAIRS_UK(3);
  }
  mc_pairs_u_flush(s0, s1, acc);
  return w;
}
#undef MC_PAIRS_UK
#else
static MC_ALWAYS_INLINE const uint32_t* mc_pairs_u_pass(const uint8_t* x, const uint32_t* w, int32_t n, int32_t* acc) {
  const uint8_t* b = (const uint8_t*)w;
  uint32_t a0 = (uint32_t)acc[0], a1 = (uint32_t)acc[1], a2 = (uint32_t)acc[2], a3 = (uint32_t)acc[3];
  const uint8_t* const end = x + n;
  for (; x != end; ++x, b += 4) {
    const uint32_t t = x[0];
    a0 += t * b[0];
    a1 += t * b[1];
    a2 += t * b[2];
    a3 += t * b[3];
  }
  acc[0] = (int32_t)a0;
  acc[1] = (int32_t)a1;
  acc[2] = (int32_t)a2;
  acc[3] = (int32_t)a3;
  return (const uint32_t*)b;
}
#endif

/* mc_pairs_u_pass for 8 rows: two words per input (rows 0..3, rows 4..7, one LDRD), 8 MACs per LDRB,
 * LDRD, 2 AND, 4 UMLAL (Cortex-M3: 71 instructions per 8 inputs in the loop, 1.11 per MAC, where 4
 * inputs per iteration took 43 per 4 with a sum spilled; 8 accumulator registers, the loop end on the
 * stack). acc[r] += sum_k x'[k] u_r[k] for r < 8, as mc_pairs_u_pass. */
#if MC_LONG_MULTIPLY
#define MC_PAIRS_U8K(J)                                                  \
  t = x[(J)];                                                            \
  v = w[2 * (J)];                                                        \
  u = w[2 * (J) + 1];                                                    \
  s0 += (int64_t)((uint64_t)t * v);                                      \
  s1 += (int64_t)((uint64_t)t * ((((v) >> 16) | ((v) << 16)) & mask));   \
  s2 += (int64_t)((uint64_t)t * u);                                      \
  s3 += (int64_t)((uint64_t)t * ((((u) >> 16) | ((u) << 16)) & mask))
/* the pass's four 64-bit sums (T, T' of rows 0..3, of rows 4..7) into s[0..3]; returns w past the pass */
static MC_ALWAYS_INLINE const uint32_t* mc_pairs_u8_sums(const uint8_t* x, const uint32_t* w, int32_t n, int64_t* s) {
  const uint32_t mask = 0xFF0000FFu;
  const uint8_t* const end = x + n;
  int64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  uint32_t v, u, t;
  for (; (end - x) & 7; ++x, w += 2) {
    MC_PAIRS_U8K(0);
  }
  for (; x != end; x += 8, w += 16) {
    MC_PAIRS_U8K(0);
    MC_PAIRS_U8K(1);
    MC_PAIRS_U8K(2);
    MC_PAIRS_U8K(3);
    MC_PAIRS_U8K(4);
    MC_PAIRS_U8K(5);
    MC_PAIRS_U8K(6);
    MC_PAIRS_U8K(7);
  }
  s[0] = s0;
  s[1] = s1;
  s[2] = s2;
  s[3] = s3;
  return w;
}
static MC_ALWAYS_INLINE const uint32_t* mc_pairs_u8_pass(const uint8_t* x, const uint32_t* w, int32_t n, int32_t* acc) {
  int64_t s[4];
  w = mc_pairs_u8_sums(x, w, n, s);
  mc_pairs_u_flush(s[0], s[1], acc);
  mc_pairs_u_flush(s[2], s[3], acc + 4);
  return w;
}
#undef MC_PAIRS_U8K
#else
static MC_ALWAYS_INLINE const uint32_t* mc_pairs_u8_pass(const uint8_t* x, const uint32_t* w, int32_t n, int32_t* acc) {
  const uint8_t* b = (const uint8_t*)w;
  uint32_t a[8];
  const uint8_t* const end = x + n;
  int r;
  for (r = 0; r < 8; ++r) a[r] = (uint32_t)acc[r];
  for (; x != end; ++x, b += 8) {
    const uint32_t t = x[0];
    for (r = 0; r < 8; ++r) a[r] += t * b[r];
  }
  for (r = 0; r < 8; ++r) acc[r] = (int32_t)a[r];
  return (const uint32_t*)b;
}
#endif

/* The bytes of p[0..n) offset by 128 in place (int8 <-> x + 128 as uint8), returning the sum of the
 * offset values; n a literal where this is inlined. */
static MC_ALWAYS_INLINE int32_t mc_offset128_s8(int8_t* p, int32_t n) {
  uint8_t* b = (uint8_t*)p;
  int32_t sum = 0;
  int32_t i;
  for (i = 0; i < n; ++i) {
    const uint32_t u = (uint32_t)b[i] ^ 0x80u;
    b[i] = (uint8_t)u;
    sum += (int32_t)u;
  }
  return sum;
}

#endif /* MICROCOMPILER_KERNEL_PORTABLE_H_ */
