"""int8 elementwise functions as compile-time tables (issue 21): LOGISTIC, TANH, HARD_SWISH, ELU, ABS,
LEAKY_RELU, RELU, RELU6 and int8 QUANTIZE compute TFLM's integer result for each of the 256 inputs at
compile time (ops/fixedpoint.py, ops/lut.py), and the
``fuse_tables`` pass folds SiLU's ``x * LOGISTIC(x)`` and chains of such functions into one table.
The int8 SOFTMAX takes its exponentials from a table of the 256 differences max - x.

Each table is held against the TFLM interpreter on every int8 input, over many quantizations; the
generated code on the host (with sanitizers) and on an emulated Cortex-M4 (mps2_an386)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from activation_cases import leaky_relu_options, side_by_side_model
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from harness import assert_matches_oracle
from model_builder import ModelBuilder, mul_options, softmax_options
from model_merge import merge_models
from oracle import Oracle

from microcompiler.frontend.tflite import parse_tflite
from microcompiler.ops import kernel_for
from microcompiler.ops.lut import apply_int8_table
from microcompiler.passes import fuse_tables
from microcompiler.passes.fuse_tables import SCALE_CHANNELS_INT8, TABLE_INT8

ALL_INT8 = np.arange(-128, 128, dtype=np.int8)
# (input scale, input zero point): tiny and large scales (saturating and nearly linear ranges), every
# zero point extreme, and odd values.
INPUT_QUANTS = [
    (0.001, 0),
    (0.0078125, -128),
    (0.02, 5),
    (0.0625, 127),
    (0.1, -20),
    (0.173, 77),
    (0.5, 0),
    (1.0, -128),
    (3.7, 10),
    (0.0301, -3),
]
OUTPUT_SCALES = (0.004, 0.02, 0.05, 0.11, 0.3, 0.0301, 1.0, 0.0625, 2.0, 0.001)
OUTPUT_ZERO_POINTS = (-128, -50, 0, 13, 127, -3, 10, -128, 60, 0)
FIXED_OUTPUT = {"LOGISTIC": (1 / 256, -128), "TANH": (1 / 128, 0)}  # what TFLM requires
# Every int8 -> int8 elementwise operator with a compile-time table, with its options per case.
TABLE_KINDS = {
    "LOGISTIC": None,
    "TANH": None,
    "HARD_SWISH": None,
    "ELU": None,
    "ABS": None,
    "RELU": None,
    "RELU6": None,
    "RELU_N1_TO_1": None,
    "QUANTIZE": None,
    "LEAKY_RELU": lambda k: leaky_relu_options((0.2, -0.5, 1.7, 0.01, 3.0, -0.3)[k % 6]),
}


def cases(kind):
    """(shape, dtype, input quantization, output quantization[, options]) for side_by_side_model."""
    out = []
    for k, in_q in enumerate(INPUT_QUANTS):
        out_q = FIXED_OUTPUT.get(kind, (OUTPUT_SCALES[k], OUTPUT_ZERO_POINTS[k]))
        if kind == "HARD_SWISH" and in_q[0] / out_q[0] > 128:
            out_q = (in_q[0] / 100, out_q[1])  # TFLM refuses input scales over 128 output scales
        if kind == "LEAKY_RELU" and in_q[0] / out_q[0] > 2**20:
            out_q = (in_q[0] / 1000, out_q[1])
        case = ([256], "int8", in_q, out_q)
        out.append(case + (TABLE_KINDS[kind](k),) if TABLE_KINDS[kind] else case)
    return out


# TFLM does not register RELU_N1_TO_1: test_op_activation.py holds it against TFLite's arithmetic.
IN_TFLM = sorted(k for k in TABLE_KINDS if k != "RELU_N1_TO_1")


@pytest.mark.parametrize("kind", IN_TFLM)
def test_compile_time_table_equals_tflm_on_every_input(kind):
    """Each operator's table (OpKernel.int8_table), without any C: TFLM's output for all 256
    inputs, 10 quantizations."""
    model = side_by_side_model(kind, cases(kind))
    graph = parse_tflite(model)
    outputs = Oracle(model).run([ALL_INT8] * len(graph.operators))
    for op, want in zip(graph.operators, outputs):
        got = apply_int8_table(kernel_for(op).int8_table(op, graph), ALL_INT8)
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        np.testing.assert_array_equal(got, want.ravel(), err_msg=f"{kind} in {x.quant.single()} out {y.quant.single()}")


def test_leaky_relu_negative_alpha_tie():
    """LEAKY_RELU with a negative alpha whose multiplier is an exact power of two (-0.25): the
    double-rounded product of an odd input lands on a tie. TFLM scales by the multiplier's
    magnitude and negates afterwards (-125 * -0.25 gives 31, where -125 times the negative
    multiplier would round the tie up to 32)."""
    model = side_by_side_model("LEAKY_RELU", [([256], "int8", (0.5, 0), (1.0, 10), leaky_relu_options(-0.5))])
    graph = parse_tflite(model)
    op = graph.operators[0]
    want = Oracle(model).run([ALL_INT8])[0].ravel()
    np.testing.assert_array_equal(apply_int8_table(kernel_for(op).int8_table(op, graph), ALL_INT8), want)


def silu_model(in_q=(0.05, -10), sig_q=(1 / 256, -128), out_q=(0.03, -100), activation="NONE", extra=True):
    """y = x * LOGISTIC(x) (SiLU as the converter writes Keras swish); with ``extra`` also
    TANH(LOGISTIC(x2)) (a chain) and a squeeze-and-excite MUL(x3, LOGISTIC(s)) with s broadcast."""
    b = ModelBuilder()
    x = b.activation("x", [1, 16, 16], "int8", *in_q)
    s = b.activation("sigmoid", [1, 16, 16], "int8", *sig_q)
    y = b.activation("swish", [1, 16, 16], "int8", *out_q)
    b.op("LOGISTIC", [x], [s])
    b.op("MUL", [s, x], [y], mul_options(activation))
    inputs, outputs = [x], [y]
    if extra:
        x2 = b.activation("x2", [256], "int8", 0.07, 3)
        s2 = b.activation("s2", [256], "int8", 1 / 256, -128)
        t2 = b.activation("t2", [256], "int8", 1 / 128, 0)
        b.op("LOGISTIC", [x2], [s2])
        b.op("TANH", [s2], [t2])
        x3 = b.activation("x3", [1, 4, 4, 8], "int8", 0.04, 2)
        s3 = b.activation("s3", [1, 1, 1, 8], "int8", 0.1, 0)
        g3 = b.activation("g3", [1, 1, 1, 8], "int8", 1 / 256, -128)
        y3 = b.activation("y3", [1, 4, 4, 8], "int8", 0.02, -5)
        b.op("LOGISTIC", [s3], [g3])
        b.op("MUL", [x3, g3], [y3])
        inputs += [x2, x3, s3]
        outputs += [t2, y3]
    return b.finish(inputs, outputs)


def silu_inputs(n=3, seed=0):
    rng = np.random.default_rng(seed)
    return [
        [
            rng.permutation(np.resize(ALL_INT8, 256)).reshape(1, 16, 16).astype(np.int8),
            rng.permutation(ALL_INT8).astype(np.int8),
            rng.integers(-128, 128, (1, 4, 4, 8), dtype=np.int8),
            rng.integers(-128, 128, (1, 1, 1, 8), dtype=np.int8),
        ]
        for _ in range(n)
    ]


def test_fuse_tables_pass_alone():
    graph = parse_tflite(silu_model())
    fused = fuse_tables(graph)
    assert [op.kind for op in graph.operators] == ["LOGISTIC", "MUL", "LOGISTIC", "TANH", "LOGISTIC", "MUL"]
    assert [op.kind for op in fused.operators] == [TABLE_INT8, TABLE_INT8, SCALE_CHANNELS_INT8]
    assert [op.options["functions"] for op in fused.operators[:2]] == ["x * logistic(x)", "tanh(logistic(x))"]
    assert [op.kind for op in graph.operators][:2] == ["LOGISTIC", "MUL"]  # the input graph is untouched


def test_fuse_tables_keeps_an_intermediate_that_is_read_elsewhere():
    b = ModelBuilder()
    x = b.activation("x", [8], "int8", 0.05, 0)
    s = b.activation("s", [8], "int8", 1 / 256, -128)
    y = b.activation("y", [8], "int8", 0.03, 0)
    b.op("LOGISTIC", [x], [s])
    b.op("MUL", [x, s], [y])
    graph = parse_tflite(b.finish([x], [y, s]))  # the sigmoid is a model output too
    assert [op.kind for op in fuse_tables(graph).operators] == ["LOGISTIC", "MUL"]


@pytest.mark.parametrize(
    "in_q,out_q,activation",
    [((0.05, -10), (0.03, -100), "NONE"), ((0.2, 60), (0.01, 0), "RELU6"), ((0.004, -128), (0.5, 127), "NONE")],
)
def test_fused_silu_matches_tflm_on_every_input(tmp_path, in_q, out_q, activation):
    lib = assert_matches_oracle(
        silu_model(in_q, out_q=out_q, activation=activation), tmp_path, sanitize=True, inputs=silu_inputs()
    )
    ops_c = next(text for path, text in lib.files.items() if path.endswith("_ops.c"))
    assert len(re.findall(r"static const int8_t \w+_lut\[256\]", ops_c)) == 2  # swish, tanh(logistic)
    assert len(re.findall(r"static const int16_t \w+_gate\[256\]", ops_c)) == 1  # the S-E gate
    assert "mc_fp_logistic" not in ops_c and "mc_fp_tanh" not in ops_c  # no fixed-point math left at run time


# (input scale, beta, output type): the exp table's entries from tiny to steep slopes, and scales where
# TFLM's diff_min cut-off drops part of the 256 differences.
SOFTMAX_CASES = [
    (0.0039, 1.0, "int8"),
    (0.05, 1.0, "int8"),
    (0.1, 0.5, "int8"),
    (0.5, 2.0, "int8"),
    (1.0, 1.0, "int8"),
    (0.02, 1.0, "int16"),
    (0.3, 1.0, "int16"),
]


def softmax_model(cases, shape=(4, 256)):
    b = ModelBuilder()
    inputs, outputs = [], []
    for k, (scale, beta, out_dtype) in enumerate(cases):
        x = b.activation(f"x{k}", list(shape), "int8", scale, 7 * k - 10)
        y = b.activation(
            f"y{k}", list(shape), out_dtype, *((1 / 256, -128) if out_dtype == "int8" else (1 / 65536, -32768))
        )
        b.op("SOFTMAX", [x], [y], softmax_options(beta))
        inputs.append(x)
        outputs.append(y)
    return b.finish(inputs, outputs)


def softmax_inputs(n_cases, n_sets=2, seed=0):
    """Rows holding every int8 value (every difference max - x from 0 to 255) and rows of nearby
    values (outputs well above the minimum)."""
    rng = np.random.default_rng(seed)
    sets = []
    for _ in range(n_sets):
        per_case = []
        for _ in range(n_cases):
            narrow = rng.integers(-20, 20) + rng.integers(-6, 7, (2, 256))
            per_case.append(np.concatenate([rng.permutation(ALL_INT8)[None], ALL_INT8[None], narrow]).astype(np.int8))
        sets.append(per_case)
    return sets


def test_softmax_exp_table_matches_tflm_on_every_difference(tmp_path):
    lib = assert_matches_oracle(
        softmax_model(SOFTMAX_CASES), tmp_path, sanitize=True, inputs=softmax_inputs(len(SOFTMAX_CASES))
    )
    ops_c = next(text for path, text in lib.files.items() if path.endswith("_ops.c"))
    assert len(re.findall(r"static const int32_t \w+_exp_table\[256\]", ops_c)) == len(SOFTMAX_CASES)
    assert "mc_fp_exp_on_negative_values" not in ops_c  # the exponentials are all in the tables


@needs_board_tools
def test_tables_on_board_match_tflm(tmp_path):
    """The tables of every kind and the fused SiLU on the emulated Cortex-M4, every int8 input: one
    merged model, one run."""
    parts = [
        (side_by_side_model(kind, cases(kind)[k : k + 2]), [np.roll(ALL_INT8, j) for j in range(2)])
        for k, kind in enumerate(IN_TFLM)
    ]
    parts.append((silu_model(), silu_inputs(1)[0]))
    parts.append((softmax_model(SOFTMAX_CASES[2:5]), softmax_inputs(3, 1)[0]))
    model = merge_models([m for m, _ in parts])
    assert_matches_oracle_on_board(model, tmp_path, inputs=[x for _, xs in parts for x in xs])
