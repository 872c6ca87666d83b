/* The int32 build of TFLM's real FFT (KISS FFT with 32-bit fixed point: Q31 twiddles, 64-bit
 * products, each stage scales by 1/radix); the same steps as the int16 functions of kernel_fft.h.
 * Sums wrap at 32 bits as KISS FFT's int32 arithmetic does on TFLM's targets (here without
 * undefined behaviour: mc_wrap_add and mc_wrap_sub).
 */
#ifndef MICROCOMPILER_KERNEL_FFT32_H_
#define MICROCOMPILER_KERNEL_FFT32_H_

#include <stdint.h>

#include "microcompiler/kernel_fixedpoint.h" /* mc_wrap_add, mc_wrap_sub */
#include "microcompiler/kernel_fft.h"        /* MC_FFT_INVERSE, the int16 build */

enum { MC_Q31_BITS = 31 };
#define MC_Q31_MAX INT32_MAX

/* A Q62 product back to Q31, rounded half up. */
static inline int32_t mc_q31_round(int64_t product) {
  return (int32_t)((product + ((int64_t)1 << (MC_Q31_BITS - 1))) >> MC_Q31_BITS);
}

static inline void mc_fft32_scale(int32_t* c, int32_t divisor) {
  c[0] = mc_q31_round((int64_t)c[0] * (MC_Q31_MAX / divisor));
  c[1] = mc_q31_round((int64_t)c[1] * (MC_Q31_MAX / divisor));
}

static inline void mc_fft32_mul(int32_t* product, const int32_t* a, const int32_t* b) {
  const int32_t real = mc_q31_round((int64_t)a[0] * b[0] - (int64_t)a[1] * b[1]);
  product[1] = mc_q31_round((int64_t)a[0] * b[1] + (int64_t)a[1] * b[0]);
  product[0] = real;
}

/* a + b, a - b, -a and the halves of the sums, wrapping at 32 bits. */
static inline int32_t mc_fft32_plus(int32_t a, int32_t b) { return mc_wrap_add(a, b); }
static inline int32_t mc_fft32_minus(int32_t a, int32_t b) { return mc_wrap_sub(a, b); }
static inline int32_t mc_fft32_negate(int32_t a) { return mc_wrap_sub(0, a); }
static inline int32_t mc_fft32_half_plus(int32_t a, int32_t b) { return mc_wrap_add(a, b) >> 1; }
static inline int32_t mc_fft32_half_minus(int32_t a, int32_t b) { return mc_wrap_sub(a, b) >> 1; }

/* mc_fft32_radix2, mc_fft32_radix4, mc_rfft32_split, mc_irfft32_merge (and mc_fft32_add, _sub). */
#define MC_FFT_SUFFIX 32
#define MC_FFT_T int32_t
#include "microcompiler/kernel_fft_stages.h"

#endif /* MICROCOMPILER_KERNEL_FFT32_H_ */
