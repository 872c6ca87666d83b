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
 * mc_logf is optimized-routines' logf the same way (its FMA and plain builds agree on every input);
 * mc_sinf and mc_cosf (SIN, COS) optimized-routines' sinf and cosf, and mc_exp its double exp
 * (DETECTION_POSTPROCESS), each as glibc's FMA build computes it; mc_expm1f and mc_tanhf fdlibm's.
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

/* sinf and cosf: Arm optimized-routines' algorithm (glibc 2.36's sysdeps/ieee754/flt-32 s_sinf.c,
 * s_cosf.c, s_sincosf.h and s_sincosf_data.c; newlib's libm/common/sf_sin.c, sf_cos.c), in double.
 * x is reduced to r = x - n pi/2 with |r| <= pi/4 (three ways: none below pi/4, one fused
 * multiply-subtract below 120, a 4/pi fixed-point product above), then sin(r) or cos(r) by n's
 * parity, the sign by n's quadrant. The bits are glibc's FMA build's (x86-64 ifunc s_sinf-fma.c
 * and s_cosf-fma.c, which the host's TFLM calls): the multiply-subtract of the reduction, where
 * fusing changes 34 results, is computed exactly in integers and rounded once, as the fused
 * instruction rounds; the polynomials' multiply-adds, fused there, are not here: on all 2^32
 * inputs that gives the same float results (docs/float.md), and the soft double arithmetic of a
 * Cortex-M4 takes a tenth of the time an emulated fused multiply-add would. A compiler that
 * contracts them (-ffp-contract=fast with a double FMA instruction) computes exactly glibc's FMA
 * build's polynomials: the same bits either way. */

/* The top 12 bits of |x| as a float: the comparisons of sinf and cosf (sign cleared, exponent and
 * the 3 top mantissa bits). */
static inline uint32_t mc_f32_abs_top12(float x) {
  return (mc_f32_bits(x) >> 20) & 0x7ffu;
}

/* sin(x) (n even) or cos(x) (n odd) for |x| <= pi/4 and x2 = x * x: odd degree-7 and even degree-8
 * polynomials, minimax on [-pi/4, pi/4] (optimized-routines' __sincosf_table coefficients),
 * evaluated in its order. */
static inline float mc_sincosf_poly(double x, double x2, int n) {
  const double s1 = -0x1.555545995a603p-3, s2 = 0x1.1107605230bc4p-7, s3 = -0x1.994eb3774cf24p-13;
  const double c0 = 1.0, c1 = -0x1.ffffffd0c621cp-2, c2 = 0x1.55553e1068f19p-5;
  const double c3 = -0x1.6c087e89a359dp-10, c4 = 0x1.99343027bf8c3p-16;
  double x3, x4;
  if ((n & 1) == 0) { /* x + x^3 s1 + x^7 (s2 + x^2 s3) */
    x3 = x * x2;
    return (float)((x + x3 * s1) + (x3 * x2) * (s2 + x2 * s3));
  }
  x4 = x2 * x2; /* (c0 + x^2 c1) + x^4 c2 + x^6 (c3 + x^2 c4) */
  return (float)(((c0 + x2 * c1) + x4 * c2) + (x4 * x2) * (c3 + x2 * c4));
}

/* x - n pi/2 for pi/4 <= |x| < 120, n the nearest integer to x 2/pi (*quadrant): 2/pi scaled by
 * 2^24 and truncated to int32, so that adding 2^23 and flooring by 2^24 rounds to nearest. Pi/2 in
 * double is good to 55 bits, enough below 120. The difference is glibc's fused x - n pi/2, rounded
 * once: in units of 2^-52 x (a float of at least 0.75: its last bit is at least 2^-24) and n pi/2
 * (|n| <= 76 times the 53-bit pi/2) are integers below 2^60, so their difference is exact in
 * int64 and its conversion to double the one rounding. */
static inline double mc_sincosf_reduce_fast(double x, int* quadrant) {
  const double inv_half_pi_2p24 = 0x1.45f306dc9c883p+23;
  const int64_t half_pi_2p52 = INT64_C(0x1921fb54442d18); /* 0x1.921fb54442d18p0, pi/2 in double */
  const int32_t scaled = (int32_t)(x * inv_half_pi_2p24) + 0x800000;
  /* floor(scaled / 2^24), an arithmetic shift right written portably */
  const int32_t n = (int32_t)(((uint32_t)scaled + 0x80000000u) >> 24) - 128;
  *quadrant = (int)n;
  return (double)((int64_t)(x * 0x1p52) - n * half_pi_2p52) * 0x1p-52;
}

/* |x| - n pi/2 for |x| >= 120 (xi its bits; *quadrant = n mod 4): the 24-bit mantissa times 4/pi,
 * of which a table holds 192 bits, taken from where the exponent puts the binary point, gives the
 * fraction of x 4/pi exactly in 2.62 fixed point; n is its rounded top 2 bits, the rest times
 * pi/2^63 the remainder (at least 33 bits right). */
static inline double mc_sincosf_reduce_large(uint32_t xi, int* quadrant) {
  /* 4/pi: each word the next 8 bits after the previous one's, so that the exponent's top 4 bits
   * index the 32 bits that matter */
  static const uint32_t inv_quarter_pi[24] = {
      0xa2u,       0xa2f9u,     0xa2f983u,   0xa2f9836eu, 0xf9836e4eu, 0x836e4e44u, 0x6e4e4415u, 0x4e441529u,
      0x441529fcu, 0x1529fc27u, 0x29fc2757u, 0xfc2757d1u, 0x2757d1f5u, 0x57d1f534u, 0xd1f534ddu, 0xf534ddc0u,
      0x34ddc0dbu, 0xddc0db62u, 0xc0db6295u, 0xdb629599u, 0x6295993cu, 0x95993c43u, 0x993c4390u, 0x3c439041u};
  const double pi_2p_neg_63 = 0x1.921fb54442d18p-62; /* 2 pi / 2^64 */
  const uint32_t* words = &inv_quarter_pi[(xi >> 26) & 15u];
  const uint32_t mantissa = ((xi & 0xffffffu) | 0x800000u) << ((xi >> 23) & 7u);
  uint64_t frac, n;
  int64_t remainder;
  /* the 32x96-bit product's middle 64 bits (the low word of the first product only) */
  frac = (((uint64_t)mantissa * words[0]) << 32) | (((uint64_t)mantissa * words[8]) >> 32);
  frac += (uint64_t)mantissa * words[4];
  n = (frac + ((uint64_t)1 << 61)) >> 62;
  frac -= n << 62;
  remainder = (frac >> 63) != 0u ? -(int64_t)(~frac + 1u) : (int64_t)frac; /* two's complement */
  *quadrant = (int)n;
  return (double)remainder * pi_2p_neg_63;
}

/* sinf (cosine 0) and cosf (cosine 1): they differ only in the small-argument results and in the
 * polynomial's parity (cos(x) = sin(x + pi/2)). With q = n mod 4 (n plus the sign of x when the
 * large reduction took |x|), sin(x) is sin(r), cos(r), -sin(r), -cos(r) by q: the odd polynomial
 * takes the argument r times the quadrant's sign, the even one is negated, as optimized-routines
 * does both (its sign table and negated cosine coefficients: the same bits, signed zeros too). */
static inline float mc_sinf_or_cosf(float y, int cosine) {
  const uint32_t top = mc_f32_abs_top12(y), xi = mc_f32_bits(y);
  double x = (double)y;
  int n;
  unsigned quadrant;
  if (top < mc_f32_abs_top12(0x1.921fb6p-1f)) { /* |y| < pi/4 (to 3 mantissa bits) */
    if (top < mc_f32_abs_top12(0x1p-12f)) return cosine ? 1.0f : y;
    return mc_sincosf_poly(x, x * x, cosine);
  }
  if (top < mc_f32_abs_top12(120.0f)) {
    x = mc_sincosf_reduce_fast(x, &n);
    quadrant = (unsigned)n & 3u;
  } else if (top < mc_f32_abs_top12(mc_f32_from_bits(0x7f800000u))) {
    x = mc_sincosf_reduce_large(xi, &n); /* of |y| */
    quadrant = ((unsigned)n + (xi >> 31)) & 3u;
  } else {
    return y - y; /* NaN for infinities and NaN */
  }
  if (((unsigned)n + (unsigned)cosine) % 2u == 0u) /* sin(r) times the quadrant's sign */
    return mc_sincosf_poly(((quadrant + 1u) & 2u) != 0u ? -x : x, x * x, 0);
  return (quadrant & 2u) != 0u ? -mc_sincosf_poly(x, x * x, 1) : mc_sincosf_poly(x, x * x, 1);
}

/* sinf, bit for bit glibc 2.36's FMA build (optimized-routines' s_sinf.c). */
static inline float mc_sinf(float x) { return mc_sinf_or_cosf(x, 0); }

/* cosf, bit for bit glibc 2.36's FMA build (optimized-routines' s_cosf.c). */
static inline float mc_cosf(float x) { return mc_sinf_or_cosf(x, 1); }

/* scale (1 + tmp) where 2^(k/128) = scale may overflow or underflow (sbits: its bits, the exponent
 * possibly wrapped; (int32_t)ki = k): rescaled by 2^1009 (k > 0) or 2^-1022 (k < 0), in the
 * subnormal range rounded once (optimized-routines' specialcase). glibc's FMA build fuses the
 * multiply-add for k > 0 only: for k < 0 the product scale tmp is computed once for two sums in
 * two blocks, which GCC does not contract (measured: docs/float.md). */
static inline double mc_exp_special(double tmp, uint64_t sbits, uint64_t ki) {
  volatile double scaled_tmp; /* rounded on its own, never contracted */
  double scale, y, hi, lo;
  if ((ki & 0x80000000u) == 0u) {
    scale = mc_f64_from_bits(sbits - ((uint64_t)1009 << 52));
    return 0x1p1009 * mc_fma(scale, tmp, scale);
  }
  scale = mc_f64_from_bits(sbits + ((uint64_t)1022 << 52));
  scaled_tmp = scale * tmp;
  y = scale + scaled_tmp;
  if (y < 1.0) {
    lo = scale - y + scaled_tmp;
    hi = 1.0 + y;
    lo = 1.0 - hi + y + lo;
    y = (hi + lo) - 1.0;
    if (y == 0.0) y = 0.0; /* +0, not -0 */
  }
  return 0x1p-1022 * y;
}

/* exp in double: optimized-routines' (glibc 2.36's sysdeps/ieee754/dbl-64/e_exp.c and
 * e_exp_data.c; newlib's libm/common/exp.c where the core has a double-precision FPU), for
 * DETECTION_POSTPROCESS, whose box decoding calls std::exp on a double as TFLM's does.
 * x 128 / ln 2 = k + r' with |r'| <= 1/2; exp(x) = 2^(k/128) exp(r), r = x - k ln 2 / 128, the
 * first factor from a table (each entry a double and the correction of its last bits), the second
 * a quartic; the multiply-adds fused as glibc's FMA build (x86-64 ifunc e_exp-fma.c) fuses them. */
static inline double mc_exp(double x) {
  /* 2^(i/128) ~= H[i] (1 + T[i]): entry 2i the bits of T[i], entry 2i + 1 those of H[i] minus i << 45 */
  static const uint64_t table[256] = {
      0x0000000000000000u, 0x3ff0000000000000u, 0x3c9b3b4f1a88bf6eu, 0x3feff63da9fb3335u,
      0xbc7160139cd8dc5du, 0x3fefec9a3e778061u, 0xbc905e7a108766d1u, 0x3fefe315e86e7f85u,
      0x3c8cd2523567f613u, 0x3fefd9b0d3158574u, 0xbc8bce8023f98efau, 0x3fefd06b29ddf6deu,
      0x3c60f74e61e6c861u, 0x3fefc74518759bc8u, 0x3c90a3e45b33d399u, 0x3fefbe3ecac6f383u,
      0x3c979aa65d837b6du, 0x3fefb5586cf9890fu, 0x3c8eb51a92fdeffcu, 0x3fefac922b7247f7u,
      0x3c3ebe3d702f9cd1u, 0x3fefa3ec32d3d1a2u, 0xbc6a033489906e0bu, 0x3fef9b66affed31bu,
      0xbc9556522a2fbd0eu, 0x3fef9301d0125b51u, 0xbc5080ef8c4eea55u, 0x3fef8abdc06c31ccu,
      0xbc91c923b9d5f416u, 0x3fef829aaea92de0u, 0x3c80d3e3e95c55afu, 0x3fef7a98c8a58e51u,
      0xbc801b15eaa59348u, 0x3fef72b83c7d517bu, 0xbc8f1ff055de323du, 0x3fef6af9388c8deau,
      0x3c8b898c3f1353bfu, 0x3fef635beb6fcb75u, 0xbc96d99c7611eb26u, 0x3fef5be084045cd4u,
      0x3c9aecf73e3a2f60u, 0x3fef54873168b9aau, 0xbc8fe782cb86389du, 0x3fef4d5022fcd91du,
      0x3c8a6f4144a6c38du, 0x3fef463b88628cd6u, 0x3c807a05b0e4047du, 0x3fef3f49917ddc96u,
      0x3c968efde3a8a894u, 0x3fef387a6e756238u, 0x3c875e18f274487du, 0x3fef31ce4fb2a63fu,
      0x3c80472b981fe7f2u, 0x3fef2b4565e27cddu, 0xbc96b87b3f71085eu, 0x3fef24dfe1f56381u,
      0x3c82f7e16d09ab31u, 0x3fef1e9df51fdee1u, 0xbc3d219b1a6fbffau, 0x3fef187fd0dad990u,
      0x3c8b3782720c0ab4u, 0x3fef1285a6e4030bu, 0x3c6e149289cecb8fu, 0x3fef0cafa93e2f56u,
      0x3c834d754db0abb6u, 0x3fef06fe0a31b715u, 0x3c864201e2ac744cu, 0x3fef0170fc4cd831u,
      0x3c8fdd395dd3f84au, 0x3feefc08b26416ffu, 0xbc86a3803b8e5b04u, 0x3feef6c55f929ff1u,
      0xbc924aedcc4b5068u, 0x3feef1a7373aa9cbu, 0xbc9907f81b512d8eu, 0x3feeecae6d05d866u,
      0xbc71d1e83e9436d2u, 0x3feee7db34e59ff7u, 0xbc991919b3ce1b15u, 0x3feee32dc313a8e5u,
      0x3c859f48a72a4c6du, 0x3feedea64c123422u, 0xbc9312607a28698au, 0x3feeda4504ac801cu,
      0xbc58a78f4817895bu, 0x3feed60a21f72e2au, 0xbc7c2c9b67499a1bu, 0x3feed1f5d950a897u,
      0x3c4363ed60c2ac11u, 0x3feece086061892du, 0x3c9666093b0664efu, 0x3feeca41ed1d0057u,
      0x3c6ecce1daa10379u, 0x3feec6a2b5c13cd0u, 0x3c93ff8e3f0f1230u, 0x3feec32af0d7d3deu,
      0x3c7690cebb7aafb0u, 0x3feebfdad5362a27u, 0x3c931dbdeb54e077u, 0x3feebcb299fddd0du,
      0xbc8f94340071a38eu, 0x3feeb9b2769d2ca7u, 0xbc87deccdc93a349u, 0x3feeb6daa2cf6642u,
      0xbc78dec6bd0f385fu, 0x3feeb42b569d4f82u, 0xbc861246ec7b5cf6u, 0x3feeb1a4ca5d920fu,
      0x3c93350518fdd78eu, 0x3feeaf4736b527dau, 0x3c7b98b72f8a9b05u, 0x3feead12d497c7fdu,
      0x3c9063e1e21c5409u, 0x3feeab07dd485429u, 0x3c34c7855019c6eau, 0x3feea9268a5946b7u,
      0x3c9432e62b64c035u, 0x3feea76f15ad2148u, 0xbc8ce44a6199769fu, 0x3feea5e1b976dc09u,
      0xbc8c33c53bef4da8u, 0x3feea47eb03a5585u, 0xbc845378892be9aeu, 0x3feea34634ccc320u,
      0xbc93cedd78565858u, 0x3feea23882552225u, 0x3c5710aa807e1964u, 0x3feea155d44ca973u,
      0xbc93b3efbf5e2228u, 0x3feea09e667f3bcdu, 0xbc6a12ad8734b982u, 0x3feea012750bdabfu,
      0xbc6367efb86da9eeu, 0x3fee9fb23c651a2fu, 0xbc80dc3d54e08851u, 0x3fee9f7df9519484u,
      0xbc781f647e5a3ecfu, 0x3fee9f75e8ec5f74u, 0xbc86ee4ac08b7db0u, 0x3fee9f9a48a58174u,
      0xbc8619321e55e68au, 0x3fee9feb564267c9u, 0x3c909ccb5e09d4d3u, 0x3feea0694fde5d3fu,
      0xbc7b32dcb94da51du, 0x3feea11473eb0187u, 0x3c94ecfd5467c06bu, 0x3feea1ed0130c132u,
      0x3c65ebe1abd66c55u, 0x3feea2f336cf4e62u, 0xbc88a1c52fb3cf42u, 0x3feea427543e1a12u,
      0xbc9369b6f13b3734u, 0x3feea589994cce13u, 0xbc805e843a19ff1eu, 0x3feea71a4623c7adu,
      0xbc94d450d872576eu, 0x3feea8d99b4492edu, 0x3c90ad675b0e8a00u, 0x3feeaac7d98a6699u,
      0x3c8db72fc1f0eab4u, 0x3feeace5422aa0dbu, 0xbc65b6609cc5e7ffu, 0x3feeaf3216b5448cu,
      0x3c7bf68359f35f44u, 0x3feeb1ae99157736u, 0xbc93091fa71e3d83u, 0x3feeb45b0b91ffc6u,
      0xbc5da9b88b6c1e29u, 0x3feeb737b0cdc5e5u, 0xbc6c23f97c90b959u, 0x3feeba44cbc8520fu,
      0xbc92434322f4f9aau, 0x3feebd829fde4e50u, 0xbc85ca6cd7668e4bu, 0x3feec0f170ca07bau,
      0x3c71affc2b91ce27u, 0x3feec49182a3f090u, 0x3c6dd235e10a73bbu, 0x3feec86319e32323u,
      0xbc87c50422622263u, 0x3feecc667b5de565u, 0x3c8b1c86e3e231d5u, 0x3feed09bec4a2d33u,
      0xbc91bbd1d3bcbb15u, 0x3feed503b23e255du, 0x3c90cc319cee31d2u, 0x3feed99e1330b358u,
      0x3c8469846e735ab3u, 0x3feede6b5579fdbfu, 0xbc82dfcd978e9db4u, 0x3feee36bbfd3f37au,
      0x3c8c1a7792cb3387u, 0x3feee89f995ad3adu, 0xbc907b8f4ad1d9fau, 0x3feeee07298db666u,
      0xbc55c3d956dcaebau, 0x3feef3a2b84f15fbu, 0xbc90a40e3da6f640u, 0x3feef9728de5593au,
      0xbc68d6f438ad9334u, 0x3feeff76f2fb5e47u, 0xbc91eee26b588a35u, 0x3fef05b030a1064au,
      0x3c74ffd70a5fddcdu, 0x3fef0c1e904bc1d2u, 0xbc91bdfbfa9298acu, 0x3fef12c25bd71e09u,
      0x3c736eae30af0cb3u, 0x3fef199bdd85529cu, 0x3c8ee3325c9ffd94u, 0x3fef20ab5fffd07au,
      0x3c84e08fd10959acu, 0x3fef27f12e57d14bu, 0x3c63cdaf384e1a67u, 0x3fef2f6d9406e7b5u,
      0x3c676b2c6c921968u, 0x3fef3720dcef9069u, 0xbc808a1883ccb5d2u, 0x3fef3f0b555dc3fau,
      0xbc8fad5d3ffffa6fu, 0x3fef472d4a07897cu, 0xbc900dae3875a949u, 0x3fef4f87080d89f2u,
      0x3c74a385a63d07a7u, 0x3fef5818dcfba487u, 0xbc82919e2040220fu, 0x3fef60e316c98398u,
      0x3c8e5a50d5c192acu, 0x3fef69e603db3285u, 0x3c843a59ac016b4bu, 0x3fef7321f301b460u,
      0xbc82d52107b43e1fu, 0x3fef7c97337b9b5fu, 0xbc892ab93b470dc9u, 0x3fef864614f5a129u,
      0x3c74b604603a88d3u, 0x3fef902ee78b3ff6u, 0x3c83c5ec519d7271u, 0x3fef9a51fbc74c83u,
      0xbc8ff7128fd391f0u, 0x3fefa4afa2a490dau, 0xbc8dae98e223747du, 0x3fefaf482d8e67f1u,
      0x3c8ec3bc41aa2008u, 0x3fefba1bee615a27u, 0x3c842b94c3a9eb32u, 0x3fefc52b376bba97u,
      0x3c8a64a931d185eeu, 0x3fefd0765b6e4540u, 0xbc8e37bae43be3edu, 0x3fefdbfdad9cbe14u,
      0x3c77893b4d91cd9du, 0x3fefe7c1819e90d8u, 0x3c5305c14160cc89u, 0x3feff3c22b8f71f1u};
  const double inv_ln2_n = 0x1.71547652b82fep0 * 128;                                /* 128 / ln 2 */
  const double neg_ln2_hi_n = -0x1.62e42fefa0000p-8, neg_ln2_lo_n = -0x1.cf79abc9e3b3ap-47; /* -ln 2 / 128 */
  const double shift = 0x1.8p52; /* rounds to an integer when added */
  const double c2 = 0x1.ffffffffffdbdp-2, c3 = 0x1.555555555543cp-3;
  const double c4 = 0x1.55555cf172b91p-5, c5 = 0x1.1111167a4d017p-7;
  const uint64_t bits = mc_f64_bits(x);
  uint32_t abstop = (uint32_t)(bits >> 52) & 0x7ffu;
  double kd, r, r2, tmp;
  uint64_t ki, sbits;
  if (abstop - 0x3c9u >= 0x408u - 0x3c9u) { /* |x| < 2^-54, |x| >= 512, or NaN */
    if (abstop < 0x3c9u) return 1.0 + x;
    if (abstop >= 0x409u) { /* |x| >= 1024 */
      if (bits == 0xfff0000000000000u) return 0.0; /* -inf */
      if (abstop >= 0x7ffu) return 1.0 + x;        /* +inf, NaN */
      return (bits >> 63) != 0u ? 0.0 : mc_f64_from_bits(0x7ff0000000000000u); /* underflow, overflow */
    }
    abstop = 0; /* the result may overflow or underflow: mc_exp_special */
  }
  kd = mc_fma(inv_ln2_n, x, shift);
  ki = mc_f64_bits(kd);
  kd -= shift;
  r = mc_fma(kd, neg_ln2_lo_n, mc_fma(kd, neg_ln2_hi_n, x));
  sbits = table[2u * (ki % 128u) + 1u] + (ki << 45);
  r2 = r * r;
  tmp = mc_fma(r2 * r2, mc_fma(r, c5, c4), mc_fma(r2, mc_fma(r, c3, c2), mc_f64_from_bits(table[2u * (ki % 128u)]) + r));
  if (abstop == 0u) return mc_exp_special(tmp, sbits, ki);
  return mc_fma(mc_f64_from_bits(sbits), tmp, mc_f64_from_bits(sbits));
}

#endif /* MICROCOMPILER_KERNEL_LIBM_H_ */
