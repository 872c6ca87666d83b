"""The fast int8 kernels (ops/fast/, kernel_simd.h) against the TFLM oracle, bit for bit.

Host sweeps pick shapes that hit every tail of the unrolled loops: output pixels % 4 (the 4-pixel
im2col block), K / 4 % 4 (the unroll-4 dot loop), output rows % 4 and depth % 4 (FULLY_CONNECTED
rows4), padded and interior pixels, both im2col gathers (whole taps, bytes), the int16-weight knob,
the fallback to the reference requantization, and extreme inputs. On the host the DSP
instructions run as portable C; features={"dsp"} selects the DSP-only variants (int16
FULLY_CONNECTED weights, SXTAB16 average pooling).

The QEMU part runs multi-operator models whose every intermediate tensor is a model output on the
emulated Cortex-M4 (the DSP inline assembly), Cortex-M3 (portable C) and with the int16 conv
weights, and compares every output element with TFLM.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from harness import assert_matches_oracle, compile_bytes
from model_builder import (
    ModelBuilder,
    add_options,
    conv2d_options,
    depthwise_options,
    fully_connected_options,
    pool_options,
)
from oracle import Oracle
from test_fully_connected import fc_model
from test_op_conv_2d import conv_model
from test_op_pooling import pool_model

DSP = frozenset({"dsp"})


def kernel_of(lib, i=0):
    return lib.metadata["operators"][i]["kernel"]


# ---- CONV_2D im2col ---------------------------------------------------------------------------

CONV_CASES = {
    # (pixels % 4, K / 4 % 4): taps gather (channels % 4 == 0)
    "taps_1x1_px0_k0": dict(hwc=(4, 4, 16), kernel=(1, 1), out_c=5, padding="VALID"),
    "taps_1x1_px1_k1": dict(hwc=(3, 3, 4), kernel=(1, 1), out_c=3, padding="VALID", input_zp=-128),
    "taps_1x1_px2_k2": dict(hwc=(2, 3, 8), kernel=(1, 1), out_c=6, padding="VALID", activation="RELU"),
    "taps_1x1_px3_k3": dict(hwc=(1, 7, 12), kernel=(1, 1), out_c=2, padding="VALID", per_channel=False),
    "taps_3x3_same_border": dict(hwc=(5, 6, 4), out_c=9, input_zp=100, activation="RELU6"),
    "taps_3x3_s2_same": dict(hwc=(7, 9, 8), out_c=4, stride=(2, 2), input_zp=-128, activation="RELU"),
    "taps_3x3_dilation": dict(hwc=(7, 8, 4), out_c=3, dilation=(2, 2), input_zp=17),
    "taps_5x3_s3_batch2": dict(hwc=(8, 7, 4), kernel=(5, 3), out_c=6, stride=(3, 2), batches=2),
    "taps_kernel_bigger": dict(hwc=(2, 3, 4), kernel=(4, 5), out_c=3, bias=None, activation="RELU_N1_TO_1"),
    # bytes gather (channels % 4 != 0), like the first layers of KWS and IC
    "bytes_10x4_s2_c1": dict(hwc=(13, 10, 1), kernel=(10, 4), out_c=8, stride=(2, 2), input_zp=83, activation="RELU"),
    "bytes_3x3_c3": dict(hwc=(6, 5, 3), out_c=16, input_zp=-128, activation="RELU"),
    "bytes_3x3_c5_valid": dict(hwc=(6, 7, 5), out_c=3, padding="VALID", output_zp=-100),
    "bytes_dilated_c2": dict(hwc=(9, 9, 2), kernel=(3, 2), out_c=5, dilation=(2, 3), stride=(1, 2)),
}


IM2COL_TUNING = {"CONV_2D": {"variant": "im2col"}}


@pytest.mark.parametrize("case", list(CONV_CASES))
def test_conv_im2col_matches_tflm(tmp_path, case):
    # portable C takes "packed" where it applies (tests/test_portable_kernels.py): im2col when tuned so
    lib = assert_matches_oracle(conv_model(**CONV_CASES[case]), tmp_path, n_inputs=3, tuning=IM2COL_TUNING)
    assert kernel_of(lib)["variant"] == "im2col"
    assert kernel_of(lib)["gather"] == ("taps" if case.startswith("taps") else "bytes")


@pytest.mark.parametrize("case", ["taps_3x3_same_border", "bytes_3x3_c5_valid", "taps_5x3_s3_batch2"])
def test_conv_im2col_channel_pairs_sanitized(tmp_path, case):
    """Portable C, columns of at least 9 groups: 2 output channels per pass (mc_dot_p4x2_s8, signed
    sums) on the full groups of 4 pixels, an odd last channel and the pixel tail with mc_dot_p4;
    under ASan + UBSan."""
    from microcompiler.ops.fast.conv_2d_im2col import PAIRS_MIN_STEPS

    lib = assert_matches_oracle(
        conv_model(**CONV_CASES[case]), tmp_path, n_inputs=3, sanitize=True, tuning=IM2COL_TUNING
    )
    assert kernel_of(lib)["variant"] == "im2col" and kernel_of(lib)["isa"] == "c"
    source = "".join(text for rel, text in lib.files.items() if rel.endswith(".c"))
    assert "mc_dot_p4x2_s8(" in source and PAIRS_MIN_STEPS <= 9


# CONV_2D 1x1, stride 1, no padding, output channels in blocks of 4, without the DSP extension: the
# "pointwise" kernel (2 pixels x 4 output channels; an odd last pixel; depth % 4 inputs first).
POINTWISE_CASES = {
    "odd_pixels_relu": dict(hwc=(3, 3, 16), kernel=(1, 1), out_c=8, padding="VALID", activation="RELU", input_zp=-128),
    "batch2_per_tensor": dict(hwc=(2, 3, 12), kernel=(1, 1), out_c=4, batches=2, per_channel=False, output_zp=-100),
    "depth7_relu6": dict(hwc=(1, 5, 7), kernel=(1, 1), out_c=12, padding="SAME", activation="RELU6", input_zp=17),
}


@pytest.mark.parametrize("case", list(POINTWISE_CASES))
def test_conv_pointwise_matches_tflm(tmp_path, case):
    lib = assert_matches_oracle(
        conv_model(**POINTWISE_CASES[case]), tmp_path, n_inputs=3, sanitize=case == "depth7_relu6"
    )
    assert kernel_of(lib)["variant"] == "pointwise"
    assert kernel_of(lib)["isa"] == "c"


def test_conv_pointwise_only_where_it_applies(tmp_path):
    """A stride of 2: packed; output channels not in blocks of 4 or the DSP extension: im2col."""

    def variant(features=frozenset(), **kw):
        model = conv_model(**{"hwc": (4, 4, 8), "kernel": (1, 1), "padding": "VALID", **kw})
        return kernel_of(compile_bytes(model, tmp_path / str(len(list(tmp_path.iterdir()))), features=features))[
            "variant"
        ]

    assert variant(out_c=8) == "pointwise"
    assert variant(out_c=8, stride=(2, 2)) == "packed"
    assert variant(out_c=6) == "im2col"
    assert variant(features=DSP, out_c=8) == "im2col"


@pytest.mark.parametrize("case", ["taps_3x3_same_border", "bytes_3x3_c3", "taps_1x1_px3_k3"])
def test_conv_im2col_int16_weights(tmp_path, case):
    """The "weights": "s16" knob (tuning override): int16 pairs, doubled with the bias."""
    path = tmp_path / "m.tflite"
    path.write_bytes(conv_model(**CONV_CASES[case]))
    _check_library(path, tmp_path, tuning={"CONV_2D": {"weights": "s16"}}, expect={"weights": "s16"})


def _check_library(
    path: Path, tmp_path: Path, tuning=None, expect=None, features=DSP, n_inputs=3, sanitize=False, inputs=None
):
    """assert_matches_oracle for a library compiled with tuning overrides."""
    from microcompiler.compiler import compile_model
    from microcompiler.host import HostProgram
    from microcompiler.inputs import random_inputs

    lib = compile_model(path, features=features, tuning=tuning)
    for k, v in (expect or {}).items():
        assert kernel_of(lib)[k] == v
    if inputs is None:
        inputs = [random_inputs(lib.info.inputs, seed=s) for s in range(n_inputs)]
    got = HostProgram(lib, tmp_path / "build", sanitize=sanitize).run(inputs)
    oracle = Oracle(path.read_bytes())
    for run, input_set in zip(got, inputs):
        for ours, want in zip(run.outputs, oracle.run(input_set)):
            np.testing.assert_array_equal(ours, want.reshape(ours.shape))
    return lib


@pytest.mark.parametrize("kind", ["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"])
def test_reference_requantization_fallback(tmp_path, kind):
    """A multiplier >= 0.5 (shift >= 0) is outside mc_requant_fast: the kernels fall back to
    mc_requantize and stay exact."""
    lib = assert_matches_oracle(_tiny_output_scale(kind), tmp_path, n_inputs=3, features=DSP)
    assert kernel_of(lib)["requant"] == "reference"
    assert kernel_of(compile_bytes(conv_model(), tmp_path / "f"))["requant"] == "smmlar"


def _tiny_output_scale(kind):
    rng = np.random.default_rng(3)
    b = ModelBuilder()
    x = b.activation("x", [1, 3, 5, 4] if kind != "FULLY_CONNECTED" else [2, 12], "int8", scale=0.02, zero_point=-3)
    w_shape = {"CONV_2D": (6, 1, 1, 4), "DEPTHWISE_CONV_2D": (1, 3, 3, 4), "FULLY_CONNECTED": (6, 12)}[kind]
    n = 4 if kind == "DEPTHWISE_CONV_2D" else 6
    w_scale = rng.uniform(0.002, 0.02, n)
    w = b.constant(
        "w",
        rng.integers(-127, 128, w_shape, dtype=np.int8),
        scale=w_scale,
        zero_point=[0] * n,
        axis=3 if kind == "DEPTHWISE_CONV_2D" else 0,
    )
    bias = b.constant("b", rng.integers(-300, 300, n).astype(np.int32), scale=list(0.02 * w_scale), zero_point=[0] * n)
    y_shape = {"CONV_2D": [1, 3, 5, 6], "DEPTHWISE_CONV_2D": [1, 3, 5, 4], "FULLY_CONNECTED": [2, 6]}[kind]
    y = b.activation("y", y_shape, "int8", scale=0.00005, zero_point=5)
    options = {
        "CONV_2D": conv2d_options("VALID"),
        "DEPTHWISE_CONV_2D": depthwise_options("SAME"),
        "FULLY_CONNECTED": fully_connected_options(),
    }[kind]
    b.op(kind, [x, w, bias], [y], options)
    return b.finish([x], [y])


def test_conv_extreme_inputs(tmp_path):
    """All-minimum and all-maximum inputs: the largest accumulators the bound allows."""
    model = conv_model(hwc=(6, 6, 16), out_c=8, input_zp=-128, bias=None, weights=np.full((8, 3, 3, 16), 127, np.int8))
    inputs = [[np.full((1, 6, 6, 16), v, np.int8)] for v in (-128, 127, 0)]
    assert_matches_oracle(model, tmp_path, inputs=inputs)


def test_fast_kernels_sanitized(tmp_path):
    """ASan + UBSan over the im2col borders and tails, channels4 borders and rows4 tails."""
    assert_matches_oracle(conv_model(**CONV_CASES["bytes_10x4_s2_c1"]), tmp_path / "a", n_inputs=2, sanitize=True)
    assert_matches_oracle(conv_model(**CONV_CASES["taps_3x3_s2_same"]), tmp_path / "b", n_inputs=2, sanitize=True)
    assert_matches_oracle(
        conv_model(kind="DEPTHWISE_CONV_2D", hwc=(5, 4, 8), stride=(2, 1)), tmp_path / "c", n_inputs=2, sanitize=True
    )
    assert_matches_oracle(
        fc_model("int8", 2, 23, 7, "RELU", True), tmp_path / "d", n_inputs=2, sanitize=True, features=DSP
    )


# ---- DEPTHWISE_CONV_2D channels4 ---------------------------------------------------------------

DW_CASES = {
    "c4_3x3_same": dict(hwc=(4, 5, 4), input_zp=-128, activation="RELU"),
    "c8_3x3_s2_pt": dict(hwc=(7, 6, 8), stride=(2, 2), per_channel=False, input_zp=50),
    "c12_5x3_s3_relu6": dict(hwc=(8, 9, 12), kernel=(5, 3), stride=(3, 3), activation="RELU6"),
    "c4_dilation_batch2": dict(hwc=(8, 8, 4), dilation=(2, 2), batches=2, bias=None),
    "c8_kernel_bigger": dict(hwc=(2, 3, 8), kernel=(4, 5), activation="RELU_N1_TO_1", input_zp=127),
    "c16_valid": dict(hwc=(5, 5, 16), padding="VALID", input_zp=0),
}


CHANNELS4_TUNING = {"DEPTHWISE_CONV_2D": {"variant": "channels4"}}


@pytest.mark.parametrize("case", list(DW_CASES))
def test_depthwise_channels4_matches_tflm(tmp_path, case):
    # portable C takes "rows" where it applies (tests/test_portable_kernels.py): channels4 when tuned so
    lib = assert_matches_oracle(
        conv_model(kind="DEPTHWISE_CONV_2D", **DW_CASES[case]), tmp_path, n_inputs=3, tuning=CHANNELS4_TUNING
    )
    assert kernel_of(lib)["variant"] == "channels4"


def test_depthwise_large_offsets(tmp_path):
    """Tap offsets beyond the 4095-byte immediate of LDR (wide rows)."""
    lib = assert_matches_oracle(
        conv_model(kind="DEPTHWISE_CONV_2D", hwc=(3, 40, 64), input_zp=-128),
        tmp_path,
        n_inputs=2,
        tuning=CHANNELS4_TUNING,
    )
    assert kernel_of(lib)["variant"] == "channels4"


# ---- FULLY_CONNECTED rows4 -------------------------------------------------------------------


@pytest.mark.parametrize("features", [frozenset(), DSP], ids=["c", "dsp"])
@pytest.mark.parametrize("units,depth", [(4, 16), (5, 17), (6, 18), (7, 19), (3, 3), (9, 2)])
def test_fully_connected_rows4_tails(tmp_path, features, units, depth):
    lib = assert_matches_oracle(
        fc_model("int8", 2, depth, units, "RELU6", units % 2 == 1, input_zp=-128),
        tmp_path,
        n_inputs=2,
        features=features,
    )
    assert kernel_of(lib)["variant"] == "rows4"
    assert kernel_of(lib)["weights"] == "s8"
    # without the lanes encoding: row by row (layers this small do not take mc_dot_r4_s8i)
    assert kernel_of(lib).get("extract") == ("lanes" if features and depth >= 4 else None)


@pytest.mark.parametrize("units,depth", [(8, 128), (9, 131), (6, 203)])
def test_fully_connected_interleaved_portable(tmp_path, units, depth):
    """Portable C, at least 1,024 weights, {"extract": "interleaved"}: mc_dot_r4_s8i (depth % 8 inputs
    first, 8 per iteration; rows % 4 row by row), under ASan + UBSan (its signed sums). The default
    "pairs" kernel: tests/test_portable_pairs.py."""
    lib = assert_matches_oracle(
        fc_model("int8", 2, depth, units, "RELU", units % 2 == 1, input_zp=-128),
        tmp_path,
        n_inputs=3,
        sanitize=True,
        tuning={"FULLY_CONNECTED": {"extract": "interleaved"}},
    )
    assert kernel_of(lib)["extract"] == "interleaved" and kernel_of(lib)["isa"] == "c"


@pytest.mark.parametrize("units,depth", [(5, 17), (8, 4), (3, 9)])
def test_fully_connected_rows4_int8_weights_with_dsp(tmp_path, units, depth):
    """The "weights": "s8" knob on a DSP target (SXTB16 in the loop, half the flash of s16)."""
    path = tmp_path / "fc.tflite"
    path.write_bytes(fc_model("int8", 2, depth, units, "RELU", True, input_zp=-128))
    _check_library(
        path, tmp_path, tuning={"FULLY_CONNECTED": {"weights": "s8"}}, expect={"weights": "s8", "isa": "dsp"}
    )


# The lanes kernel in chunks of the depth: partial sums in the scratch, a shorter last chunk, the
# depth % 4 tail inputs, rows % 4 tail rows, batches; host build with ASan + UBSan.
FC_CHUNK_CASES = {
    # (units, depth, chunk knob): chunk 128 inputs is the default above 256 B of expanded input
    "default_3_chunks_tail1": (7, 301, None),
    "knob8_2_chunks_tail2": (5, 18, 8),
    "knob12_4_chunks_tail3": (6, 43, 12),
    "knob4_every_step_tail1": (9, 17, 4),
    "knob10_rounds_to_8": (4, 36, 10),
    "knob64_3_chunks_exact": (8, 192, 64),
}


@pytest.mark.parametrize("case", list(FC_CHUNK_CASES))
def test_fully_connected_lanes_chunked(tmp_path, case):
    from microcompiler.ops import fast

    units, depth, knob = FC_CHUNK_CASES[case]
    path = tmp_path / "fc.tflite"
    path.write_bytes(fc_model("int8", 2, depth, units, "RELU6", units % 2 == 0, input_zp=-128, seed=units))
    chunk = knob // 4 * 4 if knob else 4 * (fast.LANES_CHUNK_BUDGET // 8)
    steps = depth // 4
    lib = _check_library(
        path,
        tmp_path,
        tuning=None if knob is None else {"FULLY_CONNECTED": {"chunk": knob}},
        expect={"extract": "lanes", "chunk": chunk},
        sanitize=True,
    )
    assert lib.metadata["scratch_bytes"] == 2 * chunk + 4 * units
    assert kernel_of(lib)["scratch_bytes"] == fast.lanes_scratch_bytes(steps, units, chunk // 4)


def test_fully_connected_lanes_chunk_knob_off_and_extremes(tmp_path):
    """{"chunk": 0} runs the depth in one pass; a chunked layer with all-extreme inputs."""
    path = tmp_path / "fc.tflite"
    path.write_bytes(fc_model("int8", 1, 300, 6, "NONE", False, input_zp=3))
    lib = _check_library(
        path, tmp_path / "off", tuning={"FULLY_CONNECTED": {"chunk": 0}}, expect={"extract": "lanes", "chunk": 0}
    )
    assert lib.metadata["scratch_bytes"] == 8 * 75
    inputs = [[np.full((1, 300), v, np.int8)] for v in (-128, 127)]
    lib = _check_library(path, tmp_path / "on", expect={"extract": "lanes", "chunk": 128}, inputs=inputs)
    assert lib.metadata["scratch_bytes"] == 256 + 4 * 6


def test_fully_connected_lanes_chunk_only_when_smaller(tmp_path):
    """Many rows: the partial sums would cost more scratch than the whole expanded input."""
    path = tmp_path / "fc.tflite"
    path.write_bytes(fc_model("int8", 1, 160, 96, "RELU", False))
    lib = _check_library(path, tmp_path, expect={"extract": "lanes", "chunk": 0}, n_inputs=1)
    assert lib.metadata["scratch_bytes"] == 8 * 40


# ---- AVERAGE_POOL_2D sxtab16 -------------------------------------------------------------------


def test_average_pool_sxtab16_extremes(tmp_path):
    """255 taps of -128 or 127 fill the int16 lanes almost to the limit."""
    model = pool_model("AVERAGE_POOL_2D", "int8", [1, 15, 17, 8], (15, 17), (1, 1), "VALID")
    inputs = [[np.full((1, 15, 17, 8), v, np.int8)] for v in (-128, 127)]
    inputs.append([np.random.default_rng(0).integers(-128, 128, (1, 15, 17, 8), dtype=np.int8)])
    lib = assert_matches_oracle(model, tmp_path, inputs=inputs, features=DSP)
    assert kernel_of(lib)["variant"] == "sxtab16"
    lib = assert_matches_oracle(
        pool_model("AVERAGE_POOL_2D", "int8", [2, 6, 6, 8], (3, 2), (2, 2), "VALID", activation="RELU6"),
        tmp_path / "b",
        features=DSP,
    )
    assert kernel_of(lib)["variant"] == "sxtab16"


# ---- Whole networks with every tensor an output, on the emulated boards ------------------------


def _quantized_conv(
    b, name, x, x_scale, in_c, kernel, out_c, options, depthwise=False, per_channel=True, out_zp=0, rng=None, spread=60
):
    taps = kernel[0] * kernel[1] * (1 if depthwise else in_c)
    w_shape = (1, *kernel, out_c) if depthwise else (out_c, *kernel, in_c)
    w_scale = rng.uniform(0.004, 0.02, out_c if per_channel else 1)
    w = b.constant(
        f"{name}_w",
        rng.integers(-127, 128, w_shape, dtype=np.int8),
        scale=w_scale,
        zero_point=[0] * len(w_scale),
        axis=3 if depthwise else 0,
    )
    bias_scales = x_scale * (w_scale if per_channel else np.full(out_c, w_scale[0]))
    bias = b.constant(
        f"{name}_b", rng.integers(-2000, 2000, out_c).astype(np.int32), scale=list(bias_scales), zero_point=[0] * out_c
    )
    return [x, w, bias], x_scale * float(np.mean(w_scale)) * math.sqrt(taps) * spread


def chain_model(seed=0):
    """CONV (bytes gather) -> DEPTHWISE s2 -> two 1x1 CONVs -> ADD; DEPTHWISE -> 3x3 VALID CONV (taps),
    AVERAGE_POOL, FULLY_CONNECTED x2. Every intermediate tensor is also a model output."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.activation("x", [1, 7, 9, 3], "int8", scale=0.05, zero_point=-7)
    ins, s = _quantized_conv(b, "a", x, 0.05, 3, (3, 3), 12, None, rng=rng, spread=12)
    a = b.activation("a", [1, 7, 9, 12], "int8", scale=s, zero_point=-128)
    b.op("CONV_2D", ins, [a], conv2d_options("SAME", activation="RELU6"))
    ins, s2 = _quantized_conv(
        b, "dw", a, s, 12, (3, 3), 12, None, depthwise=True, per_channel=False, rng=rng, spread=45
    )
    d = b.activation("d", [1, 4, 5, 12], "int8", scale=s2, zero_point=-128)
    b.op("DEPTHWISE_CONV_2D", ins, [d], depthwise_options("SAME", stride=(2, 2), activation="RELU"))
    outs = []
    for name in ("p1", "p2"):
        ins, s3 = _quantized_conv(b, name, d, s2, 12, (1, 1), 7, None, rng=rng)
        t = b.activation(name, [1, 4, 5, 7], "int8", scale=s3, zero_point=int(rng.integers(-20, 20)))
        b.op("CONV_2D", ins, [t], conv2d_options("VALID"))
        outs.append((t, s3))
    added = b.activation("sum", [1, 4, 5, 7], "int8", scale=max(outs[0][1], outs[1][1]) * 1.5, zero_point=3)
    b.op("ADD", [outs[0][0], outs[1][0]], [added], add_options("NONE"))
    ins, s4 = _quantized_conv(b, "v", d, s2, 12, (3, 3), 5, None, rng=rng)
    v = b.activation("v", [1, 2, 3, 5], "int8", scale=s4, zero_point=-2)
    b.op("CONV_2D", ins, [v], conv2d_options("VALID"))
    pooled = b.activation("pool", [1, 2, 2, 12], "int8", scale=s2, zero_point=-128)
    b.op("AVERAGE_POOL_2D", [d], [pooled], pool_options((2, 2), (2, 2), "VALID"))
    fcs = []
    for name, src, src_scale, depth, units, batch in (
        ("f1", added, max(outs[0][1], outs[1][1]) * 1.5, 140, 11, 1),
        ("f2", pooled, s2, 12, 6, 4),
    ):
        w_scale = 0.01
        w = b.constant(
            f"{name}_w", rng.integers(-127, 128, (units, depth), dtype=np.int8), scale=[w_scale], zero_point=[0]
        )
        bias = b.constant(
            f"{name}_b", rng.integers(-500, 500, units).astype(np.int32), scale=[src_scale * w_scale], zero_point=[0]
        )
        y = b.activation(name, [batch, units], "int8", scale=src_scale * w_scale * math.sqrt(depth) * 60, zero_point=1)
        b.op("FULLY_CONNECTED", [src, w, bias], [y], fully_connected_options("NONE"))
        fcs.append(y)
    return b.finish([x], [a, d, outs[0][0], outs[1][0], added, v, pooled, *fcs])


def test_chain_model_on_host(tmp_path):
    for features in (frozenset(), DSP):
        lib = assert_matches_oracle(
            chain_model(), tmp_path / "-".join(features or ["c"]), n_inputs=3, features=features
        )
        kinds = {o["kind"]: o["kernel"]["variant"] for o in lib.metadata["operators"]}
        # portable C: DEPTHWISE_CONV_2D rows (tests/test_portable_kernels.py)
        assert kinds["CONV_2D"] == "im2col" and kinds["DEPTHWISE_CONV_2D"] == ("channels4" if features else "rows")


QEMU_TOOLS = all(shutil.which(t) for t in ("arm-none-eabi-gcc", "cmake", "ninja", "qemu-system-arm"))


@pytest.mark.skipif(not QEMU_TOOLS, reason="needs arm-none-eabi-gcc, cmake, ninja and qemu-system-arm")
@pytest.mark.parametrize(
    "board,tuning",
    [
        ("mps2_an386", None),
        ("mps2_an386", {"CONV_2D": {"weights": "s16"}, "FULLY_CONNECTED": {"weights": "s8", "chunk": 32}}),
        ("mps2_an500", None),
        ("mps2_an385", None),
    ],
    ids=["m4", "m4-knobs", "m7", "m3"],
)
def test_chain_model_on_device_matches_tflm(tmp_path, board, tuning):
    """The DSP inline assembly (M4, M7) and the portable C (M3), every intermediate tensor compared.
    With the knobs, the 140-input FULLY_CONNECTED runs the lanes kernel in 5 chunks (the last short)."""
    from microcompiler.boards import load_board
    from microcompiler.compiler import compile_model

    path = tmp_path / "chain.tflite"
    path.write_bytes(chain_model(seed=1))
    b = load_board(board)
    lib = compile_model(path, features=b.cpu.features, tuning=tuning)
    isa = {o["kernel"].get("isa") for o in lib.metadata["operators"]} - {None}
    assert isa == ({"dsp"} if "dsp" in b.cpu.features else {"c"})
    if tuning:
        assert [o["kernel"].get("chunk") for o in lib.metadata["operators"] if o["kind"] == "FULLY_CONNECTED"] == [
            32,
            0,
        ]
    assert_device_matches_tflm(path, lib, b, tmp_path, outputs=9, seed=7)


def assert_device_matches_tflm(path: Path, lib, board, tmp_path: Path, outputs: int, seed: int) -> None:
    """Run ``lib`` (compiled from ``path``) on ``board`` with seeded random inputs: every one of its
    ``outputs`` outputs equal to TFLM's."""
    from microcompiler.inputs import random_inputs
    from microcompiler.project import run_on_board

    inputs = random_inputs(lib.info.inputs, seed=seed)
    _, _, result = run_on_board(lib, board, tmp_path / "project", input=inputs, log=lambda _: None)
    want = Oracle(path.read_bytes()).run(inputs)
    assert len(result.outputs) == len(want) == outputs
    for k, (ours, exp) in enumerate(zip(result.outputs, want)):
        np.testing.assert_array_equal(ours.reshape(-1), exp.reshape(-1), err_msg=f"output {k}")
