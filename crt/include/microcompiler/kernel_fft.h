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

/* a + b, a - b and their halves, wrapping to int16 as KISS FFT's int16 arithmetic. */
static inline int16_t mc_fft16_plus(int16_t a, int16_t b) { return (int16_t)(a + b); }
static inline int16_t mc_fft16_minus(int16_t a, int16_t b) { return (int16_t)(a - b); }
static inline int16_t mc_fft16_half_plus(int16_t a, int16_t b) { return (int16_t)((a + b) >> 1); }
static inline int16_t mc_fft16_half_minus(int16_t a, int16_t b) { return (int16_t)((a - b) >> 1); }

/* mc_fft16_radix2, mc_fft16_radix4, mc_rfft16_split, mc_irfft16_merge (and mc_fft16_add, _sub). */
#define MC_FFT_BITS 16
#define MC_FFT_T int16_t
#include "microcompiler/kernel_fft_stages.h"

/* The same in float (no scaling). */
static inline void mc_fftf_mul(float* product, const float* a, const float* b) {
  const float real = a[0] * b[0] - a[1] * b[1];
  product[1] = a[0] * b[1] + a[1] * b[0];
  product[0] = real;
}

static inline void mc_fftf_radix2(float* f, int m, const float* tw, int stride) {
  int k;
  for (k = 0; k < m; ++k) {
    float* a = f + 2 * k;
    float* b = f + 2 * (k + m);
    float t[2];
    mc_fftf_mul(t, b, tw + 2 * k * stride);
    b[0] = a[0] - t[0];
    b[1] = a[1] - t[1];
    a[0] += t[0];
    a[1] += t[1];
  }
}

static inline void mc_fftf_radix4(float* f, int m, const float* tw, int stride,
                                  int direction) {
  int k;
  for (k = 0; k < m; ++k) {
    float* f0 = f + 2 * k;
    float* f1 = f + 2 * (k + m);
    float* f2 = f + 2 * (k + 2 * m);
    float* f3 = f + 2 * (k + 3 * m);
    float t1[2], t2[2], t3[2], sum[2], diff[2], rest[2];
    mc_fftf_mul(t1, f1, tw + 2 * k * stride);
    mc_fftf_mul(t2, f2, tw + 4 * k * stride);
    mc_fftf_mul(t3, f3, tw + 6 * k * stride);
    rest[0] = f0[0] - t2[0];
    rest[1] = f0[1] - t2[1];
    f0[0] += t2[0];
    f0[1] += t2[1];
    sum[0] = t1[0] + t3[0];
    sum[1] = t1[1] + t3[1];
    diff[0] = t1[0] - t3[0];
    diff[1] = t1[1] - t3[1];
    f2[0] = f0[0] - sum[0];
    f2[1] = f0[1] - sum[1];
    f0[0] += sum[0];
    f0[1] += sum[1];
    if (direction == MC_FFT_INVERSE) {
      f1[0] = rest[0] - diff[1];
      f1[1] = rest[1] + diff[0];
      f3[0] = rest[0] + diff[1];
      f3[1] = rest[1] - diff[0];
    } else {
      f1[0] = rest[0] + diff[1];
      f1[1] = rest[1] - diff[0];
      f3[0] = rest[0] - diff[1];
      f3[1] = rest[1] + diff[0];
    }
  }
}

static inline void mc_rfftf_split(float* out, int half, const float* super_tw) {
  const float dc_real = out[0], dc_imag = out[1];
  int k;
  out[0] = dc_real + dc_imag;
  out[2 * half] = dc_real - dc_imag;
  out[1] = 0.0f;
  out[2 * half + 1] = 0.0f;
  for (k = 1; k <= half / 2; ++k) {
    float* low = out + 2 * k;
    float* high = out + 2 * (half - k);
    float even[2], odd[2], t[2];
    even[0] = low[0] + high[0];
    even[1] = low[1] - high[1];
    odd[0] = low[0] - high[0];
    odd[1] = low[1] + high[1];
    mc_fftf_mul(t, odd, super_tw + 2 * (k - 1));
    low[0] = 0.5f * (even[0] + t[0]);
    low[1] = 0.5f * (even[1] + t[1]);
    high[0] = 0.5f * (even[0] - t[0]);
    high[1] = 0.5f * (t[1] - even[1]);
  }
}

static inline void mc_irfftf_merge(const float* in, float* out, int half, const float* super_tw,
                                   const int16_t* slot) {
  int k;
  out[2 * slot[0]] = in[0] + in[2 * half];
  out[2 * slot[0] + 1] = in[0] - in[2 * half];
  for (k = 1; k <= half / 2; ++k) {
    float even[2], odd[2], t[2];
    float* low = out + 2 * slot[k];
    float* high = out + 2 * slot[half - k];
    even[0] = in[2 * k] + in[2 * (half - k)];
    even[1] = in[2 * k + 1] - in[2 * (half - k) + 1];
    odd[0] = in[2 * k] - in[2 * (half - k)];
    odd[1] = in[2 * k + 1] + in[2 * (half - k) + 1];
    mc_fftf_mul(t, odd, super_tw + 2 * (k - 1));
    low[0] = even[0] + t[0];
    low[1] = even[1] + t[1];
    high[0] = even[0] - t[0];
    high[1] = -(even[1] - t[1]);  /* written after low: the middle bin keeps this */
  }
}

#endif /* MICROCOMPILER_KERNEL_FFT_H_ */
