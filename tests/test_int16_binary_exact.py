"""Every int16 binary operator equals TFLM on every input pair the quantization allows.

A sample of pairs is not enough: int16 SUB once differed from TFLM in about one pair in 30,000
(its multipliers were computed the int8 way, in float32; TFLM's int16 path computes them in
double). 2^32 pairs per quantization cannot go through the TFLM interpreter, so the check is a
proof in two parts, each one executed:

1. TFLM's int16 ADD/SUB is y = clamp(To(T1(x1) +/- T2(x2)) + zero point) (reference_ops'
   AddElementwise/SubElementwise: Ti(x) = MultiplyByQuantizedMultiplierSmallerThanOneExp(x << 15),
   To the same on the sum): one function of each input, then one of their sum. The generated code
   has the same three stages; its fast (SMMLAR) form of each stage is run in C against TFLM's
   formula (mc_requantize: SaturatingRoundingDoublingHighMul, then RoundingDivideByPOT) on all
   65,536 values of x1 and of x2 and on every value T1(x1) +/- T2(x2) can take. Equal stages make
   equal compositions, for all 2^32 pairs. MUL (one requantization of x1 * x2),
   SQUARED_DIFFERENCE (three, in TFLM's formula) and MAXIMUM/MINIMUM (no arithmetic) use TFLM's
   formula itself, so part 2 covers them.
2. The formula's parameters (multipliers, shifts, zero points, clamp) are TFLM's: the TFLM oracle
   runs each model on 524,288 pairs in which every int16 value of each input occurs 8 times,
   against a different partner each time, and every output must be equal.

The quantizations: equal input scales (a multiplier of exactly 1/2), scales 4x to 900x apart,
output scales finer and coarser than the inputs', fused RELU/RELU6 clamps, and the scales of
TFLM's SEANet int16 SUB/ADD integration models. (The comparisons have no int16 path to check:
microcompiler refuses int16 for all six, since TFLM's int16 GREATER returns false whatever the
inputs, ops/comparisons.py. PRELU's int16 with int8 alpha: tests/test_op_prelu.py.)
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from elementwise_models import activation_options
from harness import assert_matches_oracle, compile_bytes
from model_builder import ModelBuilder

from microcompiler import resources
from microcompiler.host import STRICT_CFLAGS, compiler
from microcompiler.ops.base import kernel_for

# (input1 scale, input2 scale, output scale, fused activation)
QUANTIZATIONS = {
    "equal_scales": (0.00040152602, 0.00040152602, 0.0021479358, "NONE"),
    "seanet_like": (3.0517578e-05, 6.1035156e-05, 9.1552734e-05, "NONE"),
    "scales_4x_apart": (0.0033682319, 0.00084205798, 0.0012756137, "NONE"),
    "scales_900x_apart": (1.1e-06, 0.00099, 0.0011, "RELU"),
    "output_finer": (0.00034313489, 0.0071021705, 2.7069413e-05, "NONE"),
    "output_coarser_relu6": (0.0004996397, 2.1400489e-05, 0.0060, "RELU6"),
}
OPS = ("ADD", "SUB", "MUL", "SQUARED_DIFFERENCE", "MAXIMUM", "MINIMUM")
PAIRS_PER_VALUE = 8  # three int16 tensors of 8 x 65,536 fit the oracle's 4 MiB arena


def int16_model(kind, s1, s2, so, activation):
    b = ModelBuilder()
    xs = [
        b.activation(f"x{k}", [PAIRS_PER_VALUE, 65536], "int16", scale=s, zero_point=0) for k, s in enumerate((s1, s2))
    ]
    if kind in ("MAXIMUM", "MINIMUM"):  # TFLM compares raw values: one scale for all
        so = s1
        xs[1] = b.activation("x1b", [PAIRS_PER_VALUE, 65536], "int16", scale=s1, zero_point=0)
    y = b.activation("y", [PAIRS_PER_VALUE, 65536], "int16", scale=so, zero_point=0)
    options = activation_options(kind, activation) if kind in ("ADD", "SUB", "MUL") else None  # the others have none
    b.op(kind, xs, [y], options)
    return b.finish(xs, [y])


def every_value_paired():
    """Row k of input1: every int16 value in order; of input2: a seeded permutation of them."""
    values = np.arange(-32768, 32768, dtype=np.int16)
    rng = np.random.default_rng(22)
    x1 = np.tile(values, (PAIRS_PER_VALUE, 1))
    x2 = np.stack([rng.permutation(values) for _ in range(PAIRS_PER_VALUE)])
    return [x1, x2]


@pytest.mark.parametrize("kind", OPS)
@pytest.mark.parametrize("quant", list(QUANTIZATIONS))
def test_every_value_of_each_input_matches_tflm(tmp_path, kind, quant):
    s1, s2, so, activation = QUANTIZATIONS[quant]
    assert_matches_oracle(int16_model(kind, s1, s2, so, activation), tmp_path, inputs=[every_value_paired()])


STAGE_CHECK = r"""
#include <stdio.h>
#include <stdint.h>
#include "microcompiler/kernel_math.h"
#include "microcompiler/kernel_simd.h"

int main(void) {
  int32_t v, lo1 = INT32_MAX, hi1 = INT32_MIN, lo2 = INT32_MAX, hi2 = INT32_MIN;
  int64_t acc, lo, hi, bad = 0;
  for (v = -32768; v <= 32767; ++v) {
    const int32_t v1 = v, v2 = v;
    const int32_t fast1 = FAST1, fast2 = FAST2;
    const int32_t tflm1 = mc_requantize(v * (1 << LEFT_SHIFT), M1, S1);
    const int32_t tflm2 = mc_requantize(v * (1 << LEFT_SHIFT), M2, S2);
    bad += (fast1 != tflm1) + (fast2 != tflm2);
    if (tflm1 < lo1) lo1 = tflm1;
    if (tflm1 > hi1) hi1 = tflm1;
    if (tflm2 < lo2) lo2 = tflm2;
    if (tflm2 > hi2) hi2 = tflm2;
  }
  lo = SUBTRACT ? (int64_t)lo1 - hi2 : (int64_t)lo1 + lo2;
  hi = SUBTRACT ? (int64_t)hi1 - lo2 : (int64_t)hi1 + hi2;
  for (acc = lo; acc <= hi; ++acc) {
    const int32_t x1 = (int32_t)acc, x2 = 0;
    const int32_t fast = FASTO;
    bad += fast != mc_requantize((int32_t)acc, MO, SO) + ZERO_POINT;
  }
  printf("%lld %lld %lld\n", (long long)bad, (long long)lo, (long long)hi);
  return 0;
}
"""


# Each case sweeps up to 2^31 accumulator values (about 12 s): two in the default suite, all with -m long.
STAGE_CASES = [
    (kind, quant)
    if (kind, quant) in (("SUB", "seanet_like"), ("ADD", "scales_4x_apart"))
    else pytest.param(kind, quant, marks=pytest.mark.long)
    for kind in ("ADD", "SUB")
    for quant in QUANTIZATIONS
]


@pytest.mark.parametrize("kind,quant", STAGE_CASES)
def test_fast_stages_equal_tflm_formula_on_every_value(tmp_path, kind, quant):
    s1, s2, so, activation = QUANTIZATIONS[quant]
    lib = compile_bytes(int16_model(kind, s1, s2, so, activation), tmp_path)
    op = lib.graph.operators[0]
    a, b, y = (lib.graph.tensors[i] for i in (*op.inputs, op.outputs[0]))
    q = kernel_for(op).requantization(op, a, b, y)
    assert q["fast"] is not None and lib.metadata["operators"][0]["kernel"]["variant"] == "smmlar"
    defines = dict(
        FAST1=q["fast"][0],
        FAST2=q["fast"][1],
        FASTO=q["fast"][2],
        LEFT_SHIFT=q["left_shift"],
        M1=q["input1_q"][0],
        S1=q["input1_q"][1],
        M2=q["input2_q"][0],
        S2=q["input2_q"][1],
        MO=q["output_q"][0],
        SO=q["output_q"][1],
        ZERO_POINT=0,
        SUBTRACT=int(kind == "SUB"),
    )
    source = "".join(f"#define {name} ({value})\n" for name, value in defines.items()) + STAGE_CHECK
    c_file, exe = Path(tmp_path) / "stages.c", Path(tmp_path) / "stages"
    c_file.write_text(source)
    include = resources.crt_dir() / "include"
    subprocess.run(
        [*compiler(), *STRICT_CFLAGS, "-O2", f"-I{include}", str(c_file), "-o", str(exe)], check=True, timeout=120
    )
    bad, lo, hi = map(
        int, subprocess.run([str(exe)], capture_output=True, text=True, check=True, timeout=600).stdout.split()
    )
    assert bad == 0, f"{bad} stage values differ from TFLM's formula"
    assert -(1 << 30) <= lo <= hi <= 1 << 30 and hi - lo > 1 << 16  # a real range was swept
