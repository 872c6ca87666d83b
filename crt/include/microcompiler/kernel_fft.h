/* Butterflies of the real FFT of TFLM's SignalRfft, in the arithmetic of the KISS FFT build TFLM
 * uses (int16: Q15 with a 1/radix scaling at each stage; float). A transform of n/2 complex points
 * is: the input pairs in the order of the radix digits (the generated code copies them), then one
 * pass of radix-4 or radix-2 butterflies per stage (last stage first), then the split into the
 * n/2 + 1 bins of the real transform. Complex values are (real, imaginary) pairs, as TFLM's
 * Complex<T>; twiddles are pairs too.
 */
#ifndef MICROCOMPILER_KERNEL_FFT_H_
#define MICROCOMPILER_KERNEL_FFT_H_

#include <stdint.h>

enum { MC_Q15_MAX = 32767, MC_Q15_BITS = 15 };
enum { MC_FFT_FORWARD = 0, MC_FFT_INVERSE = 1 };  /* the radix-4 butterfly's direction */

/* KISS FFT's sround(): a Q30 product back to Q15, rounded half up; int16 wraps as KISS FFT's. */
static inline int16_t mc_q15_round(int32_t product) {
  return (int16_t)((product + (1 << (MC_Q15_BITS - 1))) >> MC_Q15_BITS);
}

/* x / divisor as KISS FFT's C_FIXDIV: times the Q15 fraction 32767 / divisor. */
static inline void mc_fft16_scale(int16_t* c, int32_t divisor) {
  c[0] = mc_q15_round(c[0] * (MC_Q15_MAX / divisor));
  c[1] = mc_q15_round(c[1] * (MC_Q15_MAX / divisor));
}

/* product = a * b (complex, Q15) */
static inline void mc_fft16_mul(int16_t* product, const int16_t* a, const int16_t* b) {
  const int16_t real = mc_q15_round(a[0] * b[0] - a[1] * b[1]);
  product[1] = mc_q15_round(a[0] * b[1] + a[1] * b[0]);
  product[0] = real;
}

/* a + b, a - b, -a and the halves of the sums, wrapping to int16 as KISS FFT's int16 arithmetic. */
static inline int16_t mc_fft16_plus(int16_t a, int16_t b) { return (int16_t)(a + b); }
static inline int16_t mc_fft16_minus(int16_t a, int16_t b) { return (int16_t)(a - b); }
static inline int16_t mc_fft16_negate(int16_t a) { return (int16_t)-a; }
static inline int16_t mc_fft16_half_plus(int16_t a, int16_t b) { return (int16_t)((a + b) >> 1); }
static inline int16_t mc_fft16_half_minus(int16_t a, int16_t b) { return (int16_t)((a - b) >> 1); }

/* mc_fft16_radix2, mc_fft16_radix4, mc_rfft16_split, mc_irfft16_merge (and mc_fft16_add, _sub). */
#define MC_FFT_SUFFIX 16
#define MC_FFT_T int16_t
#include "microcompiler/kernel_fft_stages.h"

/* The same in float, without scaling. */
static inline void mc_fftf_scale(float* c, int32_t divisor) {
  (void)c;
  (void)divisor;
}

static inline void mc_fftf_mul(float* product, const float* a, const float* b) {
  const float real = a[0] * b[0] - a[1] * b[1];
  product[1] = a[0] * b[1] + a[1] * b[0];
  product[0] = real;
}

static inline float mc_fftf_plus(float a, float b) { return a + b; }
static inline float mc_fftf_minus(float a, float b) { return a - b; }
static inline float mc_fftf_negate(float a) { return -a; }
static inline float mc_fftf_half_plus(float a, float b) { return 0.5f * (a + b); }
static inline float mc_fftf_half_minus(float a, float b) { return 0.5f * (a - b); }

/* mc_fftf_radix2, mc_fftf_radix4, mc_rfftf_split, mc_irfftf_merge (and mc_fftf_add, _sub). */
#define MC_FFT_SUFFIX f
#define MC_FFT_T float
#include "microcompiler/kernel_fft_stages.h"

#endif /* MICROCOMPILER_KERNEL_FFT_H_ */
