"""Float kernels bit for bit equal to TFLM on the host, and every board equal to the host.

TFLM's float SOFTMAX, LOG_SOFTMAX, LOGISTIC, EXP, LOG, TANH, ELU, SIN, COS and LSTM call the C library's
expf, logf, tanhf, expm1f, sinf and cosf. The runtime carries those algorithms
(crt/include/microcompiler/kernel_libm.h: optimized-routines' expf, logf, sinf and cosf as glibc's FMA
build computes them, fdlibm's tanhf and expm1f), so the generated code needs no libm and gives the
host C library's bits on every target:

1. the runtime's functions against the host C library, on every 4,099th float bit pattern (about
   a million inputs each, all signs, exponents, subnormals, infinities and NaN) and on the two
   inputs where glibc's plain and FMA builds of expf differ; sinf and cosf on about 6.6 million
   inputs (every 1,021st bit pattern, the floats nearest k pi/2 for k < 2^17 and their neighbours,
   the branch points, all 34 inputs where glibc's plain and FMA builds differ); the double exp
   (DETECTION_POSTPROCESS's) on 4 million doubles;
2. one-operator models over thousands of values each against the TFLM oracle, compared as bits;
3. the same models on an emulated Cortex-M4 (no double-precision FPU: the double arithmetic is
   software) and Cortex-M55, compared as bits with the host build;
4. real converted float models (tests/models/keras: DS-CNN, Conv2DTranspose autoencoder, LSTM, GRU
   as a WHILE loop, transformer block, unrolled GRU/LSTM, Conv1D HAR CNN, MobileNetV1) bit for bit
   TFLM's on the host, and five of them on the M4 and M55 bit for bit the host's; for the four
   convolutional ones every intermediate tensor too (validate's layer-by-layer comparison, bitwise).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from board_oracle import needs_board_tools
from harness import compile_bytes
from model_builder import ModelBuilder, softmax_options
from oracle import Oracle

from microcompiler import resources
from microcompiler.host import STRICT_CFLAGS, HostProgram, compiler
from microcompiler.inputs import random_inputs
from microcompiler.project import run_on_board

SWEEP = r"""
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include "microcompiler/kernel_libm.h"

static float (*volatile libm_expf)(float) = expf;
static float (*volatile libm_logf)(float) = logf;
static float (*volatile libm_tanhf)(float) = tanhf;
static float (*volatile libm_expm1f)(float) = expm1f;
static float (*volatile libm_sinf)(float) = sinf;
static float (*volatile libm_cosf)(float) = cosf;
static double (*volatile libm_exp)(double) = exp;

static uint32_t bits(float v) { uint32_t b; memcpy(&b, &v, 4); return b; }
static float from_bits(uint32_t b) { float v; memcpy(&v, &b, 4); return v; }
static int same(float a, float b) { return bits(a) == bits(b) || (a != a && b != b); }

static long n_trig = 0, bad_sin = 0, bad_cos = 0;
static void check_trig(uint32_t u) {
  const float x = from_bits(u);
  bad_sin += !same(libm_sinf(x), mc_sinf(x));
  bad_cos += !same(libm_cosf(x), mc_cosf(x));
  ++n_trig;
}
/* u and its 2 * reach neighbours (bit patterns), both signs */
static void check_trig_around(uint32_t u, uint32_t reach) {
  uint32_t d;
  for (d = u - reach; d != u + reach + 1u; ++d) {
    check_trig(d & 0x7fffffffu);
    check_trig(d | 0x80000000u);
  }
}

/* exp (double) on n arguments from a xorshift generator: any bit pattern, [-750, 750] (every
 * path: overflow, underflow, subnormal results), [-20, 20], and a float over a float (as
 * DETECTION_POSTPROCESS's box sizes) */
static long bad_exp_of(long n) {
  uint64_t state = 88172645463325252u;
  long bad = 0, i;
  for (i = 0; i < n; ++i) {
    uint64_t u;
    double x, want, got;
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    u = state;
    switch (i % 4) {
      case 0: x = mc_f64_from_bits(u); break;
      case 1: x = (double)(u >> 11) * 0x1p-53 * 1500.0 - 750.0; break;
      case 2: x = (double)(u >> 11) * 0x1p-53 * 40.0 - 20.0; break;
      default: x = (double)from_bits((uint32_t)u) / (double)from_bits(0x3f800000u + (uint32_t)(u >> 40)); break;
    }
    want = libm_exp(x);
    got = mc_exp(x);
    bad += mc_f64_bits(want) != mc_f64_bits(got) && !(want != want && got != got);
  }
  return bad;
}

int main(void) {
  static const uint32_t fma_and_plain_differ[2] = {0x4202422Fu, 0xC27C65D9u};
  /* where glibc's plain sinf/cosf build rounds differently from its FMA build (and at minus them) */
  static const uint32_t trig_fma_and_plain_differ[] = {TRIG_FMA_INPUTS};
  /* the branch points: 2^-126, 2^-12, pi/4, 120 and the largest float, by their top 12 bits */
  static const uint32_t edges[] = {0x00800000u, 0x39800000u, 0x3f400000u, 0x3f490fdbu, 0x42f00000u, 0x7f7fffffu};
  long bad[4] = {0, 0, 0, 0}, n = 0;
  uint32_t u, k;
  for (u = 0; u <= 0xffffffffu - 4099u; u += 4099u) {
    float x;
    memcpy(&x, &u, 4);
    bad[0] += !same(libm_expf(x), mc_expf(x));
    bad[1] += !same(libm_logf(x), mc_logf(x));
    bad[2] += !same(libm_tanhf(x), mc_tanhf(x));
    bad[3] += !same(libm_expm1f(x), mc_expm1f(x));
    ++n;
  }
  for (k = 0; k < 2; ++k) {
    float x;
    memcpy(&x, &fma_and_plain_differ[k], 4);
    bad[0] += !same(libm_expf(x), mc_expf(x));
  }
  /* sinf, cosf: every 1021st bit pattern (every sign, exponent, subnormal, huge argument,
   * infinity and NaN), every subnormal's neighbours of 0, the branch points, the floats nearest
   * k pi/2 for k < 2^17 and their neighbours, and the FMA-sensitive inputs */
  for (u = 0; u <= 0xffffffffu - 1021u; u += 1021u) check_trig(u);
  check_trig_around(0u, 64u);
  for (k = 0; k < sizeof edges / sizeof edges[0]; ++k) check_trig_around(edges[k], 64u);
  check_trig(0x7f800000u);
  check_trig(0xff800000u);
  check_trig(0x7fc00000u);
  for (k = 1; k < 1u << 17; ++k) check_trig_around(bits((float)(k * 1.5707963267948966)), 4u);
  for (k = 0; k < sizeof trig_fma_and_plain_differ / sizeof trig_fma_and_plain_differ[0]; ++k)
    check_trig_around(trig_fma_and_plain_differ[k], 0u);
  printf("%ld %ld %ld %ld %ld %ld %ld %ld %ld\n", n, bad[0], bad[1], bad[2], bad[3], n_trig, bad_sin, bad_cos,
         bad_exp_of(4000000));
  return 0;
}
"""


# |x| where glibc 2.36's plain (SSE2) sinf or cosf differs from its FMA build, all of them (an exhaustive
# run over every float, docs/float.md): the runtime equals the FMA build there.
TRIG_FMA_AND_PLAIN_DIFFER = [
    0x418A3ADB, 0x418A3ADC, 0x418A3ADD, 0x418A3ADE, 0x41BC76D9, 0x4202EB4B, 0x4255B0A9, 0x42687A55, 0x4280CE28,
    0x42870E40, 0x42A35C07, 0x42A35D44, 0x42A97360, 0x42C55FAA, 0x42CF5854, 0x42D8D23E, 0x42E87A55,
]  # fmt: skip


def host_has_fma() -> bool:
    try:
        return " fma " in f" {Path('/proc/cpuinfo').read_text().replace(chr(10), ' ')} "
    except OSError:
        return False


needs_fma = pytest.mark.skipif(
    not host_has_fma(),
    reason="the host CPU has no FMA: glibc's expf then takes its plain build, "
    "which differs from the runtime's (glibc's FMA build) at 2 inputs (sinf and cosf at 34)",
)


def run_sweep(tmp_path, source: str, timeout: float) -> list[int]:
    """Compile a sweep program (C, against the runtime's headers and the host libm), run it, and
    return the integers it prints."""
    path, exe = tmp_path / "sweep.c", tmp_path / "sweep"
    path.write_text(source)
    subprocess.run(
        [*compiler(), *STRICT_CFLAGS, "-O2", f"-I{resources.crt_dir() / 'include'}", str(path), "-o", str(exe), "-lm"],
        check=True,
        timeout=120,
    )
    return [
        int(v)
        for v in subprocess.run([str(exe)], capture_output=True, text=True, check=True, timeout=timeout).stdout.split()
    ]


@needs_fma
def test_runtime_libm_equals_the_host_c_library(tmp_path):
    fma_inputs = ", ".join(f"0x{u:08X}u" for u in TRIG_FMA_AND_PLAIN_DIFFER)
    n, *bad, n_trig, bad_sin, bad_cos, bad_exp = run_sweep(tmp_path, SWEEP.replace("TRIG_FMA_INPUTS", fma_inputs), 300)
    assert n > 1_000_000 and n_trig > 6_000_000
    assert bad == [0, 0, 0, 0], f"mismatches (expf, logf, tanhf, expm1f): {bad}"
    assert (bad_sin, bad_cos) == (0, 0), f"mismatches of {n_trig} inputs (sinf, cosf): {bad_sin}, {bad_cos}"
    assert bad_exp == 0, f"exp (double): {bad_exp} mismatches of 4,000,000"


EVERY_FLOAT = r"""
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include "microcompiler/kernel_libm.h"

static float (*volatile libm_sinf)(float) = sinf;
static float (*volatile libm_cosf)(float) = cosf;

static uint32_t bits(float v) { uint32_t b; memcpy(&b, &v, 4); return b; }
static int same(float a, float b) { return bits(a) == bits(b) || (a != a && b != b); }

int main(void) {
  long bad_sin = 0, bad_cos = 0;
  uint32_t u = 0;
  do {
    float x;
    memcpy(&x, &u, 4);
    bad_sin += !same(libm_sinf(x), mc_sinf(x));
    bad_cos += !same(libm_cosf(x), mc_cosf(x));
  } while (++u != 0u);
  printf("%ld %ld\n", bad_sin, bad_cos);
  return 0;
}
"""


@pytest.mark.long
@needs_fma
def test_runtime_sinf_cosf_equal_the_host_c_library_on_every_float(tmp_path):
    """All 2^32 float bit patterns (about 40 CPU seconds; docs/float.md)."""
    assert run_sweep(tmp_path, EVERY_FLOAT, 3600) == [0, 0]


def sweep_values(n: int, low: float, high: float, seed: int) -> np.ndarray:
    """n float32 values: an even grid over [low, high], seeded random ones, and the edges."""
    rng = np.random.default_rng(seed)
    grid = np.linspace(low, high, n // 2, dtype=np.float32)
    rand = rng.uniform(low, high, n - n // 2 - 8).astype(np.float32)
    edges = np.array([0.0, -0.0, 1e-30, -1e-30, low, high, 1.0, -1.0], np.float32)
    return np.concatenate([grid, rand, edges]).astype(np.float32)


# (operator, input range, options): each model is one operator over 4,096 values in [1, 4096].
FLOAT_OPS = [
    ("EXP", (-100.0, 88.0), None),
    ("LOG", (1e-30, 1e30), None),
    ("TANH", (-12.0, 12.0), None),
    ("LOGISTIC", (-20.0, 20.0), None),
    ("ELU", (-20.0, 5.0), None),
    ("SOFTMAX", (-30.0, 30.0), softmax_options(1.0)),
    ("SOFTMAX", (-10.0, 10.0), softmax_options(0.37)),
    ("LOG_SOFTMAX", (-30.0, 30.0), None),
    ("SIN", (-130.0, 130.0), None),
    ("COS", (-130.0, 130.0), None),
]
WIDTH = 4096
FLOAT_KINDS = [kind for kind, _, _ in FLOAT_OPS]


def one_op_model(kind, options):
    b = ModelBuilder()
    shape = [16, WIDTH // 16] if kind.endswith("SOFTMAX") else [1, WIDTH]
    x = b.activation("x", shape, "float32")
    y = b.activation("y", shape, "float32")
    b.op(kind, [x], [y], options)
    return b.finish([x], [y])


def model_inputs(case_index):
    kind, (low, high), _ = FLOAT_OPS[case_index]
    values = sweep_values(WIDTH, low, high, case_index)
    if kind == "LOG":  # log-spaced: every exponent
        values = np.abs(values) * 0 + np.geomspace(low, high, WIDTH, dtype=np.float32)
    if kind in ("SIN", "COS"):
        values = trig_values(low, high, case_index)
    shape = [16, WIDTH // 16] if kind.endswith("SOFTMAX") else [1, WIDTH]
    return [values.reshape(shape)]


def trig_values(low: float, high: float, seed: int) -> np.ndarray:
    """SIN/COS inputs, both signs: the floats nearest k pi/2 and their neighbours, tiny arguments (no
    reduction), huge ones of every exponent (the 4/pi table reduction), the inputs where glibc's plain
    and FMA builds differ, special values; the rest a sweep over [low, high] (the one-step reduction)."""
    near = (np.arange(1, 257) * (np.pi / 2)).astype(np.float32)
    near = np.concatenate([np.nextafter(near, np.float32(0)), near, np.nextafter(near, np.float32(np.inf))])
    tiny = np.geomspace(1e-10, 0.8, 256, dtype=np.float32)
    huge = np.geomspace(120.0, 3.4e38, 512, dtype=np.float32)
    fma = np.array(TRIG_FMA_AND_PLAIN_DIFFER, np.uint32).view(np.float32)
    special = np.array([np.nan, np.inf, 0.0, 1e-45, 1.17549435e-38, 2.0**-12, 0.785398, 3.4028235e38], np.float32)
    signed = np.concatenate([near, tiny, huge, fma, special])
    values = np.concatenate([sweep_values(WIDTH - 2 * signed.size, low, high, seed), signed, -signed])
    assert values.size == WIDTH
    return values.astype(np.float32)


def assert_same_bits(got, want, what):
    got, want = np.asarray(got, np.float32).ravel(), np.asarray(want, np.float32).ravel()
    differ = (got.view(np.uint32) != want.view(np.uint32)) & ~(np.isnan(got) & np.isnan(want))
    assert not differ.any(), (
        f"{what}: {int(differ.sum())} of {got.size} elements differ, first at "
        f"{int(np.argmax(differ))}: {got[differ][0]!r} vs {want[differ][0]!r}"
    )


@pytest.mark.parametrize("case", range(len(FLOAT_OPS)), ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(FLOAT_OPS)])
def test_float_operator_equals_tflm_bit_for_bit(tmp_path, case):
    kind, _, options = FLOAT_OPS[case]
    model = one_op_model(kind, options)
    inputs = model_inputs(case)
    lib = compile_bytes(model, tmp_path)
    ours = HostProgram(lib, tmp_path / "build").run([inputs])[0].outputs[0]
    assert_same_bits(ours, Oracle(model).run(inputs)[0], f"{kind} on the host vs TFLM")


def transcendental_chain_model():
    """TANH, LOGISTIC and SOFTMAX one after the other (the float LSTM/GRU cell's transcendentals), and
    SIN and COS of the input."""
    b = ModelBuilder()
    x = b.activation("x", [8, 64], "float32")
    t = b.activation("t", [8, 64], "float32")
    s = b.activation("s", [8, 64], "float32")
    y = b.activation("y", [8, 64], "float32")
    sine = b.activation("sine", [8, 64], "float32")
    cosine = b.activation("cosine", [8, 64], "float32")
    b.op("TANH", [x], [t])
    b.op("LOGISTIC", [t], [s])
    b.op("SOFTMAX", [s], [y], softmax_options(3.0))
    b.op("SIN", [x], [sine])
    b.op("COS", [x], [cosine])
    return b.finish([x], [y, t, sine, cosine])


@needs_board_tools
@pytest.mark.parametrize("board", ["mps2_an386", "mps3_an547"])
def test_board_equals_host_and_tflm_bit_for_bit(tmp_path, board):
    model = transcendental_chain_model()
    inputs = [sweep_values(512, -6.0, 6.0, 5).reshape(8, 64)]
    path = tmp_path / "chain.tflite"
    path.write_bytes(model)
    host = HostProgram(compile_bytes(model, tmp_path / "host"), tmp_path / "host_build").run([inputs])[0].outputs
    _, _, run = run_on_board(path, board, tmp_path / "project", input=inputs, log=lambda _: None)
    want = Oracle(model).run(inputs)
    for k in range(4):
        assert_same_bits(host[k], want[k], f"output {k} on the host vs TFLM")
        assert_same_bits(run.outputs[k], host[k], f"output {k} on {board} vs the host")


DETECTED_BOXES = 64


def add_box_decoding(b: ModelBuilder) -> tuple[list, list]:
    """A DETECTION_POSTPROCESS keeping every box (score threshold 0, no suppression: IoU above 1
    never happens), so each box's decoded corners, two double exps each, reach the outputs."""
    from test_op_detection_postprocess import anchors_grid, options

    enc = b.activation("box_encodings", [1, DETECTED_BOXES, 4], "float32")
    scores = b.activation("class_scores", [1, DETECTED_BOXES, 2], "float32")
    anchors = b.constant("anchors", anchors_grid(DETECTED_BOXES))
    d = DETECTED_BOXES
    outs = [
        b.activation(name, shape, "float32")
        for name, shape in (("boxes", [1, d, 4]), ("classes", [1, d]), ("scores", [1, d]), ("count", [1]))
    ]
    opts = options(max_detections=d, num_classes=1, score=0.0, iou=1.0)
    b.custom_op("TFLite_Detection_PostProcess", [enc, scores, anchors], outs, opts)
    return [enc, scores], outs


def box_decoding_inputs() -> list[np.ndarray]:
    """Box size encodings over [-30, 30] (exp of [-6, 6]), distinct scores."""
    rng = np.random.default_rng(7)
    enc = rng.uniform(-30.0, 30.0, [1, DETECTED_BOXES, 4]).astype(np.float32)
    scores = rng.permutation(np.linspace(0.05, 0.95, 2 * DETECTED_BOXES, dtype=np.float32))
    return [enc, scores.reshape(1, DETECTED_BOXES, 2)]


@needs_board_tools
def test_libm_sweeps_on_board_equal_host(tmp_path):
    """EXP, LOG, SIN and COS over 4,096 values each on the M4 (software double arithmetic) equal the
    host's and TFLM's (SIN and COS: every reduction path, huge arguments, the FMA-sensitive inputs),
    and DETECTION_POSTPROCESS's boxes (the double exp) too."""
    b = ModelBuilder()
    kinds = {kind: FLOAT_KINDS.index(kind) for kind in ("EXP", "LOG", "SIN", "COS")}  # kind: its FLOAT_OPS case
    ins, outs = [], []
    for kind in kinds:
        x = b.activation(f"x_{kind.lower()}", [1, WIDTH], "float32")
        y = b.activation(kind.lower(), [1, WIDTH], "float32")
        b.op(kind, [x], [y])
        ins.append(x)
        outs.append(y)
    box_ins, box_outs = add_box_decoding(b)
    model = b.finish(ins + box_ins, outs + box_outs)
    inputs = [model_inputs(case)[0] for case in kinds.values()] + box_decoding_inputs()
    path = tmp_path / "libm.tflite"
    path.write_bytes(model)
    host = HostProgram(compile_bytes(model, tmp_path / "host"), tmp_path / "host_build").run([inputs])[0].outputs
    _, _, run = run_on_board(path, "mps2_an386", tmp_path / "project", input=inputs, log=lambda _: None)
    want = Oracle(model).run(inputs)
    assert int(np.asarray(host[-1]).ravel()[0]) == DETECTED_BOXES  # every box decoded and output
    for k, name in enumerate([*kinds, "DETECTION_POSTPROCESS boxes", "classes", "scores", "count"]):
        assert_same_bits(host[k], want[k], f"{name} on the host vs TFLM")
        assert_same_bits(run.outputs[k], host[k], f"{name} on mps2_an386 vs the host")


KERAS = Path(__file__).resolve().parent / "models" / "keras"
FLOAT_MODELS = [
    "ds_cnn_float32",
    "conv_autoencoder_float32",
    "lstm_float32",
    "gru_float32",
    "transformer_block_float32",
    "gru_unrolled_float32",
    "lstm_unrolled_float32",
    "har_cnn_float32",
    "mobilenet_v1_025_float32",
]


def keras_model(name: str) -> bytes:
    return (KERAS / f"{name}.tflite").read_bytes()


@pytest.mark.parametrize("name", FLOAT_MODELS)
def test_float_keras_model_equals_tflm_bit_for_bit(tmp_path, name):
    """Real converted float models (DS-CNN, a Conv2DTranspose autoencoder, an LSTM, a GRU as a
    WHILE loop, a transformer block, unrolled GRU/LSTM, a Conv1D HAR CNN, a MobileNetV1): every
    output element, three inputs."""
    model = keras_model(name)
    lib = compile_bytes(model, tmp_path)
    inputs = [random_inputs(lib.info.inputs, seed=s) for s in range(3)]
    oracle = Oracle(model)
    for k, (input_set, result) in enumerate(zip(inputs, HostProgram(lib, tmp_path / "build").run(inputs))):
        for j, (got, want) in enumerate(zip(result.outputs, oracle.run(input_set))):
            assert_same_bits(got, want, f"{name} input {k} output {j}")


@needs_board_tools
@pytest.mark.parametrize(
    "name,board",
    [
        ("ds_cnn_float32", "mps2_an386"),
        ("gru_float32", "mps2_an386"),
        ("conv_autoencoder_float32", "mps3_an547"),
        ("har_cnn_float32", "mps2_an386"),
        ("mobilenet_v1_025_float32", "mps3_an547"),
    ],
)
def test_float_keras_model_on_board_equals_host(tmp_path, name, board):
    model = keras_model(name)
    lib = compile_bytes(model, tmp_path / "host")
    inputs = random_inputs(lib.info.inputs, seed=1)
    host = HostProgram(lib, tmp_path / "host_build").run([inputs])[0].outputs
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(model)
    _, _, run = run_on_board(path, board, tmp_path / "project", input=inputs, log=lambda _: None)
    for k, (got, want) in enumerate(zip(run.outputs, host)):
        assert_same_bits(got, want, f"{name} output {k} on {board} vs the host")


@pytest.mark.parametrize(
    "name", ["ds_cnn_float32", "conv_autoencoder_float32", "har_cnn_float32", "mobilenet_v1_025_float32"]
)
def test_float_keras_model_every_layer_equals_tflm_bit_for_bit(tmp_path, name):
    """Every intermediate tensor, not only the outputs (MobileNet's are two softmax values), bit for bit
    TFLM's: validate's layer-by-layer comparison (host-driven) with ``bitwise``."""
    from microcompiler.api import open_model
    from microcompiler.compiler import compile_model
    from microcompiler.frontend.tflite import load_tflite
    from microcompiler.validation.layers import first_divergence
    from microcompiler.validation.reference import Reference

    path = KERAS / f"{name}.tflite"
    library = compile_model(path)
    inputs = random_inputs(library.info.inputs, seed=2)
    with open_model(library) as session, session.executor() as ex:
        result = first_divergence(
            ex, library, Reference(path.read_bytes(), 1, preserve=True), inputs, load_tflite(path), bitwise=True
        )
    assert not result["diverged"], result
    assert result["checked_tensors"] >= 4
