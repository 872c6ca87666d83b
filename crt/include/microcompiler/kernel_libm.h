/* The C library's float transcendentals, carried in the runtime so that every build (the host,
 * each board's newlib) computes the same bits as the TFLM reference on the host.
 *
 * TFLM's float kernels call std::exp (expf); on the host that is glibc's expf, which is ARM's
 * optimized-routines algorithm (newlib has the same in libm/common/sf_exp.c). glibc builds it with
 * FMA contraction where the CPU has FMA (x86-64 since Haswell, every aarch64), and that build is the
 * one the pinned TFLM interpreter calls here; without FMA the algorithm rounds differently for
 * about one input in 13,000. mc_expf is that algorithm with each contracted multiply-add done by
 * mc_fma, an exactly rounded fused multiply-add in plain double arithmetic (Dekker's exact product
 * and Boldo-Melquiond's round-to-odd sum), so a Cortex-M4 with no double FPU, an M55 and the host
 * all give glibc's FMA build's bits (docs/float.md; tests/test_float_exact.py sweeps it against the
 * host expf and TFLM's EXP, SOFTMAX and LOGISTIC).
 *
 * mc_logf is optimized-routines' logf the same way (its FMA and plain builds agree on every input).
 *
 * Only C99 double arithmetic and integer bit operations: no libm, no FMA instruction. */
#ifndef MICROCOMPILER_KERNEL_LIBM_H_
#define MICROCOMPILER_KERNEL_LIBM_H_

#include <stdint.h>

#include "microcompiler/kernel_math.h" /* mc_f32_from_bits */

static inline uint64_t mc_f64_bits(double x) {
  union { double d; uint64_t u; } v;
  v.d = x;
  return v.u;
}

static inline double mc_f64_from_bits(uint64_t bits) {
  union { double d; uint64_t u; } v;
  v.u = bits;
  return v.d;
}

static inline uint32_t mc_f32_bits(float x) {
  union { float f; uint32_t u; } v;
  v.f = x;
  return v.u;
}

/* a + b = *sum + *err exactly (Knuth's TwoSum; any order of magnitude). The volatile stores keep
 * every operation rounded to double where a compiler would otherwise keep extra precision. */
static inline void mc_two_sum(double a, double b, double* sum, double* err) {
  volatile double s = a + b;
  volatile double bb = s - a;
  volatile double ea = a - (s - bb);
  *sum = s;
  *err = ea + (b - bb);
}

/* a * b = *prod + *err exactly (Dekker's product with Veltkamp's split), for products far from
 * overflow and underflow, as every call below has. */
static inline void mc_two_product(double a, double b, double* prod, double* err) {
  const double split = 134217729.0; /* 2^27 + 1 */
  volatile double ta = split * a, tb = split * b;
  volatile double ah = ta - (ta - a), bh = tb - (tb - b);
  volatile double al = a - ah, bl = b - bh;
  volatile double p = a * b;
  *prod = p;
  *err = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}

/* a + b rounded to odd: exact when representable, else the neighbour whose last bit is 1. */
static inline double mc_add_round_to_odd(double a, double b) {
  double v, w;
  uint64_t bits;
  mc_two_sum(a, b, &v, &w);
  bits = mc_f64_bits(v);
  if (w != 0.0 && (bits & 1u) == 0u) bits += ((w > 0.0) == (v > 0.0)) ? 1u : (uint64_t)-1;
  return mc_f64_from_bits(bits);
}

/* a * b + c with one rounding, as a fused multiply-add instruction computes it (Boldo and
 * Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to
 * odd", IEEE TC 2008): the exact product p + e, then c + p = h + l exactly, then h + RO(l + e). */
static inline double mc_fma(double a, double b, double c) {
  double p, e, h, l;
  mc_two_product(a, b, &p, &e);
  mc_two_sum(c, p, &h, &l);
  return h + mc_add_round_to_odd(l, e);
}

/* expf: x * 32 / ln 2 = k + r with |r| <= 1/2; exp(x) = 2^(k/32) * 2^(r/32), the second factor a
 * cubic in r. The constants are the optimized-routines ones (hexadecimal, exact). */
static inline float mc_expf(float x) {
  const double inv_ln2_n = 0x1.71547652b82fep+0 * 32; /* 32 / ln 2 */
  const double shift = 0x1.8p+52;                     /* rounds to an integer when added */
  const double c0 = 0x1.c6af84b912394p-5 / 32 / 32 / 32;
  const double c1 = 0x1.ebfce50fac4f3p-3 / 32 / 32;
  const double c2 = 0x1.62e42ff0c52d6p-1 / 32;
  /* 2^(i/32) as binary64 bits minus i << 47, i = 0..31: 2^(k/32) = T[k % 32] + (k << 47) as bits. */
  static const uint64_t table[32] = {
      0x3ff0000000000000u, 0x3fefd9b0d3158574u, 0x3fefb5586cf9890fu, 0x3fef9301d0125b51u,
      0x3fef72b83c7d517bu, 0x3fef54873168b9aau, 0x3fef387a6e756238u, 0x3fef1e9df51fdee1u,
      0x3fef06fe0a31b715u, 0x3feef1a7373aa9cbu, 0x3feedea64c123422u, 0x3feece086061892du,
      0x3feebfdad5362a27u, 0x3feeb42b569d4f82u, 0x3feeab07dd485429u, 0x3feea47eb03a5585u,
      0x3feea09e667f3bcdu, 0x3fee9f75e8ec5f74u, 0x3feea11473eb0187u, 0x3feea589994cce13u,
      0x3feeace5422aa0dbu, 0x3feeb737b0cdc5e5u, 0x3feec49182a3f090u, 0x3feed503b23e255du,
      0x3feee89f995ad3adu, 0x3feeff76f2fb5e47u, 0x3fef199bdd85529cu, 0x3fef3720dcef9069u,
      0x3fef5818dcfba487u, 0x3fef7c97337b9b5fu, 0x3fefa4afa2a490dau, 0x3fefd0765b6e4540u};
  const uint32_t top = (mc_f32_bits(x) >> 20) & 0x7ffu;
  double xd, kd, r, s, y;
  uint64_t ki;
  if (top >= 0x42bu) { /* |x| >= 88 or NaN */
    if (mc_f32_bits(x) == 0xff800000u) return 0.0f; /* -inf */
    if (top >= 0x7f8u) return x + x;                /* +inf, NaN */
    if (x > 0x1.62e42ep6f) return mc_f32_from_bits(0x7f800000u);  /* overflow */
    if (x < -0x1.9fe368p6f) return 0.0f;                          /* underflow */
  }
  xd = (double)x;
  kd = mc_fma(inv_ln2_n, xd, shift); /* glibc's FMA build: z + shift with z = inv_ln2_n * xd fused */
  ki = mc_f64_bits(kd);
  kd -= shift;
  r = mc_fma(inv_ln2_n, xd, -kd);
  s = mc_f64_from_bits(table[ki % 32u] + (ki << 47));
  y = mc_fma(mc_fma(c0, r, c1), r * r, mc_fma(c2, r, 1.0));
  return (float)(y * s);
}

/* logf: x = 2^k * z with z in [0x1.66p-1, 0x1.66p0), split into 16 subintervals of centre c;
 * log(x) = k ln 2 + log(c) + log(z / c), the last a cubic in r = z / c - 1 (optimized-routines'
 * logf, glibc's and newlib's; the multiply-adds fused as glibc's FMA build fuses them). */
static inline float mc_logf(float x) {
  static const double inv_c[16] = {
      0x1.661ec79f8f3bep+0, 0x1.571ed4aaf883dp+0, 0x1.49539f0f010bp+0, 0x1.3c995b0b80385p+0,
      0x1.30d190c8864a5p+0, 0x1.25e227b0b8eap+0, 0x1.1bb4a4a1a343fp+0, 0x1.12358f08ae5bap+0,
      0x1.0953f419900a7p+0, 0x1p+0, 0x1.e608cfd9a47acp-1, 0x1.ca4b31f026aap-1,
      0x1.b2036576afce6p-1, 0x1.9c2d163a1aa2dp-1, 0x1.886e6037841edp-1, 0x1.767dcf5534862p-1};
  static const double log_c[16] = {
      -0x1.57bf7808caadep-2, -0x1.2bef0a7c06ddbp-2, -0x1.01eae7f513a67p-2, -0x1.b31d8a68224e9p-3,
      -0x1.6574f0ac07758p-3, -0x1.1aa2bc79c81p-3, -0x1.a4e76ce8c0e5ep-4, -0x1.1973c5a611cccp-4,
      -0x1.252f438e10c1ep-5, 0x0p+0, 0x1.aa5aa5df25984p-5, 0x1.c5e53aa362eb4p-4,
      0x1.526e57720db08p-3, 0x1.bc2860d22477p-3, 0x1.1058bc8a07ee1p-2, 0x1.4043057b6ee09p-2};
  const double ln2 = 0x1.62e42fefa39efp-1;
  const double a0 = -0x1.00ea348b88334p-2, a1 = 0x1.5575b0be00b6ap-2, a2 = -0x1.ffffef20a4123p-2;
  const uint32_t off = 0x3f330000u;
  uint32_t ix = mc_f32_bits(x), tmp, iz, i;
  int32_t k;
  double z, r, r2, y0, y;
  if (ix == 0x3f800000u) return 0.0f; /* log(1) = +0 exactly */
  if (ix - 0x00800000u >= 0x7f800000u - 0x00800000u) { /* subnormal, zero, negative, inf, NaN */
    if ((ix << 1) == 0u) return mc_f32_from_bits(0xff800000u); /* -inf */
    if (ix == 0x7f800000u) return x;                              /* +inf */
    if ((ix & 0x80000000u) != 0u || (ix << 1) >= 0xff000000u) return mc_f32_from_bits(0x7fc00000u); /* NaN */
    ix = mc_f32_bits(x * 0x1p23f) - (23u << 23); /* subnormal: normalise */
  }
  tmp = ix - off;
  i = (tmp >> (23 - 4)) % 16u;
  k = (int32_t)(tmp >> 23) - ((tmp & 0x80000000u) != 0u ? 512 : 0); /* the arithmetic shift, portably */
  iz = ix - (tmp & (0x1ffu << 23));
  z = (double)mc_f32_from_bits(iz);
  r = mc_fma(z, inv_c[i], -1.0);
  y0 = mc_fma((double)k, ln2, log_c[i]);
  r2 = r * r;
  y = mc_fma(a0, r2, mc_fma(a1, r, a2));
  return (float)mc_fma(y, r2, y0 + r);
}

/* A float with k added to its exponent (no overflow or underflow in the calls below). */
static inline float mc_f32_add_exponent(float y, int32_t k) {
  return mc_f32_from_bits((uint32_t)((int32_t)mc_f32_bits(y) + k * (1 << 23)));
}

/* expm1f as fdlibm computes it in float (glibc's up to 2.40, newlib's): x = k ln 2 + r, r split
 * into hi - lo, expm1(r) from a rational form with a degree-5 polynomial in r^2 / 2, then rescaled
 * by 2^k in one of fdlibm's five ways. Float operations one by one, as they round there. */
static inline float mc_expm1f(float x) {
  const float ln2_hi = 6.9313812256e-01f, ln2_lo = 9.0580006145e-06f, inv_ln2 = 1.4426950216e+00f;
  const float q1 = -3.3333335072e-02f, q2 = 1.5873016091e-03f, q3 = -7.9365076090e-05f;
  const float q4 = 4.0082177293e-06f, q5 = -2.0109921195e-07f;
  const uint32_t bits = mc_f32_bits(x), abs_bits = bits & 0x7fffffffu;
  const int negative = (bits & 0x80000000u) != 0u;
  float hi, lo, c = 0.0f, t, e, hxs, hfx, r1, y;
  int32_t k;
  if (abs_bits >= 0x4195b844u) { /* |x| >= 27 ln 2 */
    if (abs_bits > 0x7f800000u) return x + x; /* NaN */
    if (negative) return -1.0f;
    if (x > 8.8721679688e+01f) return mc_f32_from_bits(0x7f800000u); /* +inf too */
  }
  if (abs_bits > 0x3eb17218u) { /* |x| > ln 2 / 2 */
    if (abs_bits < 0x3f851592u) { /* and < 1.5 ln 2 */
      hi = negative ? x + ln2_hi : x - ln2_hi;
      lo = negative ? -ln2_lo : ln2_lo;
      k = negative ? -1 : 1;
    } else {
      k = (int32_t)(inv_ln2 * x + (negative ? -0.5f : 0.5f));
      t = (float)k;
      hi = x - t * ln2_hi; /* exact */
      lo = t * ln2_lo;
    }
    x = hi - lo;
    c = (hi - x) - lo;
  } else if (abs_bits < 0x33000000u) { /* |x| < 2^-25 */
    return x;
  } else {
    k = 0;
  }
  hfx = 0.5f * x;
  hxs = x * hfx;
  r1 = 1.0f + hxs * (q1 + hxs * (q2 + hxs * (q3 + hxs * (q4 + hxs * q5))));
  t = 3.0f - r1 * hfx;
  e = hxs * ((r1 - t) / (6.0f - x * t));
  if (k == 0) return x - (x * e - hxs);
  e = x * (e - c) - c;
  e -= hxs;
  if (k == -1) return 0.5f * (x - e) - 0.5f;
  if (k == 1) return x < -0.25f ? -2.0f * (e - (x + 0.5f)) : 1.0f + 2.0f * (x - e);
  if (k <= -2 || k > 56) return mc_f32_add_exponent(1.0f - (e - x), k) - 1.0f;
  if (k < 23) {
    t = mc_f32_from_bits(0x3f800000u - (0x1000000u >> k)); /* 1 - 2^-k */
    y = t - (e - x);
  } else {
    t = mc_f32_from_bits((uint32_t)(0x7f - k) << 23); /* 2^-k */
    y = x - (e + t);
    y += 1.0f;
  }
  return mc_f32_add_exponent(y, k);
}

/* tanhf as fdlibm computes it (glibc's up to 2.40, newlib's): from expm1f of 2|x|. */
static inline float mc_tanhf(float x) {
  const uint32_t bits = mc_f32_bits(x), abs_bits = bits & 0x7fffffffu;
  const int negative = (bits & 0x80000000u) != 0u;
  float t, z;
  if (abs_bits >= 0x7f800000u) return abs_bits > 0x7f800000u ? x + x : (negative ? -1.0f : 1.0f);
  if (abs_bits >= 0x41b00000u) { /* |x| >= 22 */
    z = 1.0f;
  } else if (abs_bits == 0u) {
    return x; /* +-0 */
  } else if (abs_bits < 0x24000000u) { /* |x| < 2^-55 */
    return x * (1.0f + x);
  } else if (abs_bits >= 0x3f800000u) { /* |x| >= 1 */
    t = mc_expm1f(2.0f * mc_f32_from_bits(abs_bits));
    z = 1.0f - 2.0f / (t + 2.0f);
  } else {
    t = mc_expm1f(-2.0f * mc_f32_from_bits(abs_bits));
    z = -t / (t + 2.0f);
  }
  return negative ? -z : z;
}

#endif /* MICROCOMPILER_KERNEL_LIBM_H_ */
