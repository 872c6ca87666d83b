/* The int32 build of TFLM's real FFT (KISS FFT with 32-bit fixed point: Q31 twiddles, 64-bit
 * products, each stage scales by 1/radix); the same steps as the int16 functions of kernel_fft.h.
 * Sums wrap at 32 bits as KISS FFT's int32 arithmetic does on TFLM's targets (here without
 * undefined behaviour: mc_wrap_add and mc_wrap_sub).
 */
#ifndef MICROCOMPILER_KERNEL_FFT32_H_
#define MICROCOMPILER_KERNEL_FFT32_H_

#include <stdint.h>

#include "microcompiler/kernel_fixedpoint.h" /* mc_wrap_add, mc_wrap_sub */
#include "microcompiler/kernel_fft.h"        /* MC_FFT_INVERSE */

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

/* sum = a + b and difference = a - b, complex, wrapping */
static inline void mc_fft32_add(int32_t* sum, const int32_t* a, const int32_t* b) {
  sum[0] = mc_wrap_add(a[0], b[0]);
  sum[1] = mc_wrap_add(a[1], b[1]);
}

static inline void mc_fft32_sub(int32_t* difference, const int32_t* a, const int32_t* b) {
  difference[0] = mc_wrap_sub(a[0], b[0]);
  difference[1] = mc_wrap_sub(a[1], b[1]);
}

static inline void mc_fft32_radix2(int32_t* f, int m, const int32_t* tw, int stride) {
  int k;
  for (k = 0; k < m; ++k) {
    int32_t* a = f + 2 * k;
    int32_t* b = f + 2 * (k + m);
    int32_t t[2];
    mc_fft32_scale(a, 2);
    mc_fft32_scale(b, 2);
    mc_fft32_mul(t, b, tw + 2 * k * stride);
    mc_fft32_sub(b, a, t);
    mc_fft32_add(a, a, t);
  }
}

static inline void mc_fft32_radix4(int32_t* f, int m, const int32_t* tw, int stride, int direction) {
  int k;
  for (k = 0; k < m; ++k) {
    int32_t* f0 = f + 2 * k;
    int32_t* f1 = f + 2 * (k + m);
    int32_t* f2 = f + 2 * (k + 2 * m);
    int32_t* f3 = f + 2 * (k + 3 * m);
    int32_t t1[2], t2[2], t3[2], sum[2], diff[2], rest[2];
    /* the odd quarter-turn: diff times -i (forward) or +i (inverse) */
    const int32_t turn = direction == MC_FFT_INVERSE ? -1 : 1;
    mc_fft32_scale(f0, 4);
    mc_fft32_scale(f1, 4);
    mc_fft32_scale(f2, 4);
    mc_fft32_scale(f3, 4);
    mc_fft32_mul(t1, f1, tw + 2 * k * stride);
    mc_fft32_mul(t2, f2, tw + 4 * k * stride);
    mc_fft32_mul(t3, f3, tw + 6 * k * stride);
    mc_fft32_sub(rest, f0, t2);
    mc_fft32_add(f0, f0, t2);
    mc_fft32_add(sum, t1, t3);
    mc_fft32_sub(diff, t1, t3);
    mc_fft32_sub(f2, f0, sum);
    mc_fft32_add(f0, f0, sum);
    if (turn > 0) {
      f1[0] = mc_wrap_add(rest[0], diff[1]);
      f1[1] = mc_wrap_sub(rest[1], diff[0]);
      f3[0] = mc_wrap_sub(rest[0], diff[1]);
      f3[1] = mc_wrap_add(rest[1], diff[0]);
    } else {
      f1[0] = mc_wrap_sub(rest[0], diff[1]);
      f1[1] = mc_wrap_add(rest[1], diff[0]);
      f3[0] = mc_wrap_add(rest[0], diff[1]);
      f3[1] = mc_wrap_sub(rest[1], diff[0]);
    }
  }
}

static inline void mc_rfft32_split(int32_t* out, int half, const int32_t* super_tw) {
  int32_t dc[2];
  int k;
  dc[0] = out[0];
  dc[1] = out[1];
  mc_fft32_scale(dc, 2);
  out[0] = mc_wrap_add(dc[0], dc[1]);
  out[2 * half] = mc_wrap_sub(dc[0], dc[1]);
  out[1] = 0;
  out[2 * half + 1] = 0;
  for (k = 1; k <= half / 2; ++k) {
    int32_t* low = out + 2 * k;
    int32_t* high = out + 2 * (half - k);
    int32_t fk[2], fnk[2], even[2], odd[2], t[2];
    fk[0] = low[0];
    fk[1] = low[1];
    fnk[0] = high[0];
    fnk[1] = mc_wrap_sub(0, high[1]);
    mc_fft32_scale(fk, 2);
    mc_fft32_scale(fnk, 2);
    mc_fft32_add(even, fk, fnk);
    mc_fft32_sub(odd, fk, fnk);
    mc_fft32_mul(t, odd, super_tw + 2 * (k - 1));
    low[0] = mc_wrap_add(even[0], t[0]) >> 1;
    low[1] = mc_wrap_add(even[1], t[1]) >> 1;
    high[0] = mc_wrap_sub(even[0], t[0]) >> 1;
    high[1] = mc_wrap_sub(t[1], even[1]) >> 1;
  }
}

static inline void mc_irfft32_merge(const int32_t* in, int32_t* out, int half, const int32_t* super_tw,
                                    const int16_t* slot) {
  int32_t first[2];
  int k;
  first[0] = mc_wrap_add(in[0], in[2 * half]);
  first[1] = mc_wrap_sub(in[0], in[2 * half]);
  mc_fft32_scale(first, 2);
  out[2 * slot[0]] = first[0];
  out[2 * slot[0] + 1] = first[1];
  for (k = 1; k <= half / 2; ++k) {
    int32_t fk[2], fnkc[2], even[2], odd[2], t[2];
    int32_t* low = out + 2 * slot[k];
    int32_t* high = out + 2 * slot[half - k];
    fk[0] = in[2 * k];
    fk[1] = in[2 * k + 1];
    fnkc[0] = in[2 * (half - k)];
    fnkc[1] = mc_wrap_sub(0, in[2 * (half - k) + 1]);
    mc_fft32_scale(fk, 2);
    mc_fft32_scale(fnkc, 2);
    mc_fft32_add(even, fk, fnkc);
    mc_fft32_sub(odd, fk, fnkc);
    mc_fft32_mul(t, odd, super_tw + 2 * (k - 1));
    mc_fft32_add(low, even, t);
    high[0] = mc_wrap_sub(even[0], t[0]);
    high[1] = mc_wrap_sub(0, mc_wrap_sub(even[1], t[1]));  /* written after low: the middle bin keeps this */
  }
}

#endif /* MICROCOMPILER_KERNEL_FFT32_H_ */
