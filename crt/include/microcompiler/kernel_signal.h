/* Integer helpers of TFLite Micro's signal-processing operators (audio front ends): bit length,
 * rounded square roots, a table-driven natural logarithm and PCAN's gain and shrink functions.
 * Each reproduces the arithmetic of TFLM's signal library (tensorflow/tflite-micro, signal/src)
 * bit for bit, including where that arithmetic wraps, so generated front ends match TFLM exactly.
 */
#ifndef MICROCOMPILER_KERNEL_SIGNAL_H_
#define MICROCOMPILER_KERNEL_SIGNAL_H_

#include <stdint.h>

/* Bits needed to write x (1 + the index of its highest set bit); 64 for 0, as TFLM built with GCC. */
static inline uint32_t mc_bit_length64(uint64_t x) {
  uint32_t bits = 0;
  if (x == 0) return 64;
  while (x != 0) {
    x >>= 1;
    ++bits;
  }
  return bits;
}

/* The same for 32 bits: 32 for 0. */
static inline uint32_t mc_bit_length32(uint32_t x) {
  return x == 0 ? 32 : mc_bit_length64(x);
}

/* round(sqrt(x)) by the digit-by-digit method; the rounding step stops at largest. */
static inline uint64_t mc_sqrt_digits(uint64_t x, uint64_t largest) {
  uint64_t root = 0, bit;
  int leading, steps;
  if (x == 0) return 0;
  leading = (int)(64 - mc_bit_length64(x)) | 1;
  bit = (uint64_t)1 << (63 - leading);
  for (steps = (63 - leading) / 2 + 1; steps > 0; --steps) {
    if (x >= root + bit) {
      x -= root + bit;
      root = (root >> 1) + bit;
    } else {
      root >>= 1;
    }
    bit >>= 2;
  }
  if (x > root && root != largest) ++root;
  return root;
}

/* TFLM's Sqrt32 (saturating at 0xFFFF) and Sqrt64, which takes the 32-bit path below 2^32. */
static inline uint16_t mc_sqrt32(uint32_t x) {
  return (uint16_t)mc_sqrt_digits(x, 0xFFFFu);
}

static inline uint32_t mc_sqrt64(uint64_t x) {
  return (x >> 32) == 0 ? mc_sqrt32((uint32_t)x) : (uint32_t)mc_sqrt_digits(x, 0xFFFFFFFFu);
}

/* Natural logarithm of x > 1 times out_scale, in 16-bit fixed point: log2 from the bit length plus
 * a correction of the linear fraction read (and interpolated) from lut, 129 entries of
 * (log2(1 + f) - f) * 2^16 at f = k / 128; then times ln 2. Wraps as TFLM's uint32 arithmetic. */
enum { MC_LOG_SCALE_BITS = 16, MC_LOG_SEGMENT_BITS = 7, MC_LOG_LN2_Q16 = 45426 };

static inline uint32_t mc_log32(uint32_t x, uint32_t out_scale, const uint16_t* lut) {
  const uint32_t whole = mc_bit_length32(x) - 1;
  const uint32_t round = (uint32_t)1 << (MC_LOG_SCALE_BITS - 1);
  int32_t fraction = (int32_t)(x - ((uint32_t)1 << whole));
  uint32_t segment, log2_q16, ln_q16;
  int32_t low, high, within;
  if (whole < MC_LOG_SCALE_BITS) {
    fraction *= (int32_t)1 << (MC_LOG_SCALE_BITS - whole);
  } else {
    fraction >>= whole - MC_LOG_SCALE_BITS;
  }
  segment = (uint32_t)fraction >> (MC_LOG_SCALE_BITS - MC_LOG_SEGMENT_BITS);
  low = lut[segment];
  high = lut[segment + 1];
  within = fraction - (int32_t)(segment << (MC_LOG_SCALE_BITS - MC_LOG_SEGMENT_BITS));
  log2_q16 = (whole << MC_LOG_SCALE_BITS) +
             (uint32_t)(fraction + low + (((high - low) * within) >> MC_LOG_SCALE_BITS));
  ln_q16 = (uint32_t)(((uint64_t)MC_LOG_LN2_Q16 * log2_q16 + round) >> MC_LOG_SCALE_BITS);
  return (out_scale * ln_q16 + round) >> MC_LOG_SCALE_BITS;
}

/* PCAN: the gain for noise estimate x, a piecewise quadratic in x's octave read from lut. */
static inline int16_t mc_pcan_gain(uint32_t x, const int16_t* lut) {
  int32_t octave, fraction;
  int64_t result;
  if (x <= 2) return lut[x];
  octave = (int32_t)mc_bit_length32(x);
  lut += 4 * octave - 6;
  fraction = (int32_t)((octave < 11 ? x << (11 - octave) : x >> (octave - 11)) & 0x3FF);
  result = ((int32_t)lut[2] * fraction) >> 5;
  result += (int32_t)((uint32_t)lut[1] << 5);
  result = (int32_t)(result * fraction); /* wraps as TFLM's int32 arithmetic */
  result = (int32_t)((result + (1 << 14)) >> 15) + lut[0];
  return (int16_t)result;
}

/* PCAN's shrink of an SNR with 12 fractional bits to an output with 6: x^2/4 below 2, else x - 1. */
enum { MC_PCAN_SNR_BITS = 12, MC_PCAN_OUTPUT_BITS = 6 };

static inline uint32_t mc_pcan_shrink(uint32_t x) {
  if (x < ((uint32_t)2 << MC_PCAN_SNR_BITS)) {
    return (x * x) >> (2 + 2 * MC_PCAN_SNR_BITS - MC_PCAN_OUTPUT_BITS);
  }
  return (x >> (MC_PCAN_SNR_BITS - MC_PCAN_OUTPUT_BITS)) - ((uint32_t)1 << MC_PCAN_OUTPUT_BITS);
}

#endif /* MICROCOMPILER_KERNEL_SIGNAL_H_ */
