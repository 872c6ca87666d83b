"""The float32 fast kernels (issue 13) for cores with an FPU ("fpu" in the board's CPU features):
CONV_2D float-blocks, DEPTHWISE_CONV_2D float-channels4, FULLY_CONNECTED float-rows4
(microcompiler/ops/fast/, helpers in crt/include/microcompiler/kernel_float.h).

Tolerance: outputs match TFLM's float kernels within harness.FLOAT_RTOL (1e-5 relative, 1e-6
absolute near zero); NaN and infinities exactly (NaN where TFLM has NaN, the same infinities). The
kernels sum every output in TFLM's order, so on the host (no fused multiply-add under -std=c99) they
are bit-exact, which test_float_kernels_are_bit_exact_on_the_host checks on a few cases.

The sweep covers kernel sizes 1x1 to 7x7 (larger than the input), strides 1-3, dilation, SAME and
VALID padding, channel counts not divisible by 4, depth multipliers, no bias, batch 2 and every fused
activation; each case asserts the fast variant was chosen. A small model of the three operators also
runs on the emulated Cortex-M4F (mps2_an386: the VMLA.F32 inline assembly) and Cortex-M55
(mps3_an547: the Helium VMUL.F32 + VADD.F32 blocks).
"""

from __future__ import annotations

import numpy as np
import pytest
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from harness import assert_matches_oracle, compile_bytes
from model_builder import ModelBuilder, conv2d_options, depthwise_options, fully_connected_options
from oracle import Oracle
from test_conv_fc_types import fc_model
from test_op_conv_2d import conv_model

FPU = frozenset({"fpu"})
F32 = dict(dtype="float32")

CONV = {
    "3x3_same_c16_oc16": dict(hwc=(9, 12, 16), out_c=16, activation="RELU"),
    "3x3_same_c3_oc7_relu6": dict(hwc=(8, 10, 3), out_c=7, activation="RELU6"),
    "1x1_s2_valid_oc6": dict(hwc=(8, 9, 5), kernel=(1, 1), out_c=6, stride=(2, 2), padding="VALID"),
    "5x3_s2x1_same_oc9_n1to1": dict(hwc=(9, 11, 4), kernel=(5, 3), out_c=9, stride=(2, 1), activation="RELU_N1_TO_1"),
    "3x3_dil2_same_oc5": dict(hwc=(10, 11, 6), out_c=5, dilation=(2, 2)),
    "3x3_dil_w2_s3_oc4": dict(hwc=(7, 14, 2), out_c=4, stride=(3, 3), dilation=(1, 2)),
    "7x7_larger_than_input_oc3": dict(hwc=(5, 6, 3), kernel=(7, 7), out_c=3),
    "3x3_valid_no_bias_batch2": dict(hwc=(6, 9, 4), out_c=8, padding="VALID", bias=None, batches=2),
    "2x2_s2_same_oc1_width1": dict(hwc=(5, 1, 3), kernel=(2, 2), out_c=1, stride=(2, 2)),
    # the window's rows -4, -1, 2, 5 of a 2-row image: none inside (the output is the bias alone)
    "4x4_dil3_rows_all_outside": dict(
        hwc=(2, 5, 2), kernel=(4, 4), out_c=7, stride=(2, 3), dilation=(3, 1), activation="RELU_N1_TO_1", bias=None
    ),
}
DEPTHWISE = {
    "3x3_same_c16": dict(hwc=(9, 12, 16), activation="RELU"),
    "3x3_s2_c6_relu6": dict(hwc=(9, 10, 6), stride=(2, 2), activation="RELU6"),
    "5x5_dil2_c5": dict(hwc=(11, 12, 5), kernel=(5, 5), dilation=(2, 2)),
    "3x3_m2_c3_valid": dict(hwc=(7, 9, 3), depth_multiplier=2, padding="VALID", activation="RELU_N1_TO_1"),
    "10x8_s2_m8_c1": dict(hwc=(20, 10, 1), kernel=(10, 8), stride=(2, 2), depth_multiplier=8),
    "3x3_no_bias_batch2_c8": dict(hwc=(5, 7, 8), bias=None, batches=2),
    "4x3_dil3_rows_all_outside_c5": dict(hwc=(2, 6, 5), kernel=(4, 3), stride=(2, 2), dilation=(3, 1)),
}
FC = {
    "1x37_to_11": dict(x_shape=(1, 37), units=11),
    "3x16_to_8_no_bias": dict(x_shape=(3, 16), units=8, bias=None),
    "2x5_to_3": dict(x_shape=(2, 5), units=3),
    "1x64_to_4": dict(x_shape=(1, 64), units=4),
    "1x9_to_6": dict(x_shape=(1, 9), units=6),
    "1x16_to_1": dict(x_shape=(1, 16), units=1),
}
SWEEP = {f"conv/{k}": (lambda v=v: conv_model(**F32, **v)) for k, v in CONV.items()}
SWEEP.update({f"dw/{k}": (lambda v=v: conv_model("DEPTHWISE_CONV_2D", **F32, **v)) for k, v in DEPTHWISE.items()})
SWEEP.update({f"fc/{k}": (lambda v=v: fc_model("float32", **v)) for k, v in FC.items()})
VARIANT = {"conv": "float-blocks", "dw": "float-channels4", "fc": "float-rows4"}


@pytest.mark.parametrize("name", list(SWEEP))
def test_float_sweep_matches_tflm(tmp_path, name):
    lib = assert_matches_oracle(SWEEP[name](), tmp_path, n_inputs=2, features=FPU)
    assert lib.metadata["operators"][0]["kernel"]["variant"] == VARIANT[name.split("/")[0]]


@pytest.mark.parametrize("name", ["conv/3x3_same_c3_oc7_relu6", "dw/3x3_m2_c3_valid", "fc/1x37_to_11"])
def test_float_kernels_are_bit_exact_on_the_host(tmp_path, name):
    """TFLM's summation order kept: the host build (no contraction) gives TFLM's bits."""
    from microcompiler.host import HostProgram
    from microcompiler.inputs import random_inputs

    model = SWEEP[name]()
    lib = compile_bytes(model, tmp_path, features=FPU)
    inputs = [random_inputs(lib.info.inputs, seed=s) for s in range(2)]
    ours = HostProgram(lib, tmp_path / "build").run(inputs)
    for k, input_set in enumerate(inputs):
        want = Oracle(model).run(input_set)[0]
        got = ours[k].outputs[0]
        assert np.array_equal(got.view(np.uint32), want.reshape(got.shape).view(np.uint32)), name


def test_non_finite_values_propagate_as_in_tflm(tmp_path):
    """NaN and infinities in the input: the same NaN positions and infinities as TFLM (clamped to
    FLT_MAX by the activation as TFLM does)."""
    model = conv_model(**F32, hwc=(6, 9, 4), out_c=5)
    x = np.random.default_rng(1).normal(0, 1, (1, 6, 9, 4)).astype(np.float32)
    x[0, 2, 3, 1] = np.nan
    x[0, 4, 7, 0] = np.inf
    x[0, 0, 0, 2] = -np.inf
    x[0, 5, 8, 3] = np.float32(3e38)  # finite input, products overflow to inf
    lib = assert_matches_oracle(model, tmp_path, inputs=[[x]], features=FPU)
    want = Oracle(model).run([x])[0]
    assert np.isnan(want).any() and (np.abs(want) == np.finfo(np.float32).max).any()
    assert lib.metadata["operators"][0]["kernel"]["variant"] == "float-blocks"


def test_reference_without_fpu_and_for_grouped_convolution(tmp_path):
    """No FPU: the reference loops (soft-float); grouped float convolution: the reference loops."""
    plain = compile_bytes(conv_model(**F32), tmp_path / "plain").metadata["operators"][0]["kernel"]
    grouped = compile_bytes(conv_model(**F32, hwc=(5, 5, 4), groups=2), tmp_path / "grouped", features=FPU)
    assert plain["variant"] == "reference"
    assert grouped.metadata["operators"][0]["kernel"]["variant"] == "reference"


@needs_board_tools
def test_helium_flushes_subnormal_sums_within_the_tolerance(tmp_path):
    """On the emulated M55 the Helium float instructions flush subnormal inputs and results to zero
    (QEMU; the scalar FPU keeps them): each of a sum's 72 terms loses less than 2^-126, so sums of
    products around 1e-39 differ from TFLM's by less than 72 x 2^-126, far inside the 1e-6 absolute
    tolerance; NaN and infinities as TFLM."""
    model = conv_model(**F32, hwc=(6, 9, 8), out_c=8, bias=None)
    x = (np.random.default_rng(1).normal(0, 1, (1, 6, 9, 8)) * 1e-38).astype(np.float32)
    x[0, 2, 3, 1] = np.nan
    x[0, 4, 7, 0] = np.inf
    run = assert_matches_oracle_on_board(model, tmp_path, "mps3_an547", inputs=[x])
    got, want = run.outputs[0].reshape(-1), Oracle(model).run([x])[0].reshape(-1)
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.isnan(got).any()
    finite = np.isfinite(want)
    taps = 3 * 3 * 8
    assert np.max(np.abs(got[finite] - want[finite])) < taps * np.finfo(np.float32).tiny


def float_network() -> bytes:
    """CONV_2D 3x3 (3 -> 6 channels, RELU) -> DEPTHWISE_CONV_2D 3x3 stride 2 (multiplier 1) ->
    CONV_2D 1x1 (-> 5) -> FULLY_CONNECTED (-> 7): every float fast kernel and its tails."""
    rng = np.random.default_rng(3)
    b = ModelBuilder()
    x = b.activation("x", [1, 10, 11, 3], "float32")

    def const(name, shape):
        return b.constant(name, rng.normal(0, 0.5, shape).astype(np.float32))

    c1 = b.activation("c1", [1, 10, 11, 6], "float32")
    b.op("CONV_2D", [x, const("w1", (6, 3, 3, 3)), const("b1", (6,))], [c1], conv2d_options(activation="RELU"))
    d1 = b.activation("d1", [1, 5, 6, 6], "float32")
    b.op(
        "DEPTHWISE_CONV_2D",
        [c1, const("w2", (1, 3, 3, 6)), const("b2", (6,))],
        [d1],
        depthwise_options(stride=(2, 2), activation="RELU6"),
    )
    c2 = b.activation("c2", [1, 5, 6, 5], "float32")
    b.op("CONV_2D", [d1, const("w3", (5, 1, 1, 6)), const("b3", (5,))], [c2], conv2d_options())
    y = b.activation("y", [1, 7], "float32")
    b.op("FULLY_CONNECTED", [c2, const("w4", (7, 150)), const("b4", (7,))], [y], fully_connected_options())
    return b.finish([x], [y])


def test_float_network_on_host(tmp_path):
    """With ASan and UBSan: the clipped windows read only inside the input."""
    lib = assert_matches_oracle(float_network(), tmp_path, n_inputs=2, features=FPU, sanitize=True)
    assert [o["kernel"]["variant"] for o in lib.metadata["operators"]] == [
        "float-blocks",
        "float-channels4",
        "float-blocks",
        "float-rows4",
    ]


@needs_board_tools
@pytest.mark.parametrize("board", ["mps2_an386", "mps3_an547"])  # VMLA.F32; Helium VMUL + VADD (M55)
def test_float_network_on_board(tmp_path, board):
    assert_matches_oracle_on_board(float_network(), tmp_path, board)
