"""int16 LOGISTIC and TANH as piecewise-linear tables (issue 21, ops/lut16.py): one straight line per
segment of the rescaled input, fitted at compile time to TFLM's own arithmetic (its 256-entry
sigmoid table, interpolation and mirror).

Held against the TFLM interpreter on all 65,536 int16 inputs over ten input scales (power-of-two
scales TFLM takes a shortcut for, tiny scales reaching a few segments, large ones that saturate):
the compile-time table alone, the generated C on the host with sanitizers (and TFLM's own loop,
``kernels="reference"``; and the Helium variant's portable fallback), and the generated C on an
emulated Cortex-M4 (mps2_an386) and Cortex-M55 (mps3_an547: the Helium gathers)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from activation_cases import side_by_side_model
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from harness import assert_matches_oracle
from oracle import Oracle

from microcompiler.frontend.tflite import parse_tflite
from microcompiler.ops.lut16 import logistic_int16_reference, piecewise_table, tanh_int16_reference
from microcompiler.ops.softmax_logistic import logistic_int16_params
from microcompiler.ops.tanh import tanh_int16_params

ALL_INT16 = np.arange(-(2**15), 2**15, dtype=np.int16)
# Input scales: 2^-12 and 2^-11 (TFLM's power-of-two shortcuts), 2^-10 (a power of two on the general
# path), general scales reaching every segment, tiny ones reaching a few, and large ones whose
# rescaled input passes the saturation point (clamped first).
INPUT_SCALES = (2**-12, 2**-11, 2**-10, 0.001, 0.0003, 4.0, 1e-5, 3.05e-5, 2**-15, 0.02)
OUTPUT = (2**-15, 0)  # what TFLM requires of both
KINDS = {
    "LOGISTIC": ("logistic", logistic_int16_params, logistic_int16_reference),
    "TANH": ("tanh", tanh_int16_params, tanh_int16_reference),
}


def sweep_model(kind, scales=INPUT_SCALES):
    return side_by_side_model(kind, [([len(ALL_INT16)], "int16", (scale, 0), OUTPUT) for scale in scales])


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_piecewise_table_equals_tflm_on_every_input(kind):
    """The fitted lines (PiecewiseTable.apply: what the generated loop computes) and the Python
    mirror of TFLM's loop, without any C: TFLM's output for all 65,536 inputs, 10 input scales."""
    function, params, reference = KINDS[kind]
    model = sweep_model(kind)
    graph = parse_tflite(model)
    outputs = Oracle(model).run([ALL_INT16] * len(INPUT_SCALES))
    for op, want in zip(graph.operators, outputs):
        scale = graph.tensors[op.inputs[0]].quant.scale[0]
        table = piecewise_table(function, *params(scale))
        assert table is not None, f"{kind} input scale {scale}: no exact fit"
        assert table.base.size <= 512
        np.testing.assert_array_equal(table.apply(ALL_INT16), want.ravel(), err_msg=f"{kind} input scale {scale}")
        np.testing.assert_array_equal(reference(ALL_INT16, *params(scale)), want.ravel())


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_generated_tables_match_tflm_on_every_input(tmp_path, kind):
    """The generated C (host, ASan/UBSan): every int16 input, every scale; the reference kernels
    (TFLM's loop) on the same sweep, and which code each one is."""
    model = sweep_model(kind)
    inputs = [[ALL_INT16] * len(INPUT_SCALES)]
    lib = assert_matches_oracle(model, tmp_path / "fast", sanitize=True, inputs=inputs)
    ops_c = next(text for path, text in lib.files.items() if path.endswith("_ops.c"))
    assert len(re.findall(r"static const int32_t \w+_segment_base\[\d+\]", ops_c)) == len(INPUT_SCALES)
    assert "sigmoid_table" not in ops_c
    assert {op["kernel"]["variant"] for op in lib.metadata["operators"]} == {"piecewise-table"}
    ref = assert_matches_oracle(model, tmp_path / "ref", sanitize=True, inputs=inputs, kernels="reference")
    ref_c = next(text for path, text in ref.files.items() if path.endswith("_ops.c"))
    assert "segment_base" not in ref_c and "sigmoid_table" in ref_c
    assert {op["kernel"]["variant"] for op in ref.metadata["operators"]} == {"sigmoid-table"}


def test_helium_variant_fallback_matches_tflm_on_every_input(tmp_path):
    """The Helium variant's C (mc_piecewise_s16_run) compiled for the host, where its portable scalar
    line runs (ASan/UBSan): both functions, a clamped and an unclamped table each."""
    from model_merge import merge_models

    scales = (2**-12, 4.0)
    model = merge_models([sweep_model(kind, scales) for kind in sorted(KINDS)])
    inputs = [[ALL_INT16] * (len(scales) * len(KINDS))]
    lib = assert_matches_oracle(model, tmp_path, sanitize=True, inputs=inputs, features=frozenset({"dsp", "mve"}))
    assert {op["kernel"]["variant"] for op in lib.metadata["operators"]} == {"mve-piecewise-table"}


@needs_board_tools
@pytest.mark.parametrize("board", ["mps2_an386", "mps3_an547"])  # SMLAD core; Helium (mve-piecewise-table)
def test_tables_on_board_match_tflm(tmp_path, board):
    """On the emulated Cortex-M4 and Cortex-M55: both functions, every int16 input, an unclamped
    (LOGISTIC at 2^-12) and clamped tables (one merged model, one run; the M55's flash holds two
    inputs of 65,536 int16 beside the code)."""
    from model_merge import merge_models

    cases = [("LOGISTIC", 2**-12), ("TANH", 4.0)] + ([("LOGISTIC", 4.0)] if board == "mps2_an386" else [])
    model = merge_models([sweep_model(kind, (scale,)) for kind, scale in cases])
    assert_matches_oracle_on_board(model, tmp_path, board, inputs=[ALL_INT16] * len(cases))
