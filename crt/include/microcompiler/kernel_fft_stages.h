/* The stages of the real FFT, written once for its int16 and float (kernel_fft.h) and int32
 * (kernel_fft32.h) builds: included by each with MC_FFT_SUFFIX (16, f or 32) and MC_FFT_T (the
 * element type) defined, after the scalar operations of that build (N = MC_FFT_SUFFIX):
 *   mc_fftN_scale(c, divisor), mc_fftN_mul(product, a, b)   (complex; the fixed-point builds scale
 *                                                            by 1/radix at each stage, float not)
 *   mc_fftN_plus(a, b), mc_fftN_minus(a, b), mc_fftN_negate(a)   (wrapping to the integer width)
 *   mc_fftN_half_plus(a, b), mc_fftN_half_minus(a, b)       ((a + b) / 2, (a - b) / 2)
 * It defines mc_fftN_add, mc_fftN_sub, mc_fftN_radix2, mc_fftN_radix4, mc_rfftN_split and
 * mc_irfftN_merge, then undefines MC_FFT_SUFFIX and MC_FFT_T.
 * (No include guard: it is meant to be included once per build.)
 */
#if !defined(MC_FFT_SUFFIX) || !defined(MC_FFT_T)
#error "define MC_FFT_SUFFIX and MC_FFT_T before including kernel_fft_stages.h"
#endif

#define MC_FFT_GLUE(prefix, suffix, name) prefix##suffix##name
#define MC_FFT_NAME(prefix, suffix, name) MC_FFT_GLUE(prefix, suffix, name)
/* mc_fft16_ ## name for MC_FFT_SUFFIX 16 */
#define MC_FFT(name) MC_FFT_NAME(mc_fft, MC_FFT_SUFFIX, _##name)

/* sum = a + b and difference = a - b, complex, wrapping */
static inline void MC_FFT(add)(MC_FFT_T* sum, const MC_FFT_T* a, const MC_FFT_T* b) {
  sum[0] = MC_FFT(plus)(a[0], b[0]);
  sum[1] = MC_FFT(plus)(a[1], b[1]);
}

static inline void MC_FFT(sub)(MC_FFT_T* difference, const MC_FFT_T* a, const MC_FFT_T* b) {
  difference[0] = MC_FFT(minus)(a[0], b[0]);
  difference[1] = MC_FFT(minus)(a[1], b[1]);
}

/* One radix-2 stage over 2 * m points at f; twiddle k is tw[k * stride]. */
static inline void MC_FFT(radix2)(MC_FFT_T* f, int m, const MC_FFT_T* tw, int stride) {
  int k;
  for (k = 0; k < m; ++k) {
    MC_FFT_T* a = f + 2 * k;
    MC_FFT_T* b = f + 2 * (k + m);
    MC_FFT_T t[2];
    MC_FFT(scale)(a, 2);
    MC_FFT(scale)(b, 2);
    MC_FFT(mul)(t, b, tw + 2 * k * stride);
    MC_FFT(sub)(b, a, t);
    MC_FFT(add)(a, a, t);
  }
}

/* One radix-4 stage over 4 * m points at f, forward or inverse. */
static inline void MC_FFT(radix4)(MC_FFT_T* f, int m, const MC_FFT_T* tw, int stride, int direction) {
  int k;
  for (k = 0; k < m; ++k) {
    MC_FFT_T* f0 = f + 2 * k;
    MC_FFT_T* f1 = f + 2 * (k + m);
    MC_FFT_T* f2 = f + 2 * (k + 2 * m);
    MC_FFT_T* f3 = f + 2 * (k + 3 * m);
    MC_FFT_T t1[2], t2[2], t3[2], sum[2], diff[2], rest[2];
    MC_FFT(scale)(f0, 4);
    MC_FFT(scale)(f1, 4);
    MC_FFT(scale)(f2, 4);
    MC_FFT(scale)(f3, 4);
    MC_FFT(mul)(t1, f1, tw + 2 * k * stride);
    MC_FFT(mul)(t2, f2, tw + 4 * k * stride);
    MC_FFT(mul)(t3, f3, tw + 6 * k * stride);
    MC_FFT(sub)(rest, f0, t2);
    MC_FFT(add)(f0, f0, t2);
    MC_FFT(add)(sum, t1, t3);
    MC_FFT(sub)(diff, t1, t3);
    MC_FFT(sub)(f2, f0, sum);
    MC_FFT(add)(f0, f0, sum);
    /* the odd quarter-turn: diff times +i (inverse) or -i (forward) */
    if (direction == MC_FFT_INVERSE) {
      f1[0] = MC_FFT(minus)(rest[0], diff[1]);
      f1[1] = MC_FFT(plus)(rest[1], diff[0]);
      f3[0] = MC_FFT(plus)(rest[0], diff[1]);
      f3[1] = MC_FFT(minus)(rest[1], diff[0]);
    } else {
      f1[0] = MC_FFT(plus)(rest[0], diff[1]);
      f1[1] = MC_FFT(minus)(rest[1], diff[0]);
      f3[0] = MC_FFT(minus)(rest[0], diff[1]);
      f3[1] = MC_FFT(plus)(rest[1], diff[0]);
    }
  }
}

/* The n/2-point complex transform in out[0 .. n/2) becomes the n/2 + 1 bins of the real one. */
static inline void MC_FFT_NAME(mc_rfft, MC_FFT_SUFFIX, _split)(MC_FFT_T* out, int half, const MC_FFT_T* super_tw) {
  MC_FFT_T dc[2];
  int k;
  dc[0] = out[0];
  dc[1] = out[1];
  MC_FFT(scale)(dc, 2);
  out[0] = MC_FFT(plus)(dc[0], dc[1]);
  out[2 * half] = MC_FFT(minus)(dc[0], dc[1]);
  out[1] = 0;
  out[2 * half + 1] = 0;
  for (k = 1; k <= half / 2; ++k) {
    MC_FFT_T* low = out + 2 * k;
    MC_FFT_T* high = out + 2 * (half - k);
    MC_FFT_T fk[2], fnk[2], even[2], odd[2], t[2];
    fk[0] = low[0];
    fk[1] = low[1];
    fnk[0] = high[0];
    fnk[1] = MC_FFT(negate)(high[1]);
    MC_FFT(scale)(fk, 2);
    MC_FFT(scale)(fnk, 2);
    MC_FFT(add)(even, fk, fnk);
    MC_FFT(sub)(odd, fk, fnk);
    MC_FFT(mul)(t, odd, super_tw + 2 * (k - 1));
    low[0] = MC_FFT(half_plus)(even[0], t[0]);
    low[1] = MC_FFT(half_plus)(even[1], t[1]);
    high[0] = MC_FFT(half_minus)(even[0], t[0]);
    high[1] = MC_FFT(half_minus)(t[1], even[1]);
  }
}

/* The inverse: n/2 + 1 bins at in become the n/2-point complex transform's input, each value
 * written straight to its radix-digit slot in out (slot[k] for value k). */
static inline void MC_FFT_NAME(mc_irfft, MC_FFT_SUFFIX, _merge)(const MC_FFT_T* in, MC_FFT_T* out, int half,
                                                             const MC_FFT_T* super_tw, const int16_t* slot) {
  MC_FFT_T first[2];
  int k;
  first[0] = MC_FFT(plus)(in[0], in[2 * half]);
  first[1] = MC_FFT(minus)(in[0], in[2 * half]);
  MC_FFT(scale)(first, 2);
  out[2 * slot[0]] = first[0];
  out[2 * slot[0] + 1] = first[1];
  for (k = 1; k <= half / 2; ++k) {
    MC_FFT_T fk[2], fnkc[2], even[2], odd[2], t[2];
    MC_FFT_T* low = out + 2 * slot[k];
    MC_FFT_T* high = out + 2 * slot[half - k];
    fk[0] = in[2 * k];
    fk[1] = in[2 * k + 1];
    fnkc[0] = in[2 * (half - k)];
    fnkc[1] = MC_FFT(negate)(in[2 * (half - k) + 1]);
    MC_FFT(scale)(fk, 2);
    MC_FFT(scale)(fnkc, 2);
    MC_FFT(add)(even, fk, fnkc);
    MC_FFT(sub)(odd, fk, fnkc);
    MC_FFT(mul)(t, odd, super_tw + 2 * (k - 1));
    MC_FFT(add)(low, even, t);
    high[0] = MC_FFT(minus)(even[0], t[0]);
    high[1] = MC_FFT(negate)(MC_FFT(minus)(even[1], t[1]));  /* written after low: the middle bin keeps this */
  }
}

#undef MC_FFT
#undef MC_FFT_NAME
#undef MC_FFT_GLUE
#undef MC_FFT_SUFFIX
#undef MC_FFT_T
