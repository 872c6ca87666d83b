"""The fast kernels of issue 21 against the TFLM oracle, bit for bit: TRANSPOSE_CONV "phases"
(ops/fast/transpose_conv_phases.py), BATCH_MATMUL "cols4" (ops/fast/batch_matmul_cols4.py).

Host sweeps (portable C of the DSP instructions, and the same with features={"dsp"}) pick shapes
that hit every branch: output channels % 4 (the 4-channel dot product and the channels left over),
taps % 4 (the zero weights after a phase's taps), phases read in place (one run of whole groups of
4) and gathered, taps outside the input on every side (SAME and VALID, kernels larger and smaller
than the stride, phases with no taps at all), stride 1, batch 2, per-tensor and per-channel weights,
the reference requantization fallback and extreme inputs; ASan + UBSan over the borders. On QEMU the
same cases run merged into one model on the Cortex-M4 (DSP inline assembly), the Cortex-M55 and
the Cortex-M3 (portable C).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from harness import assert_matches_oracle
from model_merge import assert_cases_match_oracle, merge_models
from test_op_batch_matmul import batch_matmul_model
from test_op_transpose_conv import transpose_conv_model

DSP = frozenset({"dsp"})

TRANSPOSE_CASES = {
    # autoencoder / U-Net shapes: 3x3 and 2x2 stride 2 (2x2: every phase one tap, read in place)
    "c4_k3_s2_oc4": dict(hwc=(5, 4, 4), out_c=4, input_zp=-128, activation="RELU"),
    "c8_k2_s2_valid_oc5": dict(hwc=(3, 4, 8), kernel=(2, 2), padding="VALID", out_c=5, input_zp=17),
    "c3_k3_s2_oc7_relu6": dict(hwc=(4, 3, 3), out_c=7, activation="RELU6", output_zp=-100),
    "c5_k4x3_s3x2_valid_nobias_oc6": dict(
        hwc=(3, 4, 5), kernel=(4, 3), stride=(3, 2), padding="VALID", bias=None, out_c=6
    ),
    # stride larger than the kernel: phases without taps (the output is the bias)
    "c2_k1x2_s3_oc1": dict(hwc=(2, 3, 2), kernel=(1, 2), stride=(3, 3), out_c=1, input_zp=90),
    "c6_k5_s1_same_pt_batch2_oc9": dict(
        hwc=(4, 5, 6), kernel=(5, 5), stride=(1, 1), per_channel=False, batches=2, out_c=9
    ),
    "c7_k5_s2_odd_out_oc3": dict(hwc=(3, 3, 7), kernel=(5, 5), out_c=3, out_hw=(5, 7), input_zp=127),
    "c16_k3_s2_oc12": dict(hwc=(3, 3, 16), out_c=12, activation="RELU_N1_TO_1"),
}


def kernel_of(lib, i=0):
    return lib.metadata["operators"][i]["kernel"]


@pytest.mark.parametrize("features", [frozenset(), DSP], ids=["c", "dsp"])
def test_transpose_conv_phases_match_tflm(tmp_path, features):
    lib = assert_cases_match_oracle(
        {n: transpose_conv_model(**c) for n, c in TRANSPOSE_CASES.items()}, tmp_path, n_inputs=3, features=features
    )
    kernels = [o["kernel"] for o in lib.metadata["operators"]]
    assert {k["variant"] for k in kernels} == {"phases"}
    assert {k["isa"] for k in kernels} == {"dsp" if features else "c"}
    assert {k["requant"] for k in kernels} == {"smmlar"}


def test_transpose_conv_phases_skip_the_stuffed_zeros(tmp_path):
    """A 3x3 stride-2 layer: each output pixel's dot product covers only its phase's taps (4, 2, 2
    or 1 of the 9), the weights hold each tap once, and no phase reads a stuffed input."""
    from harness import compile_bytes

    lib = compile_bytes(transpose_conv_model(hwc=(4, 4, 8), out_c=8), tmp_path, features=DSP)
    src = lib.files["src/model_ops.c"]
    assert "static const int32_t model_y_weights[288]" in src  # 8 channels x 9 taps x 8 inputs / 2 per word
    assert "model_y_taps_h[rh]" in src and "model_y_taps_w[rw]" in src


def test_transpose_conv_phases_reference_requantization(tmp_path):
    """A multiplier >= 1/2 is outside mc_requant_fast: the kernel falls back to TFLM's and stays exact."""
    lib = assert_matches_oracle(
        transpose_conv_model(hwc=(3, 3, 4), out_c=5, y_scale=1e-6), tmp_path, n_inputs=2, features=DSP
    )
    assert kernel_of(lib)["variant"] == "phases" and kernel_of(lib)["requant"] == "reference"


def test_transpose_conv_phases_extreme_inputs(tmp_path):
    """All-minimum and all-maximum inputs with the largest weights: the largest accumulators."""
    model = transpose_conv_model(
        hwc=(4, 4, 16), out_c=6, kernel=(4, 4), input_zp=-128, bias=None, weights=np.full((6, 4, 4, 16), -127, np.int8)
    )
    inputs = [[np.full((1, 4, 4, 16), v, np.int8)] for v in (-128, 127, 0)]
    lib = assert_matches_oracle(model, tmp_path, inputs=inputs, features=DSP)
    assert kernel_of(lib)["variant"] == "phases"


def test_transpose_conv_phases_sanitized(tmp_path):
    """ASan + UBSan over the gathers at every border, the in-place reads and the channel tails."""
    cases = {
        n: transpose_conv_model(**TRANSPOSE_CASES[n])
        for n in ("c8_k2_s2_valid_oc5", "c5_k4x3_s3x2_valid_nobias_oc6", "c2_k1x2_s3_oc1", "c7_k5_s2_odd_out_oc3")
    }
    assert_cases_match_oracle(cases, tmp_path, n_inputs=2, sanitize=True, features=DSP)


@needs_board_tools
@pytest.mark.parametrize("board", ["mps2_an386", "mps3_an547", "mps2_an385"])
def test_transpose_conv_phases_on_boards(tmp_path, board):
    """The sweep as one model on the emulated Cortex-M4 (SMLAD inline assembly), Cortex-M55 and
    Cortex-M3 (portable C), against TFLM."""
    model = merge_models([transpose_conv_model(**c) for c in TRANSPOSE_CASES.values()])
    assert_matches_oracle_on_board(model, tmp_path, board=board)


# ---- BATCH_MATMUL cols4 -----------------------------------------------------------------------

# (lhs shape, rhs shape, options): columns % 4 and depth % 4 from 0 to 3, adj_x / adj_y, an rhs
# shared by every batch (packed once), broadcasts that mix the sides' strides, constant rhs (packed
# at compile time, one matrix or one per batch through a table)
MATMUL_CASES = {
    "attention_scores_2x16x16_adj_y": ([2, 16, 16], [2, 16, 16], dict(adj_y=True)),
    "attention_context_2x16x16": ([2, 16, 16], [2, 16, 16], {}),
    "n9_k7_adj_x": ([3, 7, 5], [3, 7, 9], dict(adj_x=True)),
    "n2_k5_shared_rhs": ([4, 3, 5], [5, 2], {}),
    "n3_k3_bcast_mixed_adj_y": ([2, 1, 3, 3], [1, 3, 3, 3], dict(adj_y=True)),
    "n13_k1": ([2, 4, 1], [2, 1, 13], {}),
    "const_n6_k10_adj_xy": ([2, 10, 3], [6, 10], dict(adj_x=True, adj_y=True, constant_rhs=True)),
    "const_per_batch_bcast_n8_k12": ([2, 1, 5, 12], [1, 3, 12, 8], dict(constant_rhs=True)),
}


def _matmul(name, quant=None):
    lhs, rhs, options = MATMUL_CASES[name]
    return batch_matmul_model("int8", lhs, rhs, quant=quant, seed=len(name), **options)


@pytest.mark.parametrize("features", [frozenset(), DSP], ids=["c", "dsp"])
def test_batch_matmul_cols4_match_tflm(tmp_path, features):
    lib = assert_cases_match_oracle({n: _matmul(n) for n in MATMUL_CASES}, tmp_path, n_inputs=3, features=features)
    kernels = [o["kernel"] for o in lib.metadata["operators"]]
    assert {k["variant"] for k in kernels} == {"cols4"}
    assert {k["isa"] for k in kernels} == {"dsp" if features else "c"}
    assert [k["rhs"] for k in kernels] == ["flash" if "const" in n else "scratch" for n in MATMUL_CASES]


def test_batch_matmul_cols4_extremes_and_reference_requantization(tmp_path):
    """Zero points at the ends of the range (the largest |acc|), inputs at the ends of the range, and a
    multiplier >= 1/2 (TFLM's requantization instead of SMMLAR)."""
    extreme = dict(lhs=(0.1, -128), rhs=(0.07, 127), out=(1.5, -128))
    model = batch_matmul_model("int8", [2, 3, 40], [2, 40, 7], quant=extreme)
    inputs = [
        [np.full((2, 3, 40), a, np.int8), np.full((2, 40, 7), b, np.int8)]
        for a, b in ((-128, 127), (127, -128), (127, 127), (-128, -128))
    ]
    lib = assert_matches_oracle(model, tmp_path / "e", inputs=inputs, features=DSP)
    assert kernel_of(lib)["variant"] == "cols4" and kernel_of(lib)["requant"] == "smmlar"
    big = dict(lhs=(0.5, 3), rhs=(0.5, -1), out=(0.1, 2))
    lib = assert_matches_oracle(
        batch_matmul_model("int8", [2, 3, 6], [2, 6, 5], quant=big), tmp_path / "r", n_inputs=2, features=DSP
    )
    assert kernel_of(lib)["variant"] == "cols4" and kernel_of(lib)["requant"] == "reference"


def test_batch_matmul_cols4_sanitized(tmp_path):
    """ASan + UBSan over the packing, the gathered rows and the column tails."""
    cases = {
        n: _matmul(n) for n in ("n9_k7_adj_x", "n3_k3_bcast_mixed_adj_y", "n13_k1", "const_per_batch_bcast_n8_k12")
    }
    assert_cases_match_oracle(cases, tmp_path, n_inputs=2, sanitize=True, features=DSP)


def test_batch_matmul_cols4_large_rhs_falls_back(tmp_path):
    """An rhs whose packed columns exceed the kernel's scratch budget keeps the reference loop."""
    from harness import compile_bytes

    lib = compile_bytes(batch_matmul_model("int8", [1, 2, 256], [1, 256, 40]), tmp_path, features=DSP)
    assert kernel_of(lib)["variant"] == "reference"


@needs_board_tools
@pytest.mark.parametrize("board", ["mps2_an386", "mps3_an547", "mps2_an385"])
def test_batch_matmul_cols4_on_boards(tmp_path, board):
    """The sweep as one model on the emulated Cortex-M4, Cortex-M55 and Cortex-M3, against TFLM."""
    assert_matches_oracle_on_board(merge_models([_matmul(n) for n in MATMUL_CASES]), tmp_path, board=board)


# ---- the Keras look-alikes (tests/models/keras) on the boards ----------------------------------

KERAS = Path(__file__).resolve().parent / "models" / "keras"
KERAS_KERNELS = {  # (kind, variant on the Cortex-M4, variant on the Cortex-M55: the Helium ones)
    "conv_autoencoder_int8": ("TRANSPOSE_CONV", "phases", "mve-phases"),
    "unet_int8": ("TRANSPOSE_CONV", "phases", "mve-phases"),
    "transformer_block_int8": ("BATCH_MATMUL", "cols4", "mve-dot"),
    "lstm_int8": ("UNIDIRECTIONAL_SEQUENCE_LSTM", "rows4", "mve-rows4"),
}


@needs_board_tools
@pytest.mark.parametrize("board", ["mps2_an386", "mps3_an547"])
@pytest.mark.parametrize("model", list(KERAS_KERNELS))
def test_keras_lookalikes_run_the_new_kernels_on_boards(tmp_path, model, board):
    """The converter's models with the new kernels, on the emulated Cortex-M4 and M55, against TFLM."""
    from microcompiler.boards import load_board
    from microcompiler.compiler import compile_model

    kind, m4, m55 = KERAS_KERNELS[model]
    variant = m55 if board == "mps3_an547" else m4
    lib = compile_model(KERAS / f"{model}.tflite", features=frozenset(load_board(board).cpu.features))
    assert {o["kernel"]["variant"] for o in lib.metadata["operators"] if o["kind"] == kind} == {variant}
    assert_matches_oracle_on_board((KERAS / f"{model}.tflite").read_bytes(), tmp_path, board=board)
