"""In-place DEPTHWISE_CONV_2D: the memory planner (passes/memory_plan.py,
``share_in_place_with_scratch``) gives an int8 depthwise layer (depth multiplier 1) its input's
memory when that lowers the arena by more than the scratch its in-place schedule needs; the layer
then runs channel by channel (planes, or the reference loops with a channel copy), bit-exact with
TFLM on the host, on mps2_an386 and on mps3_an547. The host cases plan layer by layer (patches off:
the patch pass, docs/memory.md, would otherwise take these small stems first)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from dw_models import conv, depthwise, mobilenet_like_model, sandwich_model
from harness import assert_matches_oracle
from model_builder import ModelBuilder

from microcompiler.frontend.tflite import parse_tflite
from microcompiler.passes import pipeline

CASES = {
    "s1_same": dict(),
    "s2_same": dict(hwc=(16, 16, 16), out_hw=(8, 8), stride=(2, 2), input_zp=7),
    "s2_same_odd": dict(hwc=(15, 13, 12), out_hw=(8, 7), stride=(2, 2), activation="RELU"),
    "s1_valid": dict(hwc=(12, 12, 8), out_hw=(10, 10), padding="VALID", input_zp=-128),
    "s2_valid_5x5": dict(hwc=(17, 15, 32), out_hw=(7, 6), kernel=(5, 5), stride=(2, 2), padding="VALID"),
}


def _planned(model: bytes):
    graph = parse_tflite(model)
    for p in pipeline((1, 1)):  # patches off
        graph = p(graph)
    return graph


def _layer(meta, name="dw"):
    return next(op for op in meta["operators"] if op["layer_name"] == name)


RUNS = [(case, "fast") for case in CASES] + [
    ("s2_same_odd", "dsp"),
    ("s1_valid", "dsp"),
    ("s2_same", "reference"),
    ("s2_valid_5x5", "reference"),
]


@pytest.mark.parametrize("case,kernels", RUNS, ids=[f"{c}-{k}" for c, k in RUNS])
def test_in_place_matches_tflm_on_the_host(tmp_path, case, kernels):
    model = sandwich_model(**CASES[case])
    graph = _planned(model)
    dw = next(op for op in graph.operators if op.kind == "DEPTHWISE_CONV_2D")
    assert graph.storage(dw.outputs[0]) == graph.storage(dw.inputs[0])
    features = {"dsp"} if kernels == "dsp" else set()
    lib = assert_matches_oracle(
        model,
        tmp_path,
        n_inputs=3,
        sanitize=kernels != "dsp",
        features=features,
        kernels="reference" if kernels == "reference" else "fast",
        patches="off",
    )
    kernel = _layer(lib.metadata)["kernel"]
    assert kernel["in_place"] is True
    assert kernel["variant"] == ("reference" if kernels == "reference" else "planes")
    h, w, c = CASES[case].get("hwc", (16, 16, 8))
    assert lib.metadata["arena_bytes"] == h * w * c  # the depthwise output lives in its input
    assert lib.metadata["memory_peak"]["bytes"] == h * w * c


def test_the_mobilenet_like_arena_drops_at_its_first_depthwise_layer(tmp_path):
    model = mobilenet_like_model()
    lib = assert_matches_oracle(model, tmp_path, n_inputs=2, features={"dsp"}, executor="graph", patches="off")
    meta = lib.metadata
    in_place = [op["layer_name"] for op in meta["operators"] if (op["kernel"] or {}).get("in_place")]
    assert in_place == ["dw1"]  # dw2 and dw3 in place would not lower the arena further
    # before: dw1's input and output, 2 x 48x48x16; after: pw1's input and output, 48x48x16 + 48x48x8
    assert meta["arena_bytes"] == 48 * 48 * 16 + 48 * 48 * 8
    assert meta["memory_peak"]["layer_name"] == "pw1"
    assert meta["scratch_bytes"] == 2 * 50 * 52  # dw1's plane: 50 rows of 52 int16


def test_in_place_is_chosen_only_where_it_lowers_the_arena(tmp_path):
    """conv 1x1 -> dw -> conv 1x1 -> dw -> conv 1x1 at one size: every step holds two equal buffers,
    so in place would not lower the arena and no depthwise layer goes in place."""
    rng = np.random.default_rng(3)
    b = ModelBuilder()
    x = b.activation("x", [1, 10, 10, 3], "int8", scale=0.02, zero_point=0)
    y = conv(b, rng, "c1", x, 0.02, (10, 10, 3), 8, 1)
    y = depthwise(b, rng, "dw1", y, 0.05, (10, 10, 8), (10, 10, 8))
    y = conv(b, rng, "c2", y, 0.05, (10, 10, 8), 8, 1)
    y = depthwise(b, rng, "dw2", y, 0.05, (10, 10, 8), (10, 10, 8))
    y = conv(b, rng, "c3", y, 0.05, (10, 10, 8), 2, 1)
    graph = _planned(b.finish([x], [y]))
    assert all(graph.storage(op.outputs[0]) != graph.storage(op.inputs[0]) for op in graph.operators)
    assert graph.arena_bytes == 2 * 800


def test_a_small_layer_does_not_pay_its_scratch():
    """A 4x4x4 depthwise layer: in place would save 64 B of arena but its plane needs 2 * 6 * 6 B."""
    graph = _planned(sandwich_model(hwc=(4, 4, 4)))
    assert graph.arena_bytes == 2 * 64
    assert not any(graph.storage(op.outputs[0]) == graph.storage(op.inputs[0]) for op in graph.operators)


@needs_board_tools
@pytest.mark.parametrize("case", ["s1_same", "s2_valid_5x5"])
def test_in_place_matches_tflm_on_mps2_an386(tmp_path, case):
    run = assert_matches_oracle_on_board(sandwich_model(**CASES[case]), Path(tmp_path))
    assert run.outputs


@needs_board_tools
@pytest.mark.parametrize("board", ["mps2_an386", "mps3_an547"])  # Cortex-M4 (DSP) and M55 (Helium elsewhere)
def test_mobilenet_like_matches_tflm_on_the_board(tmp_path, board):
    run = assert_matches_oracle_on_board(mobilenet_like_model(), Path(tmp_path), board=board)
    assert run.outputs
