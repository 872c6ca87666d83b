"""The fast int16x8 kernels (ops/fast/*_s16.py, kernel_s16.h) against the TFLM oracle, bit for bit.

Host sweeps (features {"dsp"}: the DSP variants, their SMLAD run as portable C on the host) pick
shapes that hit every tail: output channels % 4 (the 4-channel pass), K % 4 (the gathered row's zero
padding; FULLY_CONNECTED's 1-3 inputs after the loop), padding at every border, strides, dilations,
batches, per-tensor and per-channel scales, the three bias kinds (int64: 64-bit sums and requantize;
int32: TFLM's wrapping int32 sum; none), and the 32-bit runs added into int64 (chunks) with the
extreme inputs that would overflow one int32 sum. The QEMU part runs a chain of int16 operators
(every tensor an output) and seanet conv3 against its golden output on the Cortex-M4 (the host runs
of the seanet models are tests/test_seanet.py).
"""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from harness import assert_matches_oracle, compile_bytes
from model_builder import ModelBuilder, conv2d_options, depthwise_options, fully_connected_options, reshape_options
from oracle import Oracle
from test_fully_connected import fc_model
from test_op_add_mul import binary_model
from test_op_conv_2d import conv_model

DSP = frozenset({"dsp"})
QEMU_TOOLS = all(shutil.which(t) for t in ("arm-none-eabi-gcc", "cmake", "ninja", "qemu-system-arm"))


def kernel_of(lib, i=0):
    return lib.metadata["operators"][i]["kernel"]


CONV16_CASES = {
    "1x1_c4_oc8": dict(hwc=(3, 5, 4), kernel=(1, 1), out_c=8, padding="VALID"),
    "3x3_same_c3_oc5_pc": dict(hwc=(5, 6, 3), out_c=5),
    "3x3_same_s2_c8_oc6_relu": dict(hwc=(7, 9, 8), out_c=6, stride=(2, 2), activation="RELU"),
    "3x3_dil2_c5_oc3_nobias": dict(hwc=(7, 8, 5), out_c=3, dilation=(2, 2), bias=None),
    "5x3_s3_c2_oc7_pt_relu6": dict(
        hwc=(8, 9, 2), kernel=(5, 3), out_c=7, stride=(3, 2), per_channel=False, activation="RELU6"
    ),
    "7x7_valid_c2_oc8_like_seanet": dict(hwc=(8, 20, 2), kernel=(7, 7), out_c=8, padding="VALID"),
    "3x4_s1x2_valid_c8_oc16": dict(hwc=(4, 17, 8), kernel=(3, 4), out_c=16, stride=(1, 2), padding="VALID"),
    "kernel_bigger_c1_oc1_relu_n1": dict(hwc=(2, 3, 1), kernel=(4, 5), out_c=1, activation="RELU_N1_TO_1"),
    "int32_bias_c6_oc9_batch2": dict(hwc=(4, 5, 6), out_c=9, bias="int32", batches=2),
    "dilation_w3_c1_oc4": dict(hwc=(6, 11, 1), kernel=(2, 3), out_c=4, dilation=(1, 3), stride=(2, 1)),
    # int16-blocks' segments: 2 x 2 taps of a horizontal dilation written out, a 1x1 segment of 22 taps
    # (5 steps in mc_dot4_s16's loop, 2 tail taps), of 7 (one step, 3 tail taps), of 48 (8-tap steps)
    "2x2_dil2_same_c3_oc5": dict(hwc=(6, 7, 3), kernel=(2, 2), out_c=5, dilation=(2, 2)),
    "1x1_c22_oc6_s2": dict(hwc=(5, 5, 22), kernel=(1, 1), out_c=6, stride=(2, 2)),
    "1x1_c7_oc9": dict(hwc=(3, 4, 7), kernel=(1, 1), out_c=9),
    "1x3_c16_oc12_valid": dict(hwc=(2, 6, 16), kernel=(1, 3), out_c=12, padding="VALID"),
}
S16 = {"CONV_2D": {"weights": "s16"}}  # the tuning knob that keeps int16 pairs in flash (int16-pixel)
S8 = {"CONV_2D": {"weights": "s8"}}  # int16-blocks whatever the heuristic says


@pytest.mark.parametrize("weights", ["s8", "s16"])
@pytest.mark.parametrize("case", list(CONV16_CASES))
def test_conv_int16_matches_tflm(tmp_path, case, weights):
    """int16-blocks (int8 weights in flash, widened per block of 4 output channels; these small
    images are mostly border pixels, where the default picks int16-pixel, so the knob asks for it)
    and int16-pixel (the "weights": "s16" knob)."""
    lib = assert_matches_oracle(
        conv_model(dtype="int16", **CONV16_CASES[case]),
        tmp_path,
        n_inputs=2,
        features=DSP,
        tuning=S16 if weights == "s16" else S8,
    )
    variant = "int16-pixel" if weights == "s16" else "int16-blocks"
    assert kernel_of(lib)["variant"] == variant and kernel_of(lib)["isa"] == "dsp"
    assert kernel_of(lib)["weights"] == weights
    assert kernel_of(lib)["chunk"] == 0  # these weights: one int32 run per channel


def test_conv_int16_default_kernel_per_layer():
    """The default: int16-blocks where it costs no more instructions than int16-pixel (seanet conv0,
    a pointwise layer, a 3 x 3 layer on a large enough image), int16-pixel where the border pixels'
    gathers per block would cost more (a keyword spotter's first layer: 10 x 4 on 49 x 10 x 1)."""
    from microcompiler.ops.fast.conv_2d_s16 import Segments, blocks_pay_off
    from microcompiler.ops.geometry import ConvGeometry

    def pays(hwc, kernel, out_c, stride=1, pad=(0, 0), out_hw=None):
        h, w, c = hwc
        oh, ow = out_hw or ((h + 2 * pad[0] - kernel[0]) // stride + 1, (w + 2 * pad[1] - kernel[1]) // stride + 1)
        g = ConvGeometry(1, h, w, c, oh, ow, out_c, kernel[0], kernel[1], stride, stride, 1, 1, pad[0], pad[1])
        return blocks_pay_off(g, Segments.of(g))

    assert pays((8, 166, 2), (7, 7), 8)  # seanet conv0
    assert pays((25, 5, 32), (1, 1), 32)  # DS-CNN pointwise
    assert pays((48, 48, 16), (3, 3), 16, pad=(1, 1))
    assert not pays((49, 10, 1), (10, 4), 32, stride=2, pad=(4, 1), out_hw=(25, 5))  # DS-CNN first layer


def test_conv_int16_blocks_keep_the_model_file_weights(tmp_path):
    """int16-blocks stores 1 byte per weight (plus each segment's padding to an even tap count);
    int16-pixel 2 per weight (K padded to a multiple of 4)."""
    model = conv_model(dtype="int16", hwc=(8, 20, 2), kernel=(7, 7), out_c=8, padding="VALID")  # seanet conv0-like
    blocks = compile_bytes(model, tmp_path / "s8", features=DSP).files["src/model_ops.c"]
    pixel = compile_bytes(model, tmp_path / "s16", features=DSP, tuning=S16).files["src/model_ops.c"]
    assert re.search(r"static const int32_t \w+_weights\[196\] = \{", blocks)  # 8 x 98 int8 in 196 words
    assert re.search(r"static const int32_t \w+_weights\[400\] = \{", pixel)  # 8 x 100 int16 pairs
    assert "mc_widen_s8(wide, w8, 98);" in blocks


def test_conv_int16_runs_into_int64(tmp_path):
    """576 taps of weight +-127: one int32 sum could reach 576 * 127 * 2^15 > 2^31 with extreme
    inputs, so the kernel sums runs in int32 and adds them into int64: int16-blocks one segment (a
    kernel row, 3 x 64 taps) per run, int16-pixel runs of 500 taps."""
    weights = np.full((5, 3, 3, 64), 127, np.int8)
    weights[1::2] = -127
    model = conv_model(dtype="int16", hwc=(4, 3, 64), out_c=5, padding="VALID", weights=weights)
    extremes = [[np.full((1, 4, 3, 64), v, np.int16)] for v in (32767, -32768)]
    extremes.append([np.random.default_rng(1).integers(-32768, 32768, (1, 4, 3, 64)).astype(np.int16)])
    lib = assert_matches_oracle(model, tmp_path, inputs=extremes, features=DSP)
    assert kernel_of(lib)["variant"] == "int16-blocks" and kernel_of(lib)["chunk"] == 192
    lib = assert_matches_oracle(model, tmp_path / "s16", inputs=extremes, features=DSP, tuning=S16)
    assert kernel_of(lib)["variant"] == "int16-pixel" and kernel_of(lib)["chunk"] == 500


def test_conv_int16_without_dsp_runs_the_same_loops(tmp_path):
    lib = assert_matches_oracle(
        conv_model(dtype="int16", **CONV16_CASES["3x3_same_c3_oc5_pc"]), tmp_path, n_inputs=2, tuning=S8
    )
    assert kernel_of(lib)["variant"] == "int16-blocks" and kernel_of(lib)["isa"] == "c"


def test_grouped_int16_conv_keeps_the_reference(tmp_path):
    lib = assert_matches_oracle(
        conv_model(dtype="int16", hwc=(4, 4, 4), out_c=4, groups=2), tmp_path, n_inputs=1, features=DSP
    )
    assert kernel_of(lib)["variant"] == "reference"


DW16_CASES = {
    # (depth multiplier, channels % 2): the three pairings
    "m1_c8_3x3_same": dict(hwc=(5, 6, 8)),
    "m1_c5_3x3_s2_valid_pt": dict(hwc=(7, 8, 5), stride=(2, 2), padding="VALID", per_channel=False),
    "m1_c1_10x4_s2_loop_rows": dict(hwc=(13, 10, 1), kernel=(10, 4), stride=(2, 2), activation="RELU"),
    "m1_c3_1x17_loop_taps": dict(hwc=(2, 20, 3), kernel=(1, 17)),
    "m2_c3_3x3_same_relu6": dict(hwc=(5, 5, 3), depth_multiplier=2, activation="RELU6"),
    "m4_c2_dilation2_nobias": dict(hwc=(7, 7, 2), depth_multiplier=4, dilation=(2, 2), bias=None),
    "m3_c2_5x3_same_batch2": dict(hwc=(6, 5, 2), kernel=(5, 3), depth_multiplier=3, batches=2),
    # the KWS-like first layer: a loop over the kernel rows
    "m8_c1_10x8_s2_like_kws": dict(hwc=(12, 10, 1), kernel=(10, 8), depth_multiplier=8, stride=(2, 2)),
}


DW_S16 = {"DEPTHWISE_CONV_2D": {"weights": "s16"}}  # the tuning knob that keeps int16 pairs (int16-pairs)


@pytest.mark.parametrize("weights", ["s8", "s16"])
@pytest.mark.parametrize("case", list(DW16_CASES))
def test_depthwise_int16_matches_tflm(tmp_path, case, weights):
    """int16-pair-planes (the default: int8 weights widened per pair of channels, zero-padded planes)
    and int16-pairs (the "weights": "s16" knob)."""
    params = DW16_CASES[case]
    lib = assert_matches_oracle(
        conv_model(kind="DEPTHWISE_CONV_2D", dtype="int16", **params),
        tmp_path,
        n_inputs=2,
        features=DSP,
        tuning=DW_S16 if weights == "s16" else None,
    )
    m = params.get("depth_multiplier", 1)
    assert kernel_of(lib)["variant"] == ("int16-pairs" if weights == "s16" else "int16-pair-planes")
    assert kernel_of(lib)["weights"] == weights
    assert kernel_of(lib)["pairs"] == ("channels" if m == 1 else "multiplier" if m % 2 == 0 else "none")


def test_depthwise_int16_pair_planes_keep_the_model_file_weights(tmp_path):
    """int8 weights: 8 channels x 9 taps (zero-padded to 10 per pair of channels) in 40 bytes,
    int16-pairs 144; without padding no plane (the input read as it lies)."""
    model = conv_model(kind="DEPTHWISE_CONV_2D", dtype="int16", hwc=(5, 6, 8))
    planes = compile_bytes(model, tmp_path / "s8", features=DSP).files["src/model_ops.c"]
    pairs = compile_bytes(model, tmp_path / "s16", features=DSP, tuning=DW_S16).files["src/model_ops.c"]
    assert re.search(r"static const int32_t \w+_weights\[20\] = \{", planes)
    assert re.search(r"static const int32_t \w+_weights\[36\] = \{", pairs)
    assert "memset(plane, 0, " in planes
    valid = conv_model(kind="DEPTHWISE_CONV_2D", dtype="int16", hwc=(5, 6, 8), padding="VALID")
    assert "memset(plane" not in compile_bytes(valid, tmp_path / "v", features=DSP).files["src/model_ops.c"]


def test_depthwise_int16_extremes(tmp_path):
    """Weights +-127 and inputs at both ends of int16: the largest int32 sums the kernel allows."""
    weights = np.full((1, 3, 3, 6), 127, np.int8)
    weights[..., 1::2] = -127
    model = conv_model(kind="DEPTHWISE_CONV_2D", dtype="int16", hwc=(4, 4, 3), depth_multiplier=2, weights=weights)
    inputs = [[np.full((1, 4, 4, 3), v, np.int16)] for v in (32767, -32768)]
    lib = assert_matches_oracle(model, tmp_path, inputs=inputs, features=DSP)
    assert kernel_of(lib)["variant"] == "int16-pair-planes"


@pytest.mark.parametrize(
    "units,depth,batches,bias",
    [
        (8, 36, 1, "int64"),  # rows % 4 == 0, depth % 4 == 0
        (4, 40, 2, "int64"),  # an even number of steps of 4 inputs (int16-rows4-s8: two per iteration)
        (11, 37, 2, "int64"),  # 3 tail rows, 1 tail input
        (5, 38, 1, None),  # 2 tail inputs
        (3, 39, 3, "int32"),  # no 4-row block, 3 tail inputs, TFLM's int32 sum
        (6, 3, 1, "int64"),  # no pair loop at all
    ],
)
@pytest.mark.parametrize("weights", ["s8", "s16"])
def test_fully_connected_int16_rows4_matches_tflm(tmp_path, units, depth, batches, bias, weights):
    """int16-rows4-s8 (the default: int8 weights in flash, widened in registers) and int16-rows4
    (the "weights": "s16" knob: int16 pairs in flash)."""
    model = _fc16(units, depth, batches, bias)
    tuning = FC_S16 if weights == "s16" else None
    lib = assert_matches_oracle(model, tmp_path, n_inputs=2, features=DSP, tuning=tuning)
    assert kernel_of(lib)["variant"] == ("int16-rows4" if weights == "s16" else "int16-rows4-s8")
    assert kernel_of(lib)["weights"] == weights


FC_S16 = {"FULLY_CONNECTED": {"weights": "s16"}}  # the tuning knob that keeps int16 pairs in flash


def test_fully_connected_int16_rows4_s8_keeps_the_model_file_weights(tmp_path):
    """11 rows x 37 inputs: int8 words, 10 per row (37 taps padded to 40); int16 pairs: 19 per row."""
    model = _fc16(11, 37, 1, "int64")
    s8 = compile_bytes(model, tmp_path / "s8", features=DSP).files["src/model_ops.c"]
    pairs = compile_bytes(model, tmp_path / "s16", features=DSP, tuning=FC_S16).files["src/model_ops.c"]
    assert re.search(r"static const int32_t \w+_weights\[110\] = \{", s8)
    assert re.search(r"static const int32_t \w+_weights\[209\] = \{", pairs)


def test_fully_connected_int16_s8_without_dsp_sanitized(tmp_path):
    """The portable C of int16-rows4-s8 (no DSP extension) under ASan/UBSan: 3 tail rows, 3 tail
    inputs, batches, an int32 bias (TFLM's wrapping int32 sum)."""
    for name, bias in (("a", "int64"), ("b", "int32"), ("c", None)):
        lib = assert_matches_oracle(_fc16(7, 39, 2, bias), tmp_path / name, n_inputs=2, sanitize=True)
        assert kernel_of(lib)["variant"] == "int16-rows4-s8" and kernel_of(lib)["isa"] == "c"


@pytest.mark.skipif(not QEMU_TOOLS, reason="needs arm-none-eabi-gcc, cmake, ninja and qemu-system-arm")
def test_fully_connected_int16_s8_on_m4(tmp_path):
    """int16-rows4-s8's SXTB16 / SMLAD inline assembly on the emulated Cortex-M4 against TFLM: 3 tail
    rows, 1 tail input and 2 batches; 1003 inputs of +-127 at the int16 extremes (runs into int64)."""
    from microcompiler.boards import load_board
    from microcompiler.compiler import compile_model
    from microcompiler.project import run_on_board

    board = load_board("mps2_an386")
    w = np.full((5, 1003), 127, np.int8)
    w[1::2] = -127
    w[:, :3] = -w[:, :3]
    cases = (
        ("tails", _fc16(11, 37, 2, "int64"), [np.random.default_rng(5).integers(-32768, 32768, (2, 37), np.int16)]),
        ("int64", _fc16(5, 1003, 1, "int64", weights=w), [np.full((1, 1003), -32768, np.int16)]),
    )
    for name, model, inputs in cases:
        path = tmp_path / f"{name}.tflite"
        path.write_bytes(model)
        lib = compile_model(path, features=board.cpu.features)
        assert kernel_of(lib)["variant"] == "int16-rows4-s8" and kernel_of(lib)["isa"] == "dsp"
        _, _, result = run_on_board(lib, board, tmp_path / name, input=inputs, log=lambda _: None)
        np.testing.assert_array_equal(result.outputs[0].reshape(-1), Oracle(model).run(inputs)[0].reshape(-1))


def test_fully_connected_int16_runs_into_int64(tmp_path):
    """1003 inputs of weight +-127: runs of 500 inputs (and the 3 tail inputs) into int64; the extreme
    inputs' sums (about 2^32) would wrap in one int32 sum and flip the saturated outputs' sign."""
    w = np.full((5, 1003), 127, np.int8)
    w[1::2] = -127
    w[:, :3] = -w[:, :3]
    model = _fc16(5, 1003, 1, "int64", weights=w)
    inputs = [[np.full((1, 1003), v, np.int16)] for v in (32767, -32768)]
    lib = assert_matches_oracle(model, tmp_path / "s8", inputs=inputs, features=DSP)
    assert kernel_of(lib)["chunk"] == 500
    lib = assert_matches_oracle(model, tmp_path / "s16", inputs=inputs, features=DSP, tuning=FC_S16)
    assert kernel_of(lib)["chunk"] == 500


def test_int16_kernels_sanitized(tmp_path):
    """ASan + UBSan over the gather borders, the tails and the int64 runs."""
    for name, case, tuning in (
        ("a", "5x3_s3_c2_oc7_pt_relu6", None),
        ("a8", "5x3_s3_c2_oc7_pt_relu6", S8),  # int16-blocks: gathered border pixels, segments written out
        ("d", "3x3_dil2_c5_oc3_nobias", S8),  # a segment per tap, in loops
    ):
        assert_matches_oracle(
            conv_model(dtype="int16", **CONV16_CASES[case]),
            tmp_path / name,
            n_inputs=1,
            sanitize=True,
            features=DSP,
            tuning=tuning,
        )
    for name, params in (
        ("e", DW16_CASES["m3_c2_5x3_same_batch2"]),  # planes per batch, one channel per output
        ("f", dict(hwc=(5, 6, 5))),  # pairs of channels and the odd last one, from a plane
    ):
        assert_matches_oracle(
            conv_model(kind="DEPTHWISE_CONV_2D", dtype="int16", **params),
            tmp_path / name,
            n_inputs=1,
            sanitize=True,
            features=DSP,
        )
    assert_matches_oracle(_fc16(7, 39, 2, "int32"), tmp_path / "b", n_inputs=1, sanitize=True, features=DSP)
    assert_matches_oracle(_fc16(5, 1003, 1, "int64"), tmp_path / "b64", n_inputs=1, sanitize=True, features=DSP)
    assert_matches_oracle(
        conv_model(kind="DEPTHWISE_CONV_2D", dtype="int16", **DW16_CASES["m1_c5_3x3_s2_valid_pt"]),
        tmp_path / "c",
        n_inputs=1,
        sanitize=True,
        features=DSP,
    )


def test_int16_requantization_modes(tmp_path):
    """The epilogue's forms: one SMMULR where |sum + bias| provably fits int32 and the total shift is
    16..32 ("smmulr"), one SMULL where it is smaller (an output scale below twice the product scale:
    "narrow"), the int64 sum and mc_requantize64 where an int64 bias is too large for either
    ("wide"), TFLM's int32 sum with an int32 bias ("int32")."""
    cases = (
        ("s", "int64", 40000, None, "mc_smmlar(t[0] + "),
        ("n", "int64", 40000, 0.02 * 0.01 * 0.7, "mc_requantize64_s32(t[0] + "),
        ("w", "int64", 2**40, None, "mc_requantize64((int64_t)t[0] + "),
        ("i", "int32", 2**30, None, "mc_requantize(mc_wrap_add(t[0], "),
    )
    for name, bias, bias_range, y_scale, call in cases:
        lib = assert_matches_oracle(
            _fc16(6, 21, 2, bias, bias_range=bias_range, y_scale=y_scale), tmp_path / name, n_inputs=2, features=DSP
        )
        assert call in lib.files["src/model_ops.c"]


def _fc16(units, depth, batches, bias, weights=None, seed=0, bias_range=40000, y_scale=None):
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.activation("x", [batches, depth], "int16", scale=0.02, zero_point=0)
    w_data = rng.integers(-127, 128, (units, depth), dtype=np.int8) if weights is None else weights
    w = b.constant("w", w_data, scale=[0.01], zero_point=[0])
    inputs = [x, w]
    if bias:
        inputs.append(
            b.constant(
                "bias", rng.integers(-bias_range, bias_range, units).astype(bias), scale=[0.0002], zero_point=[0]
            )
        )
    y_scale = y_scale or 0.02 * 0.01 * math.sqrt(depth) * 74 * 18900 / 8000
    y = b.activation("y", [batches, units], "int16", scale=y_scale, zero_point=0)
    b.op("FULLY_CONNECTED", inputs, [y], fully_connected_options("NONE"))
    return b.finish([x], [y])


def test_fc_model_int16_takes_the_fast_kernel(tmp_path):
    """The shared FULLY_CONNECTED test model (its int16 variant) runs int16-rows4 too."""
    lib = assert_matches_oracle(fc_model("int16", 2, 37, 11, "RELU", False), tmp_path, n_inputs=1, features=DSP)
    assert kernel_of(lib)["variant"] == "int16-rows4-s8"


@pytest.mark.parametrize(
    "quant",
    [
        [(0.0004, 0), (0.0007, 0), (0.0009, 0)],  # both multipliers below 1/2, output right shift
        [(0.0005, 0), (0.0005, 0), (0.0003, 0)],  # equal scales: multipliers 1/2 exactly (shift 0)
        [(0.00002, 0), (0.0007, 0), (0.00072, 0)],  # one input nearly vanishes
    ],
    ids=["mixed", "equal", "tiny"],
)
def test_add_int16_smmlar_matches_tflm(tmp_path, quant):
    """ADD int16 with the SMMLAR requantization: random inputs, both ends of int16 on both inputs
    (the doubled left-shifted operands at their limits) and a broadcast input."""
    model = binary_model("ADD", "int16", [2, 3, 8], [2, 3, 8], "RELU", quant=quant)
    lo, hi = np.full((2, 3, 8), -32768, np.int16), np.full((2, 3, 8), 32767, np.int16)
    rng = np.random.default_rng(2)
    inputs = [
        [lo, lo],
        [hi, hi],
        [lo, hi],
        [hi, lo],
        [rng.integers(-32768, 32768, (2, 3, 8)).astype(np.int16) for _ in range(2)],
    ]
    lib = assert_matches_oracle(model, tmp_path, inputs=inputs, features=DSP)
    assert "mc_smmlar(" in lib.files["src/model_ops.c"] and kernel_of(lib)["variant"] == "smmlar"
    assert_matches_oracle(
        binary_model("ADD", "int16", [1, 4, 4, 8], [1, 1, 1, 8], quant=quant), tmp_path / "b", n_inputs=2
    )


def _seanet(shared_models: Path, name: str):
    folder = shared_models / "tflm" / "seanet"
    x = np.loadtxt(folder / f"{name}_input0_int16.csv", delimiter=",", dtype=np.int64).astype(np.int16)
    golden = np.loadtxt(folder / f"{name}_golden_int16.csv", delimiter=",", dtype=np.int64)
    return folder / f"{name}.tflite", x, golden


# ---- On the emulated Cortex-M4 ------------------------------------------------------------------


def int16_chain_model(seed=0):
    """CONV 3x3 SAME (3 -> 6 channels) -> DEPTHWISE 3x3 s2 (multiplier 2) -> CONV 1x1 -> FULLY_CONNECTED,
    int16x8 with int64 biases; every intermediate tensor is also a model output."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.activation("x", [1, 6, 7, 3], "int16", scale=0.001, zero_point=0)

    def layer(name, src, src_scale, w_shape, axis, out_shape, taps, kind, options):
        n = w_shape[axis]
        w_scale = rng.uniform(0.004, 0.02, n)
        w = b.constant(
            f"{name}_w", rng.integers(-127, 128, w_shape, dtype=np.int8), scale=w_scale, zero_point=[0] * n, axis=axis
        )
        bias = b.constant(
            f"{name}_b",
            rng.integers(-30000, 30000, n).astype(np.int64),
            scale=list(src_scale * w_scale),
            zero_point=[0] * n,
        )
        scale = src_scale * float(np.mean(w_scale)) * math.sqrt(taps) * 74 * 18900 / 8000
        y = b.activation(name, out_shape, "int16", scale=scale, zero_point=0)
        b.op(kind, [src, w, bias], [y], options)
        return y, scale

    a, s = layer("a", x, 0.001, (6, 3, 3, 3), 0, [1, 6, 7, 6], 27, "CONV_2D", conv2d_options("SAME", activation="RELU"))
    d, s = layer(
        "d",
        a,
        s,
        (1, 3, 3, 12),
        3,
        [1, 3, 4, 12],
        9,
        "DEPTHWISE_CONV_2D",
        depthwise_options("SAME", stride=(2, 2), depth_multiplier=2),
    )
    p, s = layer("p", d, s, (5, 1, 1, 12), 0, [1, 3, 4, 5], 12, "CONV_2D", conv2d_options("VALID"))
    w_scale = 0.01
    w = b.constant("f_w", rng.integers(-127, 128, (7, 60), dtype=np.int8), scale=[w_scale], zero_point=[0])
    bias = b.constant("f_b", rng.integers(-3000, 3000, 7).astype(np.int64), scale=[s * w_scale], zero_point=[0])
    f = b.activation("f", [1, 7], "int16", scale=s * w_scale * math.sqrt(60) * 40, zero_point=0)
    flat = b.activation("flat", [1, 60], "int16", scale=s, zero_point=0)
    b.op("RESHAPE", [p, b.constant("shape", np.array([1, 60], np.int32))], [flat], reshape_options([1, 60]))
    b.op("FULLY_CONNECTED", [flat, w, bias], [f], fully_connected_options("NONE"))
    return b.finish([x], [a, d, p, f])


def test_int16_chain_on_host(tmp_path):
    lib = assert_matches_oracle(int16_chain_model(), tmp_path, n_inputs=2, features=DSP)
    variants = [o["kernel"]["variant"] for o in lib.metadata["operators"] if o["kind"] != "RESHAPE"]
    assert variants == ["int16-pixel", "int16-pair-planes", "int16-blocks", "int16-rows4-s8"]  # 6 x 7: mostly border


@pytest.mark.skipif(not QEMU_TOOLS, reason="needs arm-none-eabi-gcc, cmake, ninja and qemu-system-arm")
def test_int16_chain_and_seanet_on_m4(tmp_path, shared_models):
    """The SMLAD inline assembly on the emulated Cortex-M4: the chain (every tensor compared with
    TFLM) and seanet conv3 against its golden output."""
    from microcompiler.boards import load_board
    from microcompiler.compiler import compile_model
    from microcompiler.inputs import random_inputs
    from microcompiler.project import run_on_board

    board = load_board("mps2_an386")
    path = tmp_path / "chain16.tflite"
    path.write_bytes(int16_chain_model(seed=1))
    lib = compile_model(path, features=board.cpu.features)
    assert {o["kernel"].get("isa") for o in lib.metadata["operators"]} - {None} == {"dsp"}
    inputs = random_inputs(lib.info.inputs, seed=7)
    _, _, result = run_on_board(lib, board, tmp_path / "chain", input=inputs, log=lambda _: None)
    want = Oracle(path.read_bytes()).run(inputs)
    assert len(result.outputs) == len(want) == 4
    for k, (ours, exp) in enumerate(zip(result.outputs, want)):
        np.testing.assert_array_equal(ours.reshape(-1), exp.reshape(-1), err_msg=f"output {k}")
    path, x, golden = _seanet(shared_models, "conv3")
    lib = compile_model(path, features=board.cpu.features)
    _, _, result = run_on_board(
        lib, board, tmp_path / "seanet", input=[x.reshape(lib.info.inputs[0].shape)], log=lambda _: None
    )
    np.testing.assert_array_equal(result.outputs[0].reshape(-1), golden.reshape(-1))
    # the int16x8 DS-CNN: int16-pixel, int16-pair-planes (widened weights, planes) and int16-blocks
    path = KERAS / "ds_cnn_int16x8.tflite"
    lib = compile_model(path, features=board.cpu.features)
    inputs = random_inputs(lib.info.inputs, seed=3)
    _, _, result = run_on_board(lib, board, tmp_path / "ds_cnn", input=inputs, log=lambda _: None)
    np.testing.assert_array_equal(result.outputs[0].reshape(-1), Oracle(path.read_bytes()).run(inputs)[0].reshape(-1))


KERAS = Path(__file__).resolve().parent / "models" / "keras"


@pytest.mark.parametrize("name", ["ds_cnn_int16x8", "conv_autoencoder_int16x8"])
def test_int16x8_lookalikes_keep_the_model_file_weights(tmp_path, name):
    """The 16x8 look-alikes made with the real converter (scripts/keras_int16x8.py), with the DSP
    kernels: bit-exact with TFLM, and every convolution that takes int16-blocks or int16-pair-planes
    stores its weights at the model file's int8 size (plus the per-segment padding to even)."""
    model = (KERAS / f"{name}.tflite").read_bytes()
    lib = assert_matches_oracle(model, tmp_path, n_inputs=2, features=DSP)
    kernels = [o["kernel"]["variant"] for o in lib.metadata["operators"] if o["kind"].endswith("CONV_2D")]
    widened = {"int16-blocks", "int16-pair-planes"}
    assert widened & set(kernels)
    assert all(k in widened | {"int16-pixel", "reference"} for k in kernels)
    if name == "ds_cnn_int16x8":  # the first layer (10 x 4 on 49 x 10 x 1, mostly border pixels): int16-pixel
        assert kernels == ["int16-pixel"] + ["int16-pair-planes", "int16-blocks"] * 4
