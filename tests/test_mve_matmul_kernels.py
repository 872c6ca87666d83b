"""The Helium (MVE) versions of issue 21's fast kernels against the TFLM oracle, bit for bit:
BATCH_MATMUL "mve-dot" (ops/fast/batch_matmul_mve.py), TRANSPOSE_CONV "mve-phases"
(ops/fast/transpose_conv_mve.py) and the LSTM gate matmuls "mve-rows4" (ops/fast/lstm_gates.py).

The sweeps are those of the DSP kernels (test_fast_matmul_kernels.py, test_lstm.py) plus the cases
that hit the Helium kernels' own branches: rows % 2 (the 2-row block), columns % 4, depth % 16 (rows
read in place or gathered and zero-padded), one and several chunks of 16, zero points 0 (no start
values, no row term). On the host (features {"dsp", "mve"}) they run as the portable C of
kernel_mve.h and kernel_mve_matmul.h, also under ASan + UBSan; on QEMU mps3_an547 (Cortex-M55) as
Helium instructions.
"""

from __future__ import annotations

import numpy as np
import pytest
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from harness import assert_matches_oracle, compile_bytes
from lstm_models import lstm_int8
from model_merge import assert_cases_match_oracle, merge_models
from oracle import Oracle
from test_fast_matmul_kernels import MATMUL_CASES, TRANSPOSE_CASES
from test_op_batch_matmul import batch_matmul_model
from test_op_transpose_conv import transpose_conv_model
from test_state import assert_steps_match, check_sequence, sequence

MVE = frozenset({"dsp", "mve"})

MATMUL_MVE_CASES = {
    **MATMUL_CASES,
    "in_place_k32_m5_n6": ([2, 5, 32], [2, 32, 6], {}),
    "three_chunks_k40_adj_y": ([1, 4, 40], [1, 9, 40], dict(adj_y=True)),
    "const_k16_m1_n4": ([1, 16], [16, 4], dict(constant_rhs=True)),
}
ZERO_POINTS_0 = dict(lhs=(0.05, 0), rhs=(0.04, 0), out=(0.3, 0))


def _matmul(name, quant=None):
    lhs, rhs, options = MATMUL_MVE_CASES[name]
    return batch_matmul_model("int8", lhs, rhs, quant=quant, seed=len(name), **options)


def _matmul_cases():
    cases = {n: _matmul(n) for n in MATMUL_MVE_CASES}
    cases["zero_points_0"] = _matmul("attention_scores_2x16x16_adj_y", ZERO_POINTS_0)
    cases["zero_points_0_const"] = _matmul("const_n6_k10_adj_xy", ZERO_POINTS_0)
    return cases


def test_batch_matmul_mve_match_tflm(tmp_path):
    lib = assert_cases_match_oracle(_matmul_cases(), tmp_path, n_inputs=3, features=MVE)
    kernels = [o["kernel"] for o in lib.metadata["operators"]]
    assert {(k["variant"], k["isa"], k["requant"]) for k in kernels} == {("mve-dot", "mve", "vqrdmulh")}


def test_batch_matmul_mve_extremes(tmp_path):
    """Zero points and inputs at the ends of the range (the largest |acc| and column/row terms), and a
    multiplier >= 1/2 (the general requantization)."""
    extreme = dict(lhs=(0.1, -128), rhs=(0.07, 127), out=(1.5, -128))
    model = batch_matmul_model("int8", [2, 3, 40], [2, 40, 7], quant=extreme)
    inputs = [
        [np.full((2, 3, 40), a, np.int8), np.full((2, 40, 7), b, np.int8)]
        for a, b in ((-128, 127), (127, -128), (127, 127), (-128, -128))
    ]
    lib = assert_matches_oracle(model, tmp_path / "e", inputs=inputs, features=MVE)
    assert lib.metadata["operators"][0]["kernel"]["variant"] == "mve-dot"
    big = dict(lhs=(0.5, 3), rhs=(0.5, -1), out=(0.1, 2))
    lib = assert_matches_oracle(
        batch_matmul_model("int8", [2, 3, 6], [2, 6, 5], quant=big), tmp_path / "r", n_inputs=2, features=MVE
    )
    assert lib.metadata["operators"][0]["kernel"]["variant"] == "mve-dot"


def test_batch_matmul_mve_sanitized(tmp_path):
    """ASan + UBSan over the packing gathers, the gathered rows and the column tails."""
    names = ("n9_k7_adj_x", "n3_k3_bcast_mixed_adj_y", "n13_k1", "const_per_batch_bcast_n8_k12", "in_place_k32_m5_n6")
    assert_cases_match_oracle({n: _matmul(n) for n in names}, tmp_path, n_inputs=2, sanitize=True, features=MVE)


@needs_board_tools
def test_batch_matmul_mve_on_m55(tmp_path):
    """The sweep as one model on the emulated Cortex-M55 (Helium), against TFLM."""
    model = merge_models(list(_matmul_cases().values()))
    assert_matches_oracle_on_board(model, tmp_path, board="mps3_an547")


# ---- TRANSPOSE_CONV mve-phases ------------------------------------------------------------------

TRANSPOSE_MVE_CASES = {
    **{n: c for n, c in TRANSPOSE_CASES.items() if n != "c2_k1x2_s3_oc1"},  # kernel < stride: "phases"
    "c16_k3_s2_pad_odd_w_oc5": dict(hwc=(3, 4, 16), out_c=5, out_hw=(6, 7), input_zp=-128, activation="RELU"),
    "c32_k4_s2_oc8": dict(hwc=(3, 3, 32), kernel=(4, 4), out_c=8, per_channel=False),
    "c1_k3_s1_oc2_wide": dict(hwc=(2, 9, 1), kernel=(3, 3), stride=(1, 1), out_c=2, input_zp=5),
    # phases of one kernel row whose taps are whole chunks: read in place where inside the input
    "c32_k2_s2_in_place_oc6": dict(hwc=(3, 4, 32), kernel=(2, 2), out_c=6, padding="VALID", input_zp=-128),
    "c8_k3_s2_some_in_place_oc4": dict(hwc=(4, 5, 8), out_c=4, input_zp=7, activation="RELU"),
}


def test_transpose_conv_mve_match_tflm(tmp_path):
    cases = {n: transpose_conv_model(**c) for n, c in TRANSPOSE_MVE_CASES.items()}
    cases["kernel_below_stride"] = transpose_conv_model(**TRANSPOSE_CASES["c2_k1x2_s3_oc1"])
    lib = assert_cases_match_oracle(cases, tmp_path, n_inputs=3, features=MVE)
    kernels = [o["kernel"] for o in lib.metadata["operators"]]
    assert [k["variant"] for k in kernels] == ["mve-phases"] * len(TRANSPOSE_MVE_CASES) + ["phases"]


def test_transpose_conv_mve_extremes_and_large_multiplier(tmp_path):
    """The largest accumulators (extreme inputs and weights) and a multiplier >= 1/2 (the general
    requantization: VSHL before VQRDMULH)."""
    model = transpose_conv_model(
        hwc=(4, 4, 16), out_c=6, kernel=(4, 4), input_zp=-128, bias=None, weights=np.full((6, 4, 4, 16), -127, np.int8)
    )
    inputs = [[np.full((1, 4, 4, 16), v, np.int8)] for v in (-128, 127, 0)]
    lib = assert_matches_oracle(model, tmp_path / "e", inputs=inputs, features=MVE)
    assert lib.metadata["operators"][0]["kernel"]["variant"] == "mve-phases"
    lib = assert_matches_oracle(
        transpose_conv_model(hwc=(3, 3, 4), out_c=5, y_scale=1e-6), tmp_path / "r", n_inputs=2, features=MVE
    )
    assert lib.metadata["operators"][0]["kernel"]["variant"] == "mve-phases"


def test_transpose_conv_mve_sanitized(tmp_path):
    """ASan + UBSan over the gathers at every border, the lone last pixels and the channel tails."""
    names = (
        "c8_k2_s2_valid_oc5",
        "c5_k4x3_s3x2_valid_nobias_oc6",
        "c7_k5_s2_odd_out_oc3",
        "c16_k3_s2_pad_odd_w_oc5",
        "c8_k3_s2_some_in_place_oc4",
    )
    cases = {n: transpose_conv_model(**TRANSPOSE_MVE_CASES[n]) for n in names}
    assert_cases_match_oracle(cases, tmp_path, n_inputs=2, sanitize=True, features=MVE)


@needs_board_tools
def test_transpose_conv_mve_on_m55(tmp_path):
    model = merge_models([transpose_conv_model(**c) for c in TRANSPOSE_MVE_CASES.values()])
    assert_matches_oracle_on_board(model, tmp_path, board="mps3_an547")


# ---- LSTM gate matmuls mve-rows4 -----------------------------------------------------------------

LSTM_MVE_MODELS = {
    "single": lambda: lstm_int8(),
    "two-layer-batch2": lambda: lstm_int8(layers=2, n_state=8, n_input=4, batch=2),
    "one-unit-one-input": lambda: lstm_int8(n_input=1, n_state=1),
    "tails": lambda: lstm_int8(n_input=13, n_state=5),
    "in-place-16": lambda: lstm_int8(n_input=16, n_state=16),
    "chunks-40-in-place-input": lambda: lstm_int8(n_input=32, n_state=20),
}


@pytest.mark.parametrize("name", list(LSTM_MVE_MODELS))
def test_lstm_mve_sequence(tmp_path, name):
    """Sequences of inferences (state across them, then reset) under ASan/UBSan, step by step against
    TFLM: rows read in place and zero-padded copies, one and several chunks of 16."""
    library = check_sequence(LSTM_MVE_MODELS[name](), tmp_path, executors=("aot",), sanitize=True, features=MVE)
    kernels = [op["kernel"] for op in library.metadata["operators"] if op["kind"] == "UNIDIRECTIONAL_SEQUENCE_LSTM"]
    assert kernels and all(k["variant"] == "mve-rows4" and k["isa"] == "mve" for k in kernels)


@needs_board_tools
@pytest.mark.parametrize(
    "name",
    ["two-layer-batch2", pytest.param("tails", marks=pytest.mark.long), "chunks-40-in-place-input"],
)
def test_lstm_mve_sequence_on_m55(tmp_path, name):
    """The firmware runs every step's input on the emulated Cortex-M55 (Helium) and reports each."""
    from microcompiler.boards import load_board
    from microcompiler.project import run_on_board

    model = LSTM_MVE_MODELS[name]()
    library = compile_bytes(model, tmp_path, features=frozenset(load_board("mps3_an547").cpu.features))
    assert {op["kernel"]["variant"] for op in library.metadata["operators"]} == {"mve-rows4"}
    seq = sequence(library.info)
    _, _, run = run_on_board(library, "mps3_an547", tmp_path / "project", input_steps=seq, log=lambda _: None)
    assert_steps_match(run.step_outputs, Oracle(model).run_sequence(seq), "mps3_an547")
