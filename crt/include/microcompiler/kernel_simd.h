/* SIMD building blocks of the fast int8 kernels ("dsp" variants), with portable fallbacks.
 *
 * On a core with the Armv7E-M DSP extension (Cortex-M4, M7, M33, M55: __ARM_FEATURE_DSP) these
 * are single instructions (SMLAD, SXTB16, SMMLAR, ...) or short GCC inline assembly loops; on any
 * other target (the host build, Cortex-M0/M3) the same functions are plain C with the same results
 * bit for bit, so the host tests exercise exactly the arithmetic, data layout and loop structure
 * that the device runs. All portable arithmetic wraps modulo 2^32 like the hardware (no signed
 * overflow in C).
 *
 * Packed "pairs": an int32_t holding two int16 lanes, low lane = bits 0-15. SXTB16 of the four
 * int8 bytes b0 b1 b2 b3 (b0 lowest) gives the pair (b0, b2); SXTB16 with ROR #8 gives (b1, b3).
 * Weights are re-laid-out at compile time to match that order.
 */
#ifndef MICROCOMPILER_KERNEL_SIMD_H_
#define MICROCOMPILER_KERNEL_SIMD_H_

#include <stdint.h>
#include <string.h>

#include "microcompiler/kernel_math.h"

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP && defined(__GNUC__) && !defined(MC_NO_DSP_ASM)
#define MC_DSP_ASM 1
#include <arm_acle.h>
#else
#define MC_DSP_ASM 0
#endif

#if defined(__GNUC__)
#define MC_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define MC_ALWAYS_INLINE inline
#endif

/* Four int8 values as one little-endian word (any alignment). */
static inline int32_t mc_read_s8x4(const int8_t* p) {
  int32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* Two int16 values as one pair word, p[0] in the low half (any alignment). */
static inline int32_t mc_read_s16x2(const int16_t* p) {
  int32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* Stores of the two reads above (any alignment). */
static inline void mc_write_s8x4(int8_t* p, int32_t v) { memcpy(p, &v, 4); }
static inline void mc_write_s16x2(int16_t* p, int32_t v) { memcpy(p, &v, 4); }

/* Two int16 lanes (lo, hi) as a pair. */
static inline int32_t mc_pack16(int32_t lo, int32_t hi) {
  return (int32_t)(((uint32_t)hi << 16) | ((uint32_t)lo & 0xFFFFu));
}

/* The portable kernels read and write the int16 lanes of pair arrays as halfwords (what LDRSH and
 * STRH do), which assumes a little-endian target, like every supported core. */
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "microcompiler's kernels assume a little-endian target"
#endif

/* Lane i of a pair array (lane 2j = low half of word j). */
static inline int32_t mc_lane(const int32_t* pairs, int32_t i) {
  int16_t v;
  memcpy(&v, (const unsigned char*)pairs + 2 * i, 2);
  return v;
}

static inline void mc_set_lane(int32_t* pairs, int32_t i, int32_t value) {
  const int16_t v = (int16_t)value;
  memcpy((unsigned char*)pairs + 2 * i, &v, 2);
}

/* a + b * c modulo 2^32 (the hardware's wrapping accumulate, without signed overflow in C). */
static inline int32_t mc_mla(int32_t a, int32_t b, int32_t c) {
  return (int32_t)((uint32_t)a + (uint32_t)(b * c));
}

#if MC_DSP_ASM

static inline int32_t mc_sxtb16(int32_t x) { return (int32_t)__sxtb16(x); }

static inline int32_t mc_sxtb16_ror8(int32_t x) {
  int32_t r;
  __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
  return r;
}

/* acc + a.lo * b.lo + a.hi * b.hi */
static inline int32_t mc_smlad(int32_t a, int32_t b, int32_t acc) { return __smlad(a, b, acc); }
/* acc + a.lo * b.lo */
static inline int32_t mc_smlabb(int32_t a, int32_t b, int32_t acc) { return __smlabb(a, b, acc); }
/* acc + a.hi * b.hi */
static inline int32_t mc_smlatt(int32_t a, int32_t b, int32_t acc) { return __smlatt(a, b, acc); }
/* acc + (lane-wise sign extension of bytes 0 and 2 of x) */
static inline int32_t mc_sxtab16(int32_t acc, int32_t x) { return (int32_t)__sxtab16(acc, x); }

static inline int32_t mc_sxtab16_ror8(int32_t acc, int32_t x) {
  int32_t r;
  __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(acc), "r"(x));
  return r;
}

/* acc + round(a * b / 2^32), rounding half up (SMMLAR). */
static inline int32_t mc_smmlar(int32_t a, int32_t b, int32_t acc) {
  int32_t r;
  __asm__("smmlar %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
  return r;
}

/* Lane-wise saturating add of two int16 pairs (QADD16). */
static inline int32_t mc_qadd16(int32_t a, int32_t b) { return (int32_t)__qadd16(a, b); }

/* d[0] = lo, d[1] = hi as one STRD: GCC's Cortex-M7 tuning would split the stores into two STR,
 * and with them scheduled apart both tunings spend more instructions in the gather loops. */
static inline void mc_store_pair(int32_t* d, int32_t lo, int32_t hi) {
  __asm__("strd %[lo], %[hi], [%[d]]" : "=m"(*(int32_t(*)[2])d) : [d] "r"(d), [lo] "r"(lo), [hi] "r"(hi));
}

#else /* portable */

static inline int32_t mc_lo16(int32_t x) { return (int32_t)(int16_t)(uint16_t)((uint32_t)x & 0xFFFFu); }
static inline int32_t mc_hi16(int32_t x) { return (int32_t)(int16_t)(uint16_t)((uint32_t)x >> 16); }
static inline int32_t mc_byte(int32_t x, int k) { return (int32_t)(int8_t)(uint8_t)((uint32_t)x >> (8 * k)); }

static inline int32_t mc_sxtb16(int32_t x) { return mc_pack16(mc_byte(x, 0), mc_byte(x, 2)); }
static inline int32_t mc_qadd16(int32_t a, int32_t b) {
  const int32_t lo = mc_lo16(a) + mc_lo16(b), hi = mc_hi16(a) + mc_hi16(b);
  return mc_pack16(MC_CLAMP(lo, -32768, 32767), MC_CLAMP(hi, -32768, 32767));
}

static inline int32_t mc_sxtb16_ror8(int32_t x) { return mc_pack16(mc_byte(x, 1), mc_byte(x, 3)); }

static inline int32_t mc_smlad(int32_t a, int32_t b, int32_t acc) {
  return (int32_t)((uint32_t)acc + (uint32_t)(mc_lo16(a) * mc_lo16(b)) + (uint32_t)(mc_hi16(a) * mc_hi16(b)));
}
static inline int32_t mc_smlabb(int32_t a, int32_t b, int32_t acc) {
  return (int32_t)((uint32_t)acc + (uint32_t)(mc_lo16(a) * mc_lo16(b)));
}
static inline int32_t mc_smlatt(int32_t a, int32_t b, int32_t acc) {
  return (int32_t)((uint32_t)acc + (uint32_t)(mc_hi16(a) * mc_hi16(b)));
}
static inline int32_t mc_sxtab16(int32_t acc, int32_t x) {
  return mc_pack16(mc_lo16(acc) + mc_byte(x, 0), mc_hi16(acc) + mc_byte(x, 2));
}
static inline int32_t mc_sxtab16_ror8(int32_t acc, int32_t x) {
  return mc_pack16(mc_lo16(acc) + mc_byte(x, 1), mc_hi16(acc) + mc_byte(x, 3));
}
static inline int32_t mc_smmlar(int32_t a, int32_t b, int32_t acc) {
  /* acc in the high word and the rounding bit in the low one, then one 64-bit multiply-accumulate
   * (SMLAL on Armv7-M): the high word is acc + ((a * b + 2^31) >> 32) modulo 2^32 */
  const uint64_t p = ((uint64_t)(uint32_t)acc << 32 | 0x80000000u) + (uint64_t)((int64_t)a * (int64_t)b);
  return (int32_t)(uint32_t)(p >> 32);
}

#endif

/* TFLM's requantization (mc_requantize, then + the output zero point) in four instructions, for a
 * multiplier M > 0 with a right shift r >= 1 (no left shift) and |2 * acc| < 2^31, which the code
 * generator proves at compile time from the weights and bias. c = 2^(r-1) + zero_point * 2^r.
 *
 * Why it is exact: TFLM computes x = floor((acc * M + 2^30) / 2^31) (its nudge and truncating
 * division come to that), which is SMMULR(2 * acc, M); then the round-half-away-from-zero
 * (x + 2^(r-1) - [x < 0]) >> r, where [x < 0] may be replaced by [acc < 0] (they differ only when
 * x == 0, and then both give 0 for r >= 1); adding zero_point * 2^r before the shift adds
 * zero_point after it. */
static inline int32_t mc_requant_fast(int32_t acc, int32_t multiplier, int32_t c, int r) {
  return mc_smmlar((int32_t)((uint32_t)acc << 1), multiplier, c + (acc >> 31)) >> r;
}

/* The same for an accumulator that already holds 2 * acc (weights and bias stored doubled). */
static inline int32_t mc_requant_fast2(int32_t acc2, int32_t multiplier, int32_t c, int r) {
  return mc_smmlar(acc2, multiplier, c + (acc2 >> 31)) >> r;
}

/* A little-endian int32 at any alignment (compilers merge the byte loads into one LDR where the
 * CPU allows unaligned words, e.g. Cortex-M3/M4/M7/M33/M55). */
static inline int32_t mc_load_s32le(const uint8_t* p) {
  return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

/* x >> (s & 0xFF) and x << (s & 0xFF), for s & 0xFF below 32. Arm's register-specified shifts read
 * only the bottom byte of s, so a right shift r kept in the low byte of a packed record word
 * ({bias << 8 | r}) or of a lanes accumulator (256 * acc + r) is used as it is, without extracting it;
 * C would need the mask (compilers keep it: a shift by 32 or more is undefined in C). */
#if defined(__GNUC__) && defined(__thumb2__) && !defined(MC_NO_DSP_ASM)
static inline int32_t mc_asr_low8(int32_t x, int32_t s) {
  int32_t y;
  __asm__("asr %0, %1, %2" : "=r"(y) : "r"(x), "r"(s));
  return y;
}
static inline int32_t mc_lsl_low8(int32_t x, int32_t s) {
  int32_t y;
  __asm__("lsl %0, %1, %2" : "=r"(y) : "r"(x), "r"(s));
  return y;
}
#else
static inline int32_t mc_asr_low8(int32_t x, int32_t s) { return x >> (s & 0xFF); }
static inline int32_t mc_lsl_low8(int32_t x, int32_t s) { return (int32_t)((uint32_t)x << (s & 0xFF)); }
#endif

/* mc_requant_fast2 with the right shift r in the low byte of s (mc_asr_low8). */
static inline int32_t mc_requant_fast2_low8(int32_t acc2, int32_t multiplier, int32_t c, int32_t s) {
  return mc_asr_low8(mc_smmlar(acc2, multiplier, c + (acc2 >> 31)), s);
}

/* mc_requant_fast with the right shift r in the low byte of s (mc_asr_low8). */
static inline int32_t mc_requant_fast_low8(int32_t acc, int32_t multiplier, int32_t c, int32_t s) {
  return mc_asr_low8(mc_smmlar((int32_t)((uint32_t)acc << 1), multiplier, c + (acc >> 31)), s);
}

/* The four above without the correction for negative accumulators ("_nn"), for a layer whose clamp
 * starts at or above the output zero point (RELU, RELU6, RELU_N1_TO_1 with the zero point at -1 or
 * below...): for acc < 0 (M > 0, r >= 1) SMMLAR gives c + f with f <= 0, so (c + f) >> r is at most
 * the zero point, and so is TFLM's result; the clamp makes both the lower bound. One instruction
 * (the sign) and one add fewer per output. */
static inline int32_t mc_requant_fast_nn(int32_t acc, int32_t multiplier, int32_t c, int r) {
  return mc_smmlar((int32_t)((uint32_t)acc << 1), multiplier, c) >> r;
}
static inline int32_t mc_requant_fast2_nn(int32_t acc2, int32_t multiplier, int32_t c, int r) {
  return mc_smmlar(acc2, multiplier, c) >> r;
}
static inline int32_t mc_requant_fast2_low8_nn(int32_t acc2, int32_t multiplier, int32_t c, int32_t s) {
  return mc_asr_low8(mc_smmlar(acc2, multiplier, c), s);
}
static inline int32_t mc_requant_fast_low8_nn(int32_t acc, int32_t multiplier, int32_t c, int32_t s) {
  return mc_asr_low8(mc_smmlar((int32_t)((uint32_t)acc << 1), multiplier, c), s);
}

/* Keep v (a constant the compiler knows) in a register: without it the compiler may rebuild the
 * constant at every use inside the loop that follows. */
#if MC_DSP_ASM
#define MC_IN_REGISTER(v) __asm__("" : "+r"(v))
#else
#define MC_IN_REGISTER(v) ((void)0)
#endif

/* Saturate to int8. Cores without the DSP extension that have SSAT (Armv7-M: the Cortex-M3) use it
 * too: one instruction where the clamp takes two compares and branches. */
#if MC_DSP_ASM
#define MC_SSAT8(x) __ssat((x), 8)
#elif defined(__GNUC__) && defined(__ARM_FEATURE_SAT) && __ARM_FEATURE_SAT && !defined(MC_NO_DSP_ASM)
#define MC_SSAT_FN(name_, bits_)                                 \
  static inline int32_t name_(int32_t x) {                       \
    int32_t y;                                                   \
    __asm__("ssat %0, #" #bits_ ", %1" : "=r"(y) : "r"(x));      \
    return y;                                                    \
  }
MC_SSAT_FN(mc_ssat8, 8)
MC_SSAT_FN(mc_ssat16, 16)
MC_SSAT_FN(mc_ssat17, 17)
#define MC_SSAT8(x) mc_ssat8(x)
#else
#define MC_SSAT8(x) MC_CLAMP((x), -128, 127)
#endif

/* Saturate to int16 (SSAT on the Cortex-M3 too, as MC_SSAT8). */
#if MC_DSP_ASM
#define MC_SSAT16(x) __ssat((x), 16)
#elif defined(__GNUC__) && defined(__ARM_FEATURE_SAT) && __ARM_FEATURE_SAT && !defined(MC_NO_DSP_ASM)
#define MC_SSAT16(x) mc_ssat16(x)
#else
#define MC_SSAT16(x) MC_CLAMP((x), INT16_MIN, INT16_MAX)
#endif

/* Saturate to 17 bits signed (mc_tanh_s16_sym's input range; SSAT on the Cortex-M3 too, as MC_SSAT8). */
#if MC_DSP_ASM
#define MC_SSAT17(x) __ssat((x), 17)
#elif defined(__GNUC__) && defined(__ARM_FEATURE_SAT) && __ARM_FEATURE_SAT && !defined(MC_NO_DSP_ASM)
#define MC_SSAT17(x) mc_ssat17(x)
#else
#define MC_SSAT17(x) MC_CLAMP((x), -65536, 65535)
#endif

/* Saturate to the signed range of `bits` bits (a literal from 2 to 31): one SSAT. */
#if MC_DSP_ASM
#define MC_SSAT(x, bits) __ssat((x), (bits))
#else
#define MC_SSAT(x, bits) MC_CLAMP((x), -(INT32_C(1) << ((bits) - 1)), (INT32_C(1) << ((bits) - 1)) - 1)
#endif

/* y = x >> shift (arithmetic, shift a literal from 1 to 31) saturated to int8: one SSAT with a
 * shifted operand on the DSP cores (GCC does not fold the shift into SSAT by itself). */
#if MC_DSP_ASM
#define MC_SSAT8_ASR(y, x, shift) __asm__("ssat %0, #8, %1, asr #" #shift : "=r"(y) : "r"(x))
#else
#define MC_SSAT8_ASR(y, x, shift) ((y) = MC_CLAMP((x) >> (shift), -128, 127))
#endif

/* int8 ADD/SUB "affine" kernel (ops/fast/add_affine.py): for 8 * blocks elements (blocks >= 1),
 * *out++ = SSAT8((bias + w1 * *in1++ + w2 * *in2++) >> shift), shift a literal from 1 to 31; the
 * compiler has proved the sums fit int32. One LDRSB/STRB with write-back per access: 50
 * instructions per 8 elements. Each element is read before it is written (in place allowed). */
#if MC_DSP_ASM
#define MC_AFFINE_STEP_(shift)                            \
  "ldrsb %[a], [%[in1]], #1\n\t"                          \
  "ldrsb %[b], [%[in2]], #1\n\t"                          \
  "mla %[a], %[a], %[w1], %[bias]\n\t"                    \
  "mla %[a], %[b], %[w2], %[a]\n\t"                       \
  "ssat %[a], #8, %[a], asr #" #shift "\n\t"              \
  "strb %[a], [%[out]], #1\n\t"
#define MC_ADD_AFFINE_S8(in1_ptr, in2_ptr, out_ptr, blocks, weight1, weight2, offset, shift)              \
  do {                                                                                                \
    int32_t n_ = (blocks), a_, b_;                                                                    \
    __asm__ volatile("1:\n\t" MC_AFFINE_STEP_(shift) MC_AFFINE_STEP_(shift) MC_AFFINE_STEP_(shift)    \
                     MC_AFFINE_STEP_(shift) MC_AFFINE_STEP_(shift) MC_AFFINE_STEP_(shift)              \
                     MC_AFFINE_STEP_(shift) MC_AFFINE_STEP_(shift)                                     \
                     "subs %[n], %[n], #1\n\t"                                                         \
                     "bne 1b"                                                                          \
                     : [in1] "+r"(in1_ptr), [in2] "+r"(in2_ptr), [out] "+r"(out_ptr), [n] "+r"(n_),    \
                       [a] "=&r"(a_), [b] "=&r"(b_)                                                    \
                     : [w1] "r"(weight1), [w2] "r"(weight2), [bias] "r"(offset)                        \
                     : "cc", "memory");                                                                \
  } while (0)
#else
#define MC_ADD_AFFINE_S8(in1_ptr, in2_ptr, out_ptr, blocks, weight1, weight2, offset, shift)  \
  do {                                                                                      \
    int32_t k_;                                                                             \
    for (k_ = 0; k_ < 8 * (blocks); ++k_) {                                                 \
      const int32_t acc_ = (offset) + (weight1) * *(in1_ptr)++ + (weight2) * *(in2_ptr)++;  \
      *(out_ptr)++ = (int8_t)MC_CLAMP(acc_ >> (shift), -128, 127);                          \
    }                                                                                       \
  } while (0)
#endif

/* ---- Dot-product micro-kernels ---------------------------------------------------------------- */

/* The operand registers of the 4 x 4 dot kernels' inline assembly: N0..N3 in r8..r11, so that one
 * LDM fills them in order. */
#define MC_DOT4_REGISTERS(N0, N1, N2, N3) \
  register int32_t N0 __asm__("r8");      \
  register int32_t N1 __asm__("r9");      \
  register int32_t N2 __asm__("r10");     \
  register int32_t N3 __asm__("r11")

/* Run steps x STEP (one step = 4 k for 4 pixels or rows) with the asm operands OPS: one step for
 * bit 0 of steps, two for bit 1, then blocks of four. */
#define MC_DOT4_DRIVE(STEP, OPS)                                                                         \
  do {                                                                                                   \
    if (steps & 1) {                                                                                     \
      __asm__ volatile(STEP : OPS : : "memory");                                                         \
    }                                                                                                    \
    if (steps & 2) {                                                                                     \
      __asm__ volatile(STEP STEP : OPS : : "memory");                                                    \
    }                                                                                                    \
    /* blocks of 4 steps, a C loop around them (unrolling it would cost flash: +1.8-5 KB for IC) */  \
    _Pragma("GCC unroll 1") for (steps >>= 2; steps > 0; --steps) {                                      \
      __asm__ volatile(STEP STEP STEP STEP : OPS : : "memory");                                          \
    }                                                                                                    \
  } while (0)

/* The operands the mc_dot_p4 kernels declare: the sums s0..s3, the column and weight pointers, the
 * weight pair registers we, wo and the column registers c0..c3. */
#define MC_DOT_P4_OPS                                                                                    \
  [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [col] "+r"(col), [w] "+r"(w), [we] "=&r"(we), \
      [wo] "=&r"(wo), [c0] "=&r"(c0), [c1] "=&r"(c1), [c2] "=&r"(c2), [c3] "=&r"(c3)

/* Portable path: the four lanes 4g .. 4g+3 of pairs (group g: a pixel or a row, holding k0, k2, k1,
 * k3) times k0..k3, summed. */
static MC_ALWAYS_INLINE int32_t mc_lanes_dot(const int32_t* pairs, int32_t g, int32_t k0, int32_t k1, int32_t k2,
                                             int32_t k3) {
  return mc_lane(pairs, 4 * g) * k0 + mc_lane(pairs, 4 * g + 1) * k2 + mc_lane(pairs, 4 * g + 2) * k1 +
         mc_lane(pairs, 4 * g + 3) * k3;
}

/* Keep the multiply-accumulate chain of a sum as written: with the wrapping arithmetic of mc_mla a
 * compiler may reassociate a chain into separate products and adds (GCC does: MUL + MLA into a
 * temporary, an ADD, and spills of the sums on the Cortex-M3). An empty asm on the sum orders it. */
#if defined(__GNUC__)
#define MC_CHAIN(v) __asm__("" : "+r"(v))
#else
#define MC_CHAIN(v) ((void)0)
#endif

/* One group g of pairs (lanes 4g .. 4g+3: k0, k2, k1, k3) times k0..k3 into s, as one MLA chain. */
#define MC_LANES_MLA4(s, pairs, g, k0, k1, k2, k3)         \
  do {                                                     \
    (s) = mc_mla((s), mc_lane((pairs), 4 * (g)), (k0));     \
    MC_CHAIN(s);                                           \
    (s) = mc_mla((s), mc_lane((pairs), 4 * (g) + 1), (k2)); \
    MC_CHAIN(s);                                           \
    (s) = mc_mla((s), mc_lane((pairs), 4 * (g) + 2), (k1)); \
    MC_CHAIN(s);                                           \
    (s) = mc_mla((s), mc_lane((pairs), 4 * (g) + 3), (k3)); \
    MC_CHAIN(s);                                           \
  } while (0)

/* The portable 4x4 step of the dot kernels below: the sums s0..s3 += groups 0..3 of pairs against
 * k0..k3 (their variables s0..s3 are named so in every kernel that uses it); one LDRSH + MLA per MAC
 * on the Cortex-M3. */
#define MC_LANES_DOT4(pairs, k0, k1, k2, k3)        \
  do {                                               \
    MC_LANES_MLA4(s0, (pairs), 0, k0, k1, k2, k3); \
    MC_LANES_MLA4(s1, (pairs), 1, k0, k1, k2, k3); \
    MC_LANES_MLA4(s2, (pairs), 2, k0, k1, k2, k3); \
    MC_LANES_MLA4(s3, (pairs), 3, k0, k1, k2, k3); \
  } while (0)

/* The four int8 of a weight word, sign-extended: byte 0 (the lowest) into *k0 .. byte 3 into *k3. */
static MC_ALWAYS_INLINE void mc_word_bytes(int32_t word, int32_t* k0, int32_t* k1, int32_t* k2, int32_t* k3) {
  *k0 = (int8_t)(uint8_t)((uint32_t)word & 0xFFu);
  *k1 = (int8_t)(uint8_t)(((uint32_t)word >> 8) & 0xFFu);
  *k2 = (int8_t)(uint8_t)(((uint32_t)word >> 16) & 0xFFu);
  *k3 = (int8_t)(uint8_t)((uint32_t)word >> 24);
}

/* Four pixels x one output channel (CONV_2D "dsp-im2col"):
 *   a[p] += sum_k col_p[k] * w[k]   for p = 0..3, k < 4 * steps.
 * col: per group of 4 k, 8 pairs: pixel 0 (k0,k2) (k1,k3), pixel 1 ..., pixel 3 (int16 lanes);
 * w: int8, 4 per word. 13 instructions per 16 MACs on the DSP path (loop unrolled 4 times).
 * Returns w + steps: the next output channel's weights. */
static MC_ALWAYS_INLINE const int32_t* mc_dot_p4(const int32_t* col, const int32_t* w, int32_t steps, int32_t* a0,
                                                 int32_t* a1, int32_t* a2, int32_t* a3) {
  int32_t s0 = *a0, s1 = *a1, s2 = *a2, s3 = *a3;
#if MC_DSP_ASM
  MC_DOT4_REGISTERS(c0, c1, c2, c3);
  int32_t we, wo;
#define MC_DOT_P4_STEP                           \
  "ldr %[wo], [%[w]], #4\n\t"                    \
  "ldmia %[col]!, {%[c0], %[c1], %[c2], %[c3]}\n\t" \
  "sxtb16 %[we], %[wo]\n\t"                      \
  "sxtb16 %[wo], %[wo], ror #8\n\t"              \
  "smlad %[s0], %[c0], %[we], %[s0]\n\t"         \
  "smlad %[s0], %[c1], %[wo], %[s0]\n\t"         \
  "smlad %[s1], %[c2], %[we], %[s1]\n\t"         \
  "smlad %[s1], %[c3], %[wo], %[s1]\n\t"         \
  "ldmia %[col]!, {%[c0], %[c1], %[c2], %[c3]}\n\t" \
  "smlad %[s2], %[c0], %[we], %[s2]\n\t"         \
  "smlad %[s2], %[c1], %[wo], %[s2]\n\t"         \
  "smlad %[s3], %[c2], %[we], %[s3]\n\t"         \
  "smlad %[s3], %[c3], %[wo], %[s3]\n\t"
  MC_DOT4_DRIVE(MC_DOT_P4_STEP, MC_DOT_P4_OPS);
#undef MC_DOT_P4_STEP
#else
  /* Without the DSP extension: halfword loads and multiply-accumulates (LDRSH + MLA on Armv7-M). */
  int32_t i;
  for (i = 0; i < steps; ++i, col += 8) {
    int32_t w0, w1, w2, w3;
    mc_word_bytes(*w++, &w0, &w1, &w2, &w3);
    MC_LANES_DOT4(col, w0, w1, w2, w3);
  }
#endif
  *a0 = s0;
  *a1 = s1;
  *a2 = s2;
  *a3 = s3;
  return w;
}

/* mc_dot_p4 with the weights at any byte alignment: the rows of a layer whose K is not a multiple of
 * 4 follow each other without padding, each read as steps words whose last one reaches into the next
 * row (against the column's zero padding taps). Cores with the DSP extension load unaligned words. */
static MC_ALWAYS_INLINE void mc_dot_p4_unaligned(const int32_t* col, const int8_t* w, int32_t steps, int32_t* a0,
                                                 int32_t* a1, int32_t* a2, int32_t* a3) {
#if MC_DSP_ASM
  (void)mc_dot_p4(col, (const int32_t*)(const void*)w, steps, a0, a1, a2, a3);
#else
  int32_t i;
  for (i = 0; i < steps; ++i, col += 8, w += 4) {
    int32_t word;
    memcpy(&word, w, sizeof word);
    (void)mc_dot_p4(col, &word, 1, a0, a1, a2, a3);
  }
#endif
}

/* The same with int16 weights: w holds, per group of 4 k, the pairs (k0,k2) (k1,k3).
 * 11 instructions per 16 MACs on the DSP path. */
static MC_ALWAYS_INLINE const int32_t* mc_dot_p4_s16(const int32_t* col, const int32_t* w, int32_t steps, int32_t* a0,
                                           int32_t* a1, int32_t* a2, int32_t* a3) {
  int32_t s0 = *a0, s1 = *a1, s2 = *a2, s3 = *a3;
#if MC_DSP_ASM
  MC_DOT4_REGISTERS(c0, c1, c2, c3);
  int32_t we, wo;
#define MC_DOT_P4S_STEP                          \
  "ldrd %[we], %[wo], [%[w]], #8\n\t"            \
  "ldmia %[col]!, {%[c0], %[c1], %[c2], %[c3]}\n\t" \
  "smlad %[s0], %[c0], %[we], %[s0]\n\t"         \
  "smlad %[s0], %[c1], %[wo], %[s0]\n\t"         \
  "smlad %[s1], %[c2], %[we], %[s1]\n\t"         \
  "smlad %[s1], %[c3], %[wo], %[s1]\n\t"         \
  "ldmia %[col]!, {%[c0], %[c1], %[c2], %[c3]}\n\t" \
  "smlad %[s2], %[c0], %[we], %[s2]\n\t"         \
  "smlad %[s2], %[c1], %[wo], %[s2]\n\t"         \
  "smlad %[s3], %[c2], %[we], %[s3]\n\t"         \
  "smlad %[s3], %[c3], %[wo], %[s3]\n\t"
  MC_DOT4_DRIVE(MC_DOT_P4S_STEP, MC_DOT_P4_OPS);
#undef MC_DOT_P4S_STEP
#else
  int32_t i;
  for (i = 0; i < steps; ++i, col += 8, w += 2) {
    const int32_t w0 = mc_lane(w, 0), w2 = mc_lane(w, 1), w1 = mc_lane(w, 2), w3 = mc_lane(w, 3);
    MC_LANES_DOT4(col, w0, w1, w2, w3);
  }
#endif
  *a0 = s0;
  *a1 = s1;
  *a2 = s2;
  *a3 = s3;
  return w;
}

/* The weight encodings of the 4-pixel im2col kernels: int8 words (mc_dot_p4), the lanes encoding
 * (mc_dot_p4_s8l, kernel_lanes.h) and int16 pairs (mc_dot_p4_s16). */
enum { MC_WEIGHTS_S8 = 0, MC_WEIGHTS_S8_LANES = 1, MC_WEIGHTS_S16 = 2 };

/* The last 1 or 2 pixels of a layer (npix % 4), for any of those encodings (a constant, folded
 * where this is inlined): the 4-pixel kernel on the first pixels' pairs of the column only, so that
 * no multiply-accumulate runs on unused columns. *a0 += pixel 0's sum; *a1 += pixel 1's unless a1
 * is NULL. Returns w past the weights read. */
static MC_ALWAYS_INLINE const int32_t* mc_dot_narrow(const int32_t* col, const int32_t* w, int32_t steps,
                                                     int32_t encoding, int32_t* a0, int32_t* a1) {
  int32_t s0 = *a0, s1 = a1 ? *a1 : 0;
  int32_t i;
#if !MC_DSP_ASM
  if (encoding != MC_WEIGHTS_S8_LANES) {
    /* Without the DSP extension: the halfword arithmetic of mc_dot_p4's portable path, on the tail's
     * pixels only (the lanes encoding's pairs below are cheaper there). */
    for (i = 0; i < steps; ++i, col += 8) {
      int32_t k0, k1, k2, k3;
      if (encoding == MC_WEIGHTS_S16) {
        k0 = mc_lane(w, 0);
        k2 = mc_lane(w, 1);
        k1 = mc_lane(w, 2);
        k3 = mc_lane(w, 3);
        w += 2;
      } else {
        mc_word_bytes(*w++, &k0, &k1, &k2, &k3);
      }
      s0 = mc_mla(s0, 1, mc_lanes_dot(col, 0, k0, k1, k2, k3));
      if (a1) s1 = mc_mla(s1, 1, mc_lanes_dot(col, 1, k0, k1, k2, k3));
    }
    *a0 = s0;
    if (a1) *a1 = s1;
    return w;
  }
#endif
  for (i = 0; i < steps; ++i, col += 8) {
    int32_t wa, wb; /* the step's weight pairs against the column's pairs 0 and 1 of each pixel */
    if (encoding == MC_WEIGHTS_S16) {
      wa = w[0];
      wb = w[1];
      w += 2;
    } else if (encoding == MC_WEIGHTS_S8_LANES) {
      wa = w[0];
      wb = mc_sxtb16(w[0]);
      w += 1;
    } else {
      wa = mc_sxtb16(w[0]);
      wb = mc_sxtb16_ror8(w[0]);
      w += 1;
    }
    s0 = mc_smlad(col[1], wb, mc_smlad(col[0], wa, s0));
    if (a1) s1 = mc_smlad(col[3], wb, mc_smlad(col[2], wa, s1));
  }
  *a0 = s0;
  if (a1) *a1 = s1;
  return w;
}

/* One input vector x four output rows (FULLY_CONNECTED "dsp-s16"):
 *   a[r] += sum_k x[k] * w_r[k]   for r = 0..3, k < 4 * steps.
 * x: int8 (any alignment); w: per group of 4 k, 8 pairs: row 0 (k0,k2) (k1,k3), row 1 ..., row 3.
 * 13 instructions per 16 MACs on the DSP path. steps >= 1. */
static MC_ALWAYS_INLINE void mc_dot_r4(const int8_t* x, const int32_t* w, int32_t steps, int32_t* a0, int32_t* a1,
                             int32_t* a2, int32_t* a3) {
  int32_t s0 = *a0, s1 = *a1, s2 = *a2, s3 = *a3;
#if MC_DSP_ASM
  MC_DOT4_REGISTERS(w0, w1, w2, w3);
  int32_t xe, xo;
#define MC_DOT_R4_STEP                           \
  "ldr %[xo], [%[x]], #4\n\t"                    \
  "ldmia %[w]!, {%[w0], %[w1], %[w2], %[w3]}\n\t" \
  "sxtb16 %[xe], %[xo]\n\t"                      \
  "sxtb16 %[xo], %[xo], ror #8\n\t"              \
  "smlad %[s0], %[xe], %[w0], %[s0]\n\t"         \
  "smlad %[s0], %[xo], %[w1], %[s0]\n\t"         \
  "smlad %[s1], %[xe], %[w2], %[s1]\n\t"         \
  "smlad %[s1], %[xo], %[w3], %[s1]\n\t"         \
  "ldmia %[w]!, {%[w0], %[w1], %[w2], %[w3]}\n\t" \
  "smlad %[s2], %[xe], %[w0], %[s2]\n\t"         \
  "smlad %[s2], %[xo], %[w1], %[s2]\n\t"         \
  "smlad %[s3], %[xe], %[w2], %[s3]\n\t"         \
  "smlad %[s3], %[xo], %[w3], %[s3]\n\t"
  if (steps & 1) {
    __asm__ volatile(MC_DOT_R4_STEP
                     : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [x] "+r"(x), [w] "+r"(w),
                       [xe] "=&r"(xe), [xo] "=&r"(xo), [w0] "=&r"(w0), [w1] "=&r"(w1), [w2] "=&r"(w2), [w3] "=&r"(w3)
                     :
                     : "memory");
  }
  if (steps & 2) {
    __asm__ volatile(MC_DOT_R4_STEP MC_DOT_R4_STEP
                     : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [x] "+r"(x), [w] "+r"(w),
                       [xe] "=&r"(xe), [xo] "=&r"(xo), [w0] "=&r"(w0), [w1] "=&r"(w1), [w2] "=&r"(w2), [w3] "=&r"(w3)
                     :
                     : "memory");
  }
  steps >>= 2;
  if (steps) {
    __asm__ volatile("1:\n\t" MC_DOT_R4_STEP MC_DOT_R4_STEP MC_DOT_R4_STEP MC_DOT_R4_STEP
                     "subs %[n], %[n], #1\n\t"
                     "bne 1b\n\t"
                     : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [x] "+r"(x), [w] "+r"(w),
                       [n] "+r"(steps), [xe] "=&r"(xe), [xo] "=&r"(xo), [w0] "=&r"(w0), [w1] "=&r"(w1),
                       [w2] "=&r"(w2), [w3] "=&r"(w3)
                     :
                     : "cc", "memory");
  }
#undef MC_DOT_R4_STEP
#else
  int32_t i;
  for (i = 0; i < steps; ++i, x += 4, w += 8) {
    const int32_t x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3];
    MC_LANES_DOT4(w, x0, x1, x2, x3);
  }
#endif
  *a0 = s0;
  *a1 = s1;
  *a2 = s2;
  *a3 = s3;
}

/* One input vector x one row: acc + sum_k x[k] * w[k], k < 4 * steps; x int8 (any alignment), w per
 * group of 4 k the pairs (k0,k2) (k1,k3) (a row left over after mc_dot_r4's blocks of 4). */
static inline int32_t mc_dot_r1(const int8_t* x, const int32_t* w, int32_t steps, int32_t acc) {
  int32_t s;
  for (s = 0; s < steps; ++s, x += 4, w += 2) {
    const int32_t v = mc_read_s8x4(x);
    acc = mc_smlad(mc_sxtb16(v), w[0], acc);
    acc = mc_smlad(mc_sxtb16_ror8(v), w[1], acc);
  }
  return acc;
}

/* ---- FULLY_CONNECTED with int8 weights, "lanes" encoding (rows4, "weights": "s8", "extract": "lanes") ----
 * Each weight word holds 4 int8 weights w0..w3 of one row, stored so that its two int16 lanes are
 * (w0 + 256 w1, w2 + 256 w3) (the compiler checks they fit; bytes 0 and 2 are then w0 and w2, and
 * the word is still 4 bytes for 4 weights). The input is expanded once per inference into, per
 * group of 4, P = (x1, x3) and Q = (256 x0 - x1 + 127, 256 x2 - x3 + 127) (which always fit int16).
 * Then SMLAD(P, word) + SMLAD(Q, SXTB16(word)) = 256 (x0 w0 + x1 w1 + x2 w2 + x3 w3) + 127 (w0 + w2):
 * 3 instructions per 4 MACs and row, 14 per 16 MACs with the LDM/LDRD loads. The accumulator starts
 * at 256 * bias - 127 * sum(even weights) (compile time, modulo 2^32) and ends at 256 * acc, exact
 * when |acc| < 2^23 (checked by the compiler), so acc = a >> 8. */
#if MC_DSP_ASM
/* Q of the 4 inputs v (one word): 256 x0 + (127 - x1) is the halfword whose high byte is x0 and low
 * byte the unsigned 127 - x1 = (uint8_t)(x1 ^ 0x7F), so Q = REV16(v) ^ 0x007F007F: 2 instructions
 * (the EOR's constant is an immediate), where shifting, masking, subtracting P and adding 127 took
 * 4 and a register for the constant. */
static inline int32_t mc_lanes_q(int32_t v) {
  uint32_t q;
  __asm__("rev16 %0, %1" : "=r"(q) : "r"(v));
  return (int32_t)(q ^ 0x007F007Fu);
}
#endif

/* One group of 4 inputs x: d[0] = P, d[1] = Q. */
static inline void mc_expand_s8l_group(int32_t* d, const int8_t* x) {
#if MC_DSP_ASM
  const int32_t v = mc_read_s8x4(x);
  const int32_t p = mc_sxtb16_ror8(v);
  mc_store_pair(d, p, mc_lanes_q(v));
#else
  d[0] = mc_pack16(x[1], x[3]);
  d[1] = mc_pack16(256 * x[0] - x[1] + 127, 256 * x[2] - x[3] + 127);
#endif
}

/* steps groups of 4 inputs x, expanded to d (2 words per group). */
static inline void mc_expand_s8l(int32_t* d, const int8_t* x, int32_t steps) {
#if MC_DSP_ASM
  for (; steps > 0; --steps, x += 4) {
    const int32_t v = mc_read_s8x4(x);
    const int32_t p = mc_sxtb16_ror8(v);
    const int32_t q = mc_lanes_q(v);
    /* d[0] = p, d[1] = q, d += 2 as one STRD with write-back: 9 instructions per group instead of
       10 (M4) or 11 (GCC's Cortex-M7 tuning splits the stores into two STR) */
    __asm__("strd %[p], %[q], [%[d]], #8" : [d] "+r"(d), "=m"(*(int32_t(*)[2])d) : [p] "r"(p), [q] "r"(q));
  }
#else
  for (; steps > 0; --steps, x += 4, d += 2) mc_expand_s8l_group(d, x);
#endif
}

/* a[r] (256-scaled, see above) += the 4 rows' words of w against the expanded input xs, steps >= 1;
 * w: per group of 4 k, the words of rows 0..3. */
static MC_ALWAYS_INLINE void mc_dot_r4_s8l(const int32_t* xs, const int32_t* w, int32_t steps, int32_t* a0,
                                           int32_t* a1, int32_t* a2, int32_t* a3) {
  int32_t s0 = *a0, s1 = *a1, s2 = *a2, s3 = *a3;
#if MC_DSP_ASM
  MC_DOT4_REGISTERS(w0, w1, w2, w3);
  int32_t p, q;
#define MC_DOT_R4L_STEP                                 \
  "ldrd %[p], %[q], [%[x]], #8\n\t"                     \
  "ldmia %[w]!, {%[w0], %[w1], %[w2], %[w3]}\n\t"       \
  "smlad %[s0], %[p], %[w0], %[s0]\n\t"                 \
  "sxtb16 %[w0], %[w0]\n\t"                             \
  "smlad %[s0], %[q], %[w0], %[s0]\n\t"                 \
  "smlad %[s1], %[p], %[w1], %[s1]\n\t"                 \
  "sxtb16 %[w1], %[w1]\n\t"                             \
  "smlad %[s1], %[q], %[w1], %[s1]\n\t"                 \
  "smlad %[s2], %[p], %[w2], %[s2]\n\t"                 \
  "sxtb16 %[w2], %[w2]\n\t"                             \
  "smlad %[s2], %[q], %[w2], %[s2]\n\t"                 \
  "smlad %[s3], %[p], %[w3], %[s3]\n\t"                 \
  "sxtb16 %[w3], %[w3]\n\t"                             \
  "smlad %[s3], %[q], %[w3], %[s3]\n\t"
#define MC_DOT_R4L_OPS                                                                                  \
  [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [x] "+r"(xs), [w] "+r"(w), [p] "=&r"(p), \
      [q] "=&r"(q), [w0] "=&r"(w0), [w1] "=&r"(w1), [w2] "=&r"(w2), [w3] "=&r"(w3)
  MC_DOT4_DRIVE(MC_DOT_R4L_STEP, MC_DOT_R4L_OPS);
#undef MC_DOT_R4L_STEP
#undef MC_DOT_R4L_OPS
#else
  int32_t i;
  for (i = 0; i < steps; ++i, xs += 2, w += 4) {
    const int32_t p = xs[0], q = xs[1];
    s0 = mc_smlad(q, mc_sxtb16(w[0]), mc_smlad(p, w[0], s0));
    s1 = mc_smlad(q, mc_sxtb16(w[1]), mc_smlad(p, w[1], s1));
    s2 = mc_smlad(q, mc_sxtb16(w[2]), mc_smlad(p, w[2], s2));
    s3 = mc_smlad(q, mc_sxtb16(w[3]), mc_smlad(p, w[3], s3));
  }
#endif
  *a0 = s0;
  *a1 = s1;
  *a2 = s2;
  *a3 = s3;
}

/* One input vector x four output rows with int8 weights (FULLY_CONNECTED rows4, "weights": "s8"):
 *   A0_..A3_ += sum_k x[k] * w[r * STRIDE_ + k]   for k < 4 * STEPS_ (rows STRIDE_ bytes apart).
 * X_ and W_ advance by 4 * STEPS_. STRIDE_ is a literal, 4 <= STRIDE_ and 3 * STRIDE_ - 4 <= 4095.
 * 23 instructions per 16 MACs on the DSP path (the weights are sign-extended in the loop). */
#if MC_DSP_ASM
#define MC_DOT_R4_S8(X_, W_, STRIDE_, STEPS_, A0_, A1_, A2_, A3_)                                     \
  do {                                                                                              \
    int32_t n_ = (STEPS_), xe_, xo_, t_, u_;                                                        \
    __asm__ volatile("1:\n\t"                                                                       \
                     "ldr %[xo], [%[x]], #4\n\t"                                                    \
                     "sxtb16 %[xe], %[xo]\n\t"                                                      \
                     "sxtb16 %[xo], %[xo], ror #8\n\t"                                              \
                     "ldr %[t], [%[w]], #4\n\t"                                                     \
                     "sxtb16 %[u], %[t]\n\t"                                                        \
                     "sxtb16 %[t], %[t], ror #8\n\t"                                                \
                     "smlad %[a0], %[xe], %[u], %[a0]\n\t"                                          \
                     "smlad %[a0], %[xo], %[t], %[a0]\n\t"                                          \
                     "ldr %[t], [%[w], %[o1]]\n\t"                                                  \
                     "sxtb16 %[u], %[t]\n\t"                                                        \
                     "sxtb16 %[t], %[t], ror #8\n\t"                                                \
                     "smlad %[a1], %[xe], %[u], %[a1]\n\t"                                          \
                     "smlad %[a1], %[xo], %[t], %[a1]\n\t"                                          \
                     "ldr %[t], [%[w], %[o2]]\n\t"                                                  \
                     "sxtb16 %[u], %[t]\n\t"                                                        \
                     "sxtb16 %[t], %[t], ror #8\n\t"                                                \
                     "smlad %[a2], %[xe], %[u], %[a2]\n\t"                                          \
                     "smlad %[a2], %[xo], %[t], %[a2]\n\t"                                          \
                     "ldr %[t], [%[w], %[o3]]\n\t"                                                  \
                     "sxtb16 %[u], %[t]\n\t"                                                        \
                     "sxtb16 %[t], %[t], ror #8\n\t"                                                \
                     "smlad %[a3], %[xe], %[u], %[a3]\n\t"                                          \
                     "smlad %[a3], %[xo], %[t], %[a3]\n\t"                                          \
                     "subs %[n], %[n], #1\n\t"                                                      \
                     "bne 1b\n\t"                                                                   \
                     : [a0] "+r"(A0_), [a1] "+r"(A1_), [a2] "+r"(A2_), [a3] "+r"(A3_), [x] "+r"(X_), \
                       [w] "+r"(W_), [n] "+r"(n_), [xe] "=&r"(xe_), [xo] "=&r"(xo_), [t] "=&r"(t_),   \
                       [u] "=&r"(u_)                                                                \
                     : [o1] "n"((STRIDE_) - 4), [o2] "n"(2 * (STRIDE_) - 4), [o3] "n"(3 * (STRIDE_) - 4) \
                     : "cc", "memory");                                                             \
  } while (0)
#else
#define MC_DOT_R4_S8(X_, W_, STRIDE_, STEPS_, A0_, A1_, A2_, A3_)                                     \
  do {                                                                                              \
    int32_t k_;                                                                                     \
    for (k_ = 0; k_ < 4 * (STEPS_); ++k_) {                                                         \
      const int32_t v_ = (X_)[k_];                                                                  \
      (A0_) = mc_mla((A0_), v_, (W_)[k_]);                                                          \
      (A1_) = mc_mla((A1_), v_, (W_)[(STRIDE_) + k_]);                                              \
      (A2_) = mc_mla((A2_), v_, (W_)[2 * (STRIDE_) + k_]);                                          \
      (A3_) = mc_mla((A3_), v_, (W_)[3 * (STRIDE_) + k_]);                                          \
    }                                                                                               \
    (X_) += 4 * (STEPS_);                                                                           \
    (W_) += 4 * (STEPS_);                                                                           \
  } while (0)
#endif

/* ---- Depthwise: one tap of 4 channels ------------------------------------------------------------
 * v = the 4 int8 input channels at p + off; w: the tap's pairs (c0,c2) (c1,c3), advanced by 2 words.
 * a0..a3 += v[c] * w[c]. off is a literal 0..4095. 8 instructions per 4 MACs on the DSP path. */
#if MC_DSP_ASM
#define MC_DW4_TAP(P_, OFF_, W_, A0_, A1_, A2_, A3_)                                                  \
  do {                                                                                              \
    int32_t v_, e_, w0_, w1_;                                                                       \
    __asm__ volatile("ldr %[v], [%[p], %[o]]\n\t"                                                   \
                     "ldrd %[w0], %[w1], [%[w]], #8\n\t"                                            \
                     "sxtb16 %[e], %[v]\n\t"                                                        \
                     "sxtb16 %[v], %[v], ror #8\n\t"                                                \
                     "smlabb %[a0], %[e], %[w0], %[a0]\n\t"                                         \
                     "smlatt %[a2], %[e], %[w0], %[a2]\n\t"                                         \
                     "smlabb %[a1], %[v], %[w1], %[a1]\n\t"                                         \
                     "smlatt %[a3], %[v], %[w1], %[a3]\n\t"                                         \
                     : [a0] "+r"(A0_), [a1] "+r"(A1_), [a2] "+r"(A2_), [a3] "+r"(A3_), [w] "+r"(W_), \
                       [v] "=&r"(v_), [e] "=&r"(e_), [w0] "=&r"(w0_), [w1] "=&r"(w1_)              \
                     : [p] "r"(P_), [o] "n"(OFF_)                                                   \
                     : "memory");                                                                   \
  } while (0)
/* The same with the input at p + c (register offset). */
#define MC_DW4_TAP_RO(P_, C_, W_, A0_, A1_, A2_, A3_)                                                 \
  do {                                                                                              \
    int32_t v_, e_, w0_, w1_;                                                                       \
    __asm__ volatile("ldr %[v], [%[p], %[c]]\n\t"                                                   \
                     "ldrd %[w0], %[w1], [%[w]], #8\n\t"                                            \
                     "sxtb16 %[e], %[v]\n\t"                                                        \
                     "sxtb16 %[v], %[v], ror #8\n\t"                                                \
                     "smlabb %[a0], %[e], %[w0], %[a0]\n\t"                                         \
                     "smlatt %[a2], %[e], %[w0], %[a2]\n\t"                                         \
                     "smlabb %[a1], %[v], %[w1], %[a1]\n\t"                                         \
                     "smlatt %[a3], %[v], %[w1], %[a3]\n\t"                                         \
                     : [a0] "+r"(A0_), [a1] "+r"(A1_), [a2] "+r"(A2_), [a3] "+r"(A3_), [w] "+r"(W_), \
                       [v] "=&r"(v_), [e] "=&r"(e_), [w0] "=&r"(w0_), [w1] "=&r"(w1_)              \
                     : [p] "r"(P_), [c] "r"(C_)                                                     \
                     : "memory");                                                                   \
  } while (0)
/* channels4 with packed records (per group of 4 channels: the 4 biases, then per channel j the pair
 * {multiplier, c << 8 | r} at words 4 + 2j, 5 + 2j, where c = 2^(r-1) + zp * 2^r, |c| < 2^23).
 * MC_DW4_BIAS: the 4 biases by two LDRD. MC_DW4_STORE_PACKED_NN: channel J's requantization,
 * O_[J] = SSAT8(SMMLAR(A_, m, c) >> r) with A_ holding 2 * acc (mc_requant_fast2_low8_nn: the output
 * zero point and the clamp's lower end at -128, its upper end at 127), 6 instructions; one asm
 * statement per channel, where GCC loaded the four channels' records up front and spilled them.
 * A_ is clobbered. */
#define MC_DW4_BIAS(Q_, A0_, A1_, A2_, A3_)                                                           \
  __asm__ volatile("ldrd %[a0], %[a1], [%[q]]\n\t"                                                  \
                   "ldrd %[a2], %[a3], [%[q], #8]\n\t"                                              \
                   : [a0] "=&r"(A0_), [a1] "=&r"(A1_), [a2] "=r"(A2_), [a3] "=r"(A3_)                 \
                   : [q] "r"(Q_)                                                                    \
                   : "memory")
#define MC_DW4_STORE_PACKED_NN(Q_, J_, O_, A_)                                                        \
  do {                                                                                              \
    int32_t m_, s_, c_;                                                                             \
    __asm__ volatile("ldrd %[m], %[s], [%[q], %[qm]]\n\t"                                           \
                     "asr %[c], %[s], #8\n\t"                                                       \
                     "smmlar %[a], %[a], %[m], %[c]\n\t"                                            \
                     "asr %[a], %[a], %[s]\n\t"                                                     \
                     "ssat %[a], #8, %[a]\n\t"                                                      \
                     "strb %[a], [%[o], %[oo]]\n\t"                                                 \
                     : [a] "+&r"(A_), [m] "=&r"(m_), [s] "=&r"(s_), [c] "=&r"(c_)                     \
                     : [q] "r"(Q_), [qm] "n"(16 + 8 * (J_)), [o] "r"(O_), [oo] "n"(J_)                \
                     : "memory");                                                                   \
  } while (0)
#else
#define MC_DW4_TAP_RO(P_, C_, W_, A0_, A1_, A2_, A3_) MC_DW4_TAP((P_) + (C_), 0, W_, A0_, A1_, A2_, A3_)
#define MC_DW4_BIAS(Q_, A0_, A1_, A2_, A3_) \
  ((A0_) = (Q_)[0], (A1_) = (Q_)[1], (A2_) = (Q_)[2], (A3_) = (Q_)[3])
#define MC_DW4_STORE_PACKED_NN(Q_, J_, O_, A_)                                                        \
  do {                                                                                              \
    const int32_t s_ = (Q_)[5 + 2 * (J_)];                                                          \
    (O_)[J_] = (int8_t)MC_SSAT8(mc_requant_fast2_low8_nn((A_), (Q_)[4 + 2 * (J_)], s_ >> 8, s_));      \
  } while (0)
#define MC_DW4_TAP(P_, OFF_, W_, A0_, A1_, A2_, A3_)                                                  \
  do {                                                                                              \
    const int8_t* x_ = (P_) + (OFF_);                                                               \
    (A0_) = mc_mla((A0_), x_[0], mc_lane((W_), 0));                                                 \
    (A2_) = mc_mla((A2_), x_[2], mc_lane((W_), 1));                                                 \
    (A1_) = mc_mla((A1_), x_[1], mc_lane((W_), 2));                                                 \
    (A3_) = mc_mla((A3_), x_[3], mc_lane((W_), 3));                                                 \
    (W_) += 2;                                                                                      \
  } while (0)
#endif

/* ---- im2col for mc_dot_p4 ----------------------------------------------------------------------- */

/* Sign-extend steps groups of 4 int8 from src into the column layout of mc_dot_p4 (one pixel's
 * pairs, 8 words apart); returns where the next group goes. */
static inline int32_t* mc_im2col_s8(int32_t* d, const int8_t* src, int32_t steps) {
#if MC_DSP_ASM
  for (; steps >= 2; steps -= 2) {
    const int32_t v0 = mc_read_s8x4(src), v1 = mc_read_s8x4(src + 4);
    src += 8;
    mc_store_pair(d, mc_sxtb16(v0), mc_sxtb16_ror8(v0));
    mc_store_pair(d + 8, mc_sxtb16(v1), mc_sxtb16_ror8(v1));
    d += 16;
  }
  if (steps) {
    const int32_t v = mc_read_s8x4(src);
    mc_store_pair(d, mc_sxtb16(v), mc_sxtb16_ror8(v));
    d += 8;
  }
#else
  for (; steps > 0; --steps, src += 4, d += 8) {
    mc_set_lane(d, 0, src[0]);
    mc_set_lane(d, 1, src[2]);
    mc_set_lane(d, 2, src[1]);
    mc_set_lane(d, 3, src[3]);
  }
#endif
  return d;
}

/* steps groups of the same pair (padding: the input zero point in both lanes). */
static inline int32_t* mc_fill_col(int32_t* d, int32_t pair, int32_t steps) {
  for (; steps > 0; --steps) {
#if MC_DSP_ASM
    mc_store_pair(d, pair, pair);
#else
    d[0] = pair;
    d[1] = pair;
#endif
    d += 8;
  }
  return d;
}

#endif /* MICROCOMPILER_KERNEL_SIMD_H_ */
