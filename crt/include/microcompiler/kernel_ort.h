/* ONNX Runtime's float32 Softmax (MLAS, docs/onnx.md "Bit for bit with ONNX Runtime"), as its x86-64
 * AVX-512 kernels compute it: per row the maximum, then for each element e = exp(x - max) by MLAS's
 * range reduction and degree-6 polynomial (fused multiply-adds, the constants of its MlasExpConstants),
 * scaled by 2^m with one rounding (VSCALEFPS); the sum of the e in 16 lanes (element i into lane
 * i % 16, in order), the lanes folded as its reduction does (lane i + lane i + 8, then pairs, then
 * the two halves); then each e times 1 / sum. Written from reading MLAS; the constants are MLAS's. */
#ifndef MICROCOMPILER_KERNEL_ORT_H_
#define MICROCOMPILER_KERNEL_ORT_H_

#include <stdint.h>

#include "microcompiler/kernel_math.h"

/* p * 2^m for an integer m in [-150, 0], rounded once (a subnormal result included). */
static inline float mc_ort_scalef(float p, int32_t m) {
  if (m >= -126) return p * mc_f32_from_bits((uint32_t)(m + 127) << 23); /* exact */
  return (p * mc_f32_from_bits((uint32_t)(m + 126 + 127) << 23)) * 0x1p-126f; /* exact, then one rounding */
}

/* exp(x + negative_max) as MLAS's sum-of-exponentials kernel computes it (x + negative_max <= 0). */
static inline float mc_ort_sumexp_element(float x, float negative_max) {
  float v = x + negative_max;
  float b, m, p;
  v = -103.9720840454f > v ? -103.9720840454f : v; /* its lower clamp (a NaN stays) */
  b = __builtin_fmaf(v, 0x1.715476p+0f, 12582912.0f); /* v / ln 2 plus the rounding bias */
  m = b - 12582912.0f;                                 /* round(v / ln 2) */
  v = __builtin_fmaf(m, -6.93145752e-1f, v);           /* v - m * ln 2, in two parts */
  v = __builtin_fmaf(m, -1.42860677e-6f, v);
  p = 0x1.694000p-10f;
  p = __builtin_fmaf(p, v, 0x1.125edcp-7f);
  p = __builtin_fmaf(p, v, 0x1.555b5ap-5f);
  p = __builtin_fmaf(p, v, 0x1.555450p-3f);
  p = __builtin_fmaf(p, v, 0x1.fffff6p-2f);
  p = __builtin_fmaf(p, v, 1.0f);
  p = __builtin_fmaf(p, v, 1.0f);
  return mc_ort_scalef(p, (int32_t)m);
}

/* One row of n: y[i] = exp(x[i] - max) / sum in MLAS's order (see the top). In place allowed. */
static inline void mc_ort_softmax_row(const float* x, float* y, int32_t n) {
  float max = -3.40282347e+38f, lanes[16], t[8], sum, scale;
  int32_t i;
  for (i = 0; i < n; ++i) max = x[i] > max ? x[i] : max;
  for (i = 0; i < 16; ++i) lanes[i] = 0.0f;
  for (i = 0; i < n; ++i) {
    const float e = mc_ort_sumexp_element(x[i], -max);
    y[i] = e;
    lanes[i & 15] += e;
  }
  for (i = 0; i < 8; ++i) t[i] = lanes[i + 8] + lanes[i];
  sum = ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
  scale = 1.0f / sum;
  for (i = 0; i < n; ++i) y[i] = y[i] * scale;
}

/* ONNX Runtime's Sigmoid: MLAS's logistic as its x86-64 kernel (MlasComputeLogisticF32KernelFma3)
 * computes it: x clamped to [-18, 18] (VMAXPS/VMINPS: a NaN stays), Eigen's rational approximation
 * with the polynomials in fused multiply-adds, x * p / q + 0.5, then the lower clamp at 0 (a NaN
 * stays; no upper clamp). Checked bit for bit with ONNX Runtime 1.32 over 8 million inputs
 * (tests/test_onnx_mlas.py). */
static inline float mc_ort_logistic(float x) {
  float x2, p, q, r;
  x = -18.0f > x ? -18.0f : x;
  x = 18.0f < x ? 18.0f : x;
  x2 = x * x;
  p = __builtin_fmaf(x2, 4.37031012579801e-11f, 1.15627324459942e-07f);
  p = __builtin_fmaf(x2, p, 6.08574864600143e-05f);
  p = __builtin_fmaf(x2, p, 8.51377133304701e-03f);
  p = __builtin_fmaf(x2, p, 2.48287947061529e-01f);
  q = __builtin_fmaf(x2, 6.10247389755681e-13f, 5.76102136993427e-09f);
  q = __builtin_fmaf(x2, q, 6.29106785017040e-06f);
  q = __builtin_fmaf(x2, q, 1.70198817374094e-03f);
  q = __builtin_fmaf(x2, q, 1.16817656904453e-01f);
  q = __builtin_fmaf(x2, q, 9.93151921023180e-01f);
  p = x * p;
  r = p / q + 0.5f;
  return 0.0f > r ? 0.0f : r;
}

/* ONNX Runtime's Tanh: MLAS's tanh as its x86-64 kernel computes it: x clamped to [-9, 9] (a NaN
 * stays), Eigen's degree-13/6 rational approximation in fused multiply-adds, x * p / q. Checked as
 * the logistic above. */
static inline float mc_ort_tanh(float x) {
  float x2, p, q;
  x = -9.0f > x ? -9.0f : x;
  x = 9.0f < x ? 9.0f : x;
  x2 = x * x;
  p = __builtin_fmaf(x2, -2.76076847742355e-16f, 2.00018790482477e-13f);
  p = __builtin_fmaf(p, x2, -8.60467152213735e-11f);
  p = __builtin_fmaf(p, x2, 5.12229709037114e-08f);
  p = __builtin_fmaf(p, x2, 1.48572235717979e-05f);
  p = __builtin_fmaf(p, x2, 6.37261928875436e-04f);
  p = __builtin_fmaf(p, x2, 4.89352455891786e-03f);
  p = p * x;
  q = __builtin_fmaf(x2, 1.19825839466702e-06f, 1.18534705686654e-04f);
  q = __builtin_fmaf(q, x2, 2.26843463243900e-03f);
  q = __builtin_fmaf(q, x2, 4.89352518554385e-03f);
  return p / q;
}

/* The rational approximation of ONNX Runtime's GRU (rnn_helpers.cc, deepcpu: gru_output_gate_tanh and
 * gru_reset_gate_sigmoid), in plain C multiplies and adds as its x86-64 build computes them (no fused
 * multiply-adds): p(x) / q(x) for tanh, x clamped to [-10, 10] (a NaN stays). */
static inline float mc_ort_gru_rational(float x) {
  const float x2 = x * x;
  float p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f, q;
  p = x2 * p + -8.60467152213735e-11f;
  p = x2 * p + 5.12229709037114e-08f;
  p = x2 * p + 1.48572235717979e-05f;
  p = x2 * p + 6.37261928875436e-04f;
  p = x2 * p + 4.89352455891786e-03f;
  p = x * p;
  q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
  q = x2 * q + 2.26843463243900e-03f;
  q = x2 * q + 4.89352518554385e-03f;
  return p / q;
}

/* ONNX Runtime's GRU candidate activation: its rational tanh. */
static inline float mc_ort_gru_tanh(float x) {
  x = x < -10.0f ? -10.0f : x > 10.0f ? 10.0f : x;
  return mc_ort_gru_rational(x);
}

/* ONNX Runtime's GRU reset gate: 0.5 (1 + tanh(x / 2)) by the rational tanh, x clamped to [-20, 20].
 * Its kernel multiplies the reset operand by 0.5 first, then by (1 + p / q): scalings by 2 are exact,
 * so the product with this value has the same bits (normal numbers). */
static inline float mc_ort_gru_logistic(float x) {
  x = x < -20.0f ? -20.0f : x > 20.0f ? 20.0f : x;
  return 0.5f * (1.0f + mc_ort_gru_rational(0.5f * x));
}

#endif /* MICROCOMPILER_KERNEL_ORT_H_ */
