"""The Helium (MVE) int8 kernels (ops/fast/mve.py, kernel_mve.h) against the TFLM oracle, bit for bit.

Every sweep is one model holding all its cases side by side (model_merge.py), so that it compiles
and builds once. On the host (features {"dsp", "mve"}) the kernels run as the portable C of
kernel_mve.h, also under ASan + UBSan; in QEMU mps3_an547 (Cortex-M55) they run as Helium
intrinsics and inline assembly. The cases hit every tail: output pixels % 2 (the 2-pixel block),
output channels % 4 (the 4-channel block), inputs % 16 (the 16-byte chunks: gathered and padded),
odd and even chunk counts (the 2-chunk loop), the three input modes (in place, kernel rows in place
with gathered borders, all gathered), depthwise tap pairs and single taps, -128 weights (no tap
pairs), left shifts (multipliers >= 1/2, the general requantization) and ADD/SUB tails (n % 4).
"""

from __future__ import annotations

import numpy as np
import pytest
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from elementwise_models import activation_options, side_by_side_model
from harness import assert_matches_oracle
from model_builder import ModelBuilder, conv2d_options, depthwise_options, fully_connected_options
from model_merge import merge_models
from test_fast_kernels import CONV_CASES, DW_CASES
from test_fully_connected import fc_model
from test_op_conv_2d import conv_model
from test_op_pooling import pool_model

MVE = frozenset({"dsp", "mve"})

CONV_MVE_CASES = {
    **CONV_CASES,
    "in_place_1x1_c32_odd_pixels": dict(hwc=(3, 5, 32), kernel=(1, 1), out_c=6, padding="VALID", input_zp=-128),
    "in_place_1x1_c16_batch2": dict(hwc=(2, 3, 16), kernel=(1, 1), out_c=8, padding="VALID", batches=2),
    "rows_3x3_c16_same": dict(hwc=(6, 5, 16), out_c=8, input_zp=-128, activation="RELU"),
    "rows_3x3_c16_s2_valid": dict(hwc=(7, 7, 16), out_c=6, stride=(2, 2), padding="VALID"),
    "rows_3x3_c32_dilation_h": dict(hwc=(8, 6, 32), out_c=5, dilation=(2, 1), input_zp=9, activation="RELU6"),
    "rows_1x1_c16_s2": dict(hwc=(5, 5, 16), kernel=(1, 1), out_c=7, stride=(2, 2), padding="VALID"),
    "rows_3x2_c8_odd_chunks": dict(hwc=(5, 4, 8), kernel=(3, 2), out_c=4, input_zp=3),
    "rows_3x3_c64_five_chunks": dict(hwc=(3, 4, 64), out_c=9, per_channel=False, input_zp=100),
    # all gathered, kernel rows 270 bytes apart: beyond VLDRB's 8-bit gather offsets (copied row by row)
    "all_3x3_c3_wide_rows": dict(hwc=(3, 90, 3), out_c=4, input_zp=-128),
}

# The channels4 cases of the DSP kernel with 4x the channels (multiples of 16), and two more.
DW_MVE_CASES = {
    **{f"{name}_x4": dict(case, hwc=(*case["hwc"][:2], 4 * case["hwc"][2])) for name, case in DW_CASES.items()},
    "c64_wide_rows": dict(hwc=(5, 6, 64), kernel=(3, 5), input_zp=-128),  # taps beyond VLDRB's offset
    "c16_weights_minus128": dict(
        hwc=(5, 5, 16), padding="VALID", input_zp=0, weights=np.full((1, 3, 3, 16), -128, np.int8)
    ),
    # one input channel: the CONV_2D kernel mve-dot (micro_speech's 10x8 stride-2 layer, small)
    "c1_m8_10x8_s2_same": dict(hwc=(11, 9, 1), kernel=(10, 8), stride=(2, 2), depth_multiplier=8, input_zp=-128),
    "c1_m3_3x2_valid_batch2": dict(hwc=(5, 6, 1), kernel=(3, 2), padding="VALID", depth_multiplier=3, batches=2),
    # 8 channels, stride 1 across: mve-pixels2x8 (pixel pairs; odd and even widths, borders, one pixel wide)
    "c8_pairs_odd_width": dict(hwc=(7, 9, 8), input_zp=-128, activation="RELU"),
    "c8_pairs_s2_down_dilated": dict(hwc=(7, 6, 8), stride=(2, 1), dilation=(2, 1), batches=2, per_channel=False),
    "c8_pairs_valid_wide_kernel": dict(hwc=(3, 10, 8), kernel=(2, 7), padding="VALID", input_zp=3),
    "c8_pairs_one_pixel_wide": dict(hwc=(4, 1, 8), input_zp=-7),
    "c8_pairs_weights_minus128": dict(
        hwc=(4, 5, 8), input_zp=0, weights=np.full((1, 3, 3, 8), -128, np.int8), activation="RELU_N1_TO_1"
    ),
}

FC_MVE_CASES = [  # (units, depth, batches)
    (4, 16, 1),
    (5, 17, 3),
    (6, 18, 2),
    (7, 19, 2),
    (3, 3, 1),
    (9, 2, 4),
    (11, 140, 1),
    (10, 32, 3),
    (8, 80, 2),
]

ADD_MVE_CASES = [  # (kind, shape, activation, quantization (input1, input2, output))
    ("ADD", [1, 4, 4, 8], "NONE", None),
    ("ADD", [1, 5, 7], "RELU", [(0.5, -128), (0.5, 127), (1.0, -128)]),
    ("ADD", [4, 6], "RELU6", [(0.001, 3), (0.9, -4), (0.03, 1)]),
    ("SUB", [3, 7], "RELU_N1_TO_1", [(0.02, 10), (0.3, -7), (0.05, -20)]),
    ("SUB", [2, 9], "NONE", [(0.05, 127), (0.05, -128), (0.05, 127)]),
]


POOL_MVE_CASES = [  # (kind, shape, filter, stride, activation)
    ("AVERAGE_POOL_2D", [1, 25, 5, 64], (25, 5), (1, 1), "NONE"),  # KWS's
    ("AVERAGE_POOL_2D", [2, 6, 6, 8], (3, 2), (2, 2), "RELU6"),
    ("AVERAGE_POOL_2D", [1, 15, 17, 16], (15, 17), (1, 1), "RELU"),  # 255 taps: the int16 lane limit
    ("AVERAGE_POOL_2D", [1, 8, 8, 24], (2, 2), (2, 2), "RELU_N1_TO_1"),
    ("MAX_POOL_2D", [1, 6, 6, 16], (2, 2), (2, 2), "RELU"),
    ("MAX_POOL_2D", [2, 5, 7, 32], (3, 3), (1, 1), "RELU6"),
    ("MAX_POOL_2D", [1, 4, 4, 16], (4, 4), (1, 1), "NONE"),
]


def _tiny_output_scale(kind, seed=3):
    """Multipliers >= 1/2 (shift >= 0): the general requantization (VSHL, masked rounding)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    c = 16
    x = b.activation("x", [1, 3, 5, c] if kind != "FULLY_CONNECTED" else [3, 20], "int8", scale=0.02, zero_point=-3)
    w_shape = {"CONV_2D": (6, 3, 3, c), "DEPTHWISE_CONV_2D": (1, 3, 3, c), "FULLY_CONNECTED": (6, 20)}[kind]
    n = c if kind == "DEPTHWISE_CONV_2D" else 6
    w_scale = rng.uniform(0.002, 0.02, n)
    w = b.constant(
        "w",
        rng.integers(-127, 128, w_shape, dtype=np.int8),
        scale=w_scale,
        zero_point=[0] * n,
        axis=3 if kind == "DEPTHWISE_CONV_2D" else 0,
    )
    bias = b.constant("b", rng.integers(-300, 300, n).astype(np.int32), scale=list(0.02 * w_scale), zero_point=[0] * n)
    y_shape = {"CONV_2D": [1, 3, 5, 6], "DEPTHWISE_CONV_2D": [1, 3, 5, c], "FULLY_CONNECTED": [3, 6]}[kind]
    y = b.activation("y", y_shape, "int8", scale=0.00005, zero_point=5)
    options = {
        "CONV_2D": conv2d_options("SAME"),
        "DEPTHWISE_CONV_2D": depthwise_options("SAME"),
        "FULLY_CONNECTED": fully_connected_options(),
    }[kind]
    b.op(kind, [x, w, bias], [y], options)
    return b.finish([x], [y])


def sweep_model() -> bytes:
    """Every MVE case of every operator, side by side in one model."""
    models = [conv_model(**case) for case in CONV_MVE_CASES.values()]
    models += [conv_model(kind="DEPTHWISE_CONV_2D", **case) for case in DW_MVE_CASES.values()]
    models += [
        fc_model("int8", batches, depth, units, "RELU6", units % 2 == 1, input_zp=-128, seed=units)
        for units, depth, batches in FC_MVE_CASES
    ]
    models.append(
        side_by_side_model(
            [
                (
                    kind,
                    "int8",
                    [shape, shape],
                    "int8",
                    quant or [(0.05, -3), (0.1, 2), (0.08, 5)],
                    activation_options(kind, activation),
                )
                for kind, shape, activation, quant in ADD_MVE_CASES
            ]
        )
    )
    models += [
        pool_model(kind, "int8", shape, window, stride, "VALID", activation=activation)
        for kind, shape, window, stride, activation in POOL_MVE_CASES
    ]
    models += [_tiny_output_scale(kind) for kind in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")]
    return merge_models(models)


def _variants(lib) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for o in lib.metadata["operators"]:
        out.setdefault(o["kind"], set()).add(o["kernel"]["variant"])
    return out


def test_mve_sweep_on_host(tmp_path):
    """The portable C of the MVE kernels, every case, against TFLM."""
    lib = assert_matches_oracle(sweep_model(), tmp_path, n_inputs=2, features=MVE)
    assert _variants(lib) == {
        "CONV_2D": {"mve-dot"},
        "DEPTHWISE_CONV_2D": {"mve-channels16", "mve-dot", "mve-pixels2x8"},
        "FULLY_CONNECTED": {"mve-dot"},
        "ADD": {"mve"},
        "SUB": {"mve"},
        "AVERAGE_POOL_2D": {"mve-channels8"},
        "MAX_POOL_2D": {"mve-max16"},
    }
    kernels = [o["kernel"] for o in lib.metadata["operators"]]
    assert {k.get("gather") for k in kernels if k["variant"] == "mve-dot"} == {"none", "rows", "all"}
    assert {k.get("tap_pairs") for k in kernels if k["variant"] == "mve-channels16"} == {True, False}
    assert {k.get("tap_pairs") for k in kernels if k["variant"] == "mve-pixels2x8"} == {True, False}


def test_gather16_offsets_limits():
    """mve-dot's VLDRB gathers: per chunk of 16 taps the offsets from its first tap, the lanes past the
    last tap at offset 0; None when a chunk spans more than 255 bytes."""
    from types import SimpleNamespace

    from microcompiler.ops.fast.mve import gather16_offsets

    g = SimpleNamespace(k_h=3, k_w=3, in_c=3, in_w=20, dil_h=1, dil_w=1)
    bases, offsets = gather16_offsets(g, 27)
    assert bases == [0, 67]  # tap 16 of [ky][kx][c]: row 1, kx 2, channel 1 (20 * 3 + 2 * 3 + 1)
    assert list(offsets[:9]) == [0, 1, 2, 3, 4, 5, 6, 7, 8] and offsets[9] == 60
    assert list(offsets[16 + 11 :]) == [0] * 5  # 27 taps: the last chunk's 5 padding lanes
    assert gather16_offsets(SimpleNamespace(k_h=3, k_w=3, in_c=3, in_w=90, dil_h=1, dil_w=1), 27) is None


def test_mve_sweep_sanitized(tmp_path):
    assert_matches_oracle(sweep_model(), tmp_path, n_inputs=1, features=MVE, sanitize=True)


def test_mve_extreme_inputs_on_host(tmp_path):
    """All-minimum and all-maximum inputs with the largest weights: the largest accumulators (and 255
    pooling taps of -128 or 127: the int16 lane sums near their limit)."""
    conv = conv_model(hwc=(6, 6, 16), out_c=8, input_zp=-128, bias=None, weights=np.full((8, 3, 3, 16), 127, np.int8))
    dw = conv_model(
        kind="DEPTHWISE_CONV_2D", hwc=(6, 6, 16), input_zp=-128, bias=None, weights=np.full((1, 3, 3, 16), 127, np.int8)
    )
    pool = pool_model("AVERAGE_POOL_2D", "int8", [1, 15, 17, 8], (15, 17), (1, 1), "VALID")
    model = merge_models([conv, dw, pool])
    inputs = [[np.full((1, 6, 6, 16), v, np.int8)] * 2 + [np.full((1, 15, 17, 8), v, np.int8)] for v in (-128, 127, 0)]
    assert_matches_oracle(model, tmp_path, inputs=inputs, features=MVE)


def test_mve_variants_chosen_from_board_features(tmp_path):
    """mps3_an547 (Cortex-M55, "mve" in boards/mps3_an547.toml) gets the MVE kernels for CONV_2D,
    DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD, SUB, AVERAGE_POOL_2D and MAX_POOL_2D; the Cortex-M4 board
    does not."""
    from harness import compile_bytes

    from microcompiler.boards import load_board

    m55 = load_board("mps3_an547").cpu.features
    assert "mve" in m55
    lib = compile_bytes(sweep_model(), tmp_path / "m55", features=m55)
    assert all(v.startswith("mve") for vs in _variants(lib).values() for v in vs), _variants(lib)
    lib = compile_bytes(sweep_model(), tmp_path / "m4", features=load_board("mps2_an386").cpu.features)
    assert not any(v.startswith("mve") for vs in _variants(lib).values() for v in vs), _variants(lib)


@needs_board_tools
def test_mve_sweep_on_m55(tmp_path):
    """Helium intrinsics and inline assembly in QEMU mps3-an547, every output of every case."""
    assert_matches_oracle_on_board(sweep_model(), tmp_path, board="mps3_an547")


@pytest.mark.parametrize("model", ["kws_ref_model", "pretrainedResnet_quant", "ad01_int8"])
def test_mlperf_models_run_mve_kernels_on_m55(shared_models, model):
    """Every int8 CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD and AVERAGE_POOL_2D of the MLPerf Tiny
    models gets its MVE kernel for mps3_an547 (their firmware is compared with TFLM in
    test_baremetal.py and scripts/benchmarks.py)."""
    from microcompiler.boards import load_board
    from microcompiler.compiler import compile_model

    lib = compile_model(
        shared_models / "mlperf_tiny" / f"{model}.tflite", features=load_board("mps3_an547").cpu.features
    )
    heavy = {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "ADD", "AVERAGE_POOL_2D"}
    kernels = {(o["kind"], o["kernel"]["variant"]) for o in lib.metadata["operators"] if o["kind"] in heavy}
    assert kernels and all(v.startswith("mve") for _, v in kernels), kernels


@needs_board_tools
def test_mve_dot_kernel_unoptimized_build_on_m55(tmp_path):
    """At -O0 GCC cannot give the dot kernel's inline assembly its twelve registers: kernel_mve.h
    falls back to the same loop in intrinsics (__OPTIMIZE__ undefined). The firmware built at -O0
    still matches TFLM."""
    from oracle import Oracle

    from microcompiler.boards import load_board
    from microcompiler.compiler import compile_model
    from microcompiler.inputs import random_inputs
    from microcompiler.project import build, create_project, flash

    models = [
        conv_model(**CONV_MVE_CASES[name])
        for name in ("rows_3x3_c16_same", "bytes_3x3_c3", "in_place_1x1_c32_odd_pixels")
    ]
    models.append(fc_model("int8", 3, 40, 7, "RELU", True, input_zp=-128))
    path = tmp_path / "sweep.tflite"
    path.write_bytes(merge_models(models))
    board = load_board("mps3_an547")
    lib = compile_model(path, features=board.cpu.features)
    inputs = random_inputs(lib.info.inputs, seed=5)
    project = create_project(lib, "baremetal", board, tmp_path / "project", input=inputs)
    cmake = project.dir / "CMakeLists.txt"
    assert " -O2 " in cmake.read_text()
    cmake.write_text(cmake.read_text().replace(" -O2 ", " -O0 "))
    build(project.dir, log=lambda _: None)
    run = flash(project.dir, timeout=120.0, log=lambda _: None)
    want_all = Oracle(path.read_bytes()).run(inputs)
    assert len(run.outputs) == len(want_all) == 4
    for k, (got, want) in enumerate(zip(run.outputs, want_all)):
        np.testing.assert_array_equal(got.reshape(-1), np.asarray(want).reshape(-1), err_msg=f"output {k}")
