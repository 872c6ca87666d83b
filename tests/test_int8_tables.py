"""int8 elementwise functions as compile-time tables (issue 21): LOGISTIC, TANH and HARD_SWISH compute
TFLM's integer result for each of the 256 inputs at compile time (ops/fixedpoint.py), and the
``fuse_tables`` pass folds SiLU's ``x * LOGISTIC(x)`` and chains of such functions into one table.

Each table is held against the TFLM interpreter on every int8 input, over many quantizations; the
generated code on the host (with sanitizers) and on an emulated Cortex-M4 (mps2_an386)."""
from __future__ import annotations

import re

import numpy as np
import pytest

from activation_cases import side_by_side_model
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from harness import assert_matches_oracle
from model_builder import ModelBuilder, mul_options
from model_merge import merge_models
from oracle import Oracle

from microcompiler.frontend.tflite import parse_tflite
from microcompiler.ops.hard_swish import hard_swish_int8_table
from microcompiler.ops.lut import apply_int8_table
from microcompiler.ops.softmax_logistic import logistic_int8_table
from microcompiler.ops.tanh import tanh_int8_table
from microcompiler.passes import fuse_tables
from microcompiler.passes.fuse_tables import TABLE_INT8

ALL_INT8 = np.arange(-128, 128, dtype=np.int8)
# (input scale, input zero point): tiny and large scales (saturating and nearly linear ranges), every
# zero point extreme, and odd values.
INPUT_QUANTS = [(0.001, 0), (0.0078125, -128), (0.02, 5), (0.0625, 127), (0.1, -20), (0.173, 77), (0.5, 0),
                (1.0, -128), (3.7, 10), (0.0301, -3)]
OUTPUT_QUANTS = {"LOGISTIC": lambda k: (1 / 256, -128), "TANH": lambda k: (1 / 128, 0),
                 "HARD_SWISH": lambda k: ((0.004, 0.02, 0.05, 0.11, 0.3)[k % 5], (-128, -50, 0, 13, 127)[k % 5])}
TABLES = {"LOGISTIC": lambda iq, oq: logistic_int8_table(*iq),
          "TANH": lambda iq, oq: tanh_int8_table(*iq),
          "HARD_SWISH": hard_swish_int8_table}


def cases(kind):
    out = []
    for k, in_q in enumerate(INPUT_QUANTS):
        out_q = OUTPUT_QUANTS[kind](k)
        if kind == "HARD_SWISH" and in_q[0] / out_q[0] > 128:
            out_q = (in_q[0] / 100, out_q[1])  # TFLM refuses input scales over 128 output scales
        out.append(([256], "int8", in_q, out_q))
    return out


@pytest.mark.parametrize("kind", sorted(TABLES))
def test_compile_time_table_equals_tflm_on_every_input(kind):
    """The Python table, without any C: TFLM's output for all 256 inputs, 10 quantizations."""
    kind_cases = cases(kind)
    outputs = Oracle(side_by_side_model(kind, kind_cases)).run([ALL_INT8] * len(kind_cases))
    for (_, _, in_q, out_q), want in zip(kind_cases, outputs):
        got = apply_int8_table(TABLES[kind](in_q, out_q), ALL_INT8)
        np.testing.assert_array_equal(got, want.ravel(), err_msg=f"{kind} in {in_q} out {out_q}")


def silu_model(in_q=(0.05, -10), sig_q=(1 / 256, -128), out_q=(0.03, -100), activation="NONE", extra=True):
    """y = x * LOGISTIC(x) (SiLU as the converter writes Keras swish); with ``extra`` also
    TANH(LOGISTIC(x2)) (a chain) and a squeeze-and-excite MUL(x3, LOGISTIC(s)) with s broadcast (not fused)."""
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
    return [[rng.permutation(np.resize(ALL_INT8, 256)).reshape(1, 16, 16).astype(np.int8),
             rng.permutation(ALL_INT8).astype(np.int8),
             rng.integers(-128, 128, (1, 4, 4, 8), dtype=np.int8),
             rng.integers(-128, 128, (1, 1, 1, 8), dtype=np.int8)] for _ in range(n)]


def test_fuse_tables_pass_alone():
    graph = parse_tflite(silu_model())
    fused = fuse_tables(graph)
    assert [op.kind for op in graph.operators] == ["LOGISTIC", "MUL", "LOGISTIC", "TANH", "LOGISTIC", "MUL"]
    assert [op.kind for op in fused.operators] == [TABLE_INT8, TABLE_INT8, "LOGISTIC", "MUL"]  # S-E stays
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


@pytest.mark.parametrize("in_q,out_q,activation", [((0.05, -10), (0.03, -100), "NONE"),
                                                   ((0.2, 60), (0.01, 0), "RELU6"),
                                                   ((0.004, -128), (0.5, 127), "NONE")])
def test_fused_silu_matches_tflm_on_every_input(tmp_path, in_q, out_q, activation):
    lib = assert_matches_oracle(silu_model(in_q, out_q=out_q, activation=activation), tmp_path, sanitize=True,
                                inputs=silu_inputs())
    ops_c = next(text for path, text in lib.files.items() if path.endswith("_ops.c"))
    assert len(re.findall(r"static const int8_t \w+_lut\[256\]", ops_c)) == 3  # swish, tanh(logistic), S-E gate
    assert "mc_fp_logistic" not in ops_c and "mc_fp_tanh" not in ops_c  # no fixed-point math left at run time


@needs_board_tools
def test_tables_on_board_match_tflm(tmp_path):
    """The tables of every kind and the fused SiLU on the emulated Cortex-M4, every int8 input: one
    merged model, one run."""
    parts = [(side_by_side_model(kind, cases(kind)[k:k + 3]), [np.roll(ALL_INT8, j) for j in range(3)])
             for k, kind in enumerate(sorted(TABLES))]
    parts.append((silu_model(), silu_inputs(1)[0]))
    model = merge_models([m for m, _ in parts])
    assert_matches_oracle_on_board(model, tmp_path, inputs=[x for _, xs in parts for x in xs])
