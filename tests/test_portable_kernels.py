"""The portable C kernels of cores without the DSP extension (kernel_portable.h) against the TFLM
oracle, bit for bit, on both of their paths: with the long multiply (the host, the Cortex-M3: two
pixels packed per input word, one SMLAL per 2 MACs) and without it (MC_LONG_MULTIPLY=0, what the
Cortex-M0/M0+ compile: int32 multiply-accumulates on the same weights and records).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from harness import assert_matches_oracle, compile_bytes
from oracle import Oracle
from test_op_conv_2d import conv_model

from microcompiler.host import HostProgram
from microcompiler.inputs import random_inputs
from microcompiler.ops.fast import conv_2d_packed as packed
from microcompiler.ops.fast.conv_2d_packed import _geom
from microcompiler.ops.fast.conv_2d_pointwise import MAX_LANE_BITS, lane_bits
from microcompiler.ops.geometry import ConvGeometry

PACKED_CASES = {
    "3x3_same_border_odd": dict(hwc=(5, 3, 4), out_c=8, input_zp=100, activation="RELU6"),
    "3x3_s2_relu": dict(hwc=(7, 9, 8), out_c=4, stride=(2, 2), input_zp=-128, activation="RELU"),
    "dilated_c2": dict(hwc=(9, 9, 2), kernel=(3, 2), out_c=12, dilation=(2, 3), stride=(1, 2)),
    "10x4_s2_c1": dict(hwc=(13, 10, 1), kernel=(10, 4), out_c=8, stride=(2, 2), input_zp=83, activation="RELU"),
    "5x3_s3_batch2": dict(hwc=(8, 7, 4), kernel=(5, 3), out_c=4, stride=(3, 2), batches=2, output_zp=-100),
    "3x3_c3_k27": dict(hwc=(6, 5, 3), out_c=16, input_zp=-128, activation="RELU"),  # K % 4 = 3: the head loop
    # with an interior (mc_pack2_pair_s8: one run per kernel row where both pixels are inside)
    "3x3_c3_interior": dict(hwc=(9, 10, 3), out_c=8, input_zp=-128, activation="RELU"),
    "3x3_c5_odd_rows_straddled": dict(hwc=(9, 9, 5), out_c=4, input_zp=7, activation="RELU6"),
    "3x3_s2_c8_interior": dict(hwc=(11, 12, 8), out_c=8, stride=(2, 2), output_zp=5),
    "3x3_dilated_h_interior": dict(hwc=(12, 10, 4), out_c=4, dilation=(2, 1), input_zp=-3),
    "3x3_valid_batch2": dict(hwc=(7, 8, 2), out_c=4, padding="VALID", batches=2, input_zp=50),
}
POINTWISE_CASES = {
    "odd_pixels": dict(hwc=(3, 3, 16), kernel=(1, 1), out_c=8, padding="VALID", activation="RELU", input_zp=-128),
    "depth7": dict(hwc=(1, 5, 7), kernel=(1, 1), out_c=12, padding="SAME", activation="RELU6", input_zp=17),
    # 4 pixels per step with the long multiply (mc_dot_x4r2_s8i): every remainder of the pixels by 4
    # (3: a step of 4 with the last pixel again; 1 or 2: a 2-pixel step, mc_dot_x2r4_s8i)
    "pixels8_depth5": dict(hwc=(2, 4, 5), kernel=(1, 1), out_c=4, padding="VALID", input_zp=-7),
    "pixels6_batch2": dict(hwc=(1, 3, 12), kernel=(1, 1), out_c=8, padding="VALID", batches=2, output_zp=9),
    "pixels7": dict(hwc=(7, 1, 9), kernel=(1, 1), out_c=4, padding="VALID", activation="RELU", input_zp=60),
    "pixel1": dict(hwc=(1, 1, 20), kernel=(1, 1), out_c=4, padding="VALID", input_zp=-128),
}


def kernel_of(lib):
    return lib.metadata["operators"][0]["kernel"]


@pytest.mark.parametrize("runs", [0, 1])
@pytest.mark.parametrize("case", list(PACKED_CASES))
def test_conv_packed_matches_tflm(tmp_path, monkeypatch, case, runs):
    """Both packings: the layer's own code (runs 0) and kernel_portable.h's mc_pack2_pair_s8 (runs 1:
    what a model with RUNS_MIN_LAYERS packed layers takes), 2 pixels per step (no quads)."""
    monkeypatch.setattr(packed, "RUNS_MIN_LAYERS", 1 if runs else 2)
    monkeypatch.setattr(packed, "QUADS_FREE_BYTES", 0)
    lib = assert_matches_oracle(
        conv_model(**PACKED_CASES[case]), tmp_path, n_inputs=3, sanitize=case == "3x3_same_border_odd"
    )
    kernel = kernel_of(lib)
    assert kernel["variant"] == "packed" and kernel["isa"] == "c" and 0 < kernel["lane"] <= MAX_LANE_BITS
    assert kernel["runs"] == runs
    assert "mc_dot_x2r4_s8i(" in lib.files["src/model_ops.c"]
    assert ("mc_pack2_pair_s8(" in lib.files["src/model_ops.c"]) == bool(runs)


# 4 pixels per step (quads): every remainder of the pixels by 4, interiors of 4 pixels on a row
QUADS_CASES = [
    "3x3_same_border_odd",  # 15 pixels: a last step of 3
    "3x3_s2_relu",  # 20: none
    "dilated_c2",  # dilation across: no interior
    "10x4_s2_c1",
    "5x3_s3_batch2",  # steps across the batches
    "3x3_c3_interior",
    "3x3_s2_c8_interior",
    "3x3_dilated_h_interior",
    "3x3_valid_batch2",
]
QUADS_ONLY_CASES = {
    "3x3_c4_rest2": dict(hwc=(6, 11, 4), out_c=8, input_zp=-20, activation="RELU"),  # 66 pixels: 2 left
    "3x3_c3_rest1": dict(hwc=(5, 9, 3), out_c=4, input_zp=9),  # 45 pixels: 1 left
    "3x3_c16_s2_interior": dict(hwc=(17, 18, 16), out_c=8, stride=(2, 2), input_zp=-128, activation="RELU"),
}
QUADS_CASES += list(QUADS_ONLY_CASES)


@pytest.mark.parametrize("case", QUADS_CASES)
def test_conv_packed_quads_matches_tflm(tmp_path, monkeypatch, case):
    """4 pixels per step (mc_pack4_quad_s8, mc_dot_x4r2_s8i) where the scratch allows it (forced here)."""
    monkeypatch.setattr(packed, "RUNS_MIN_LAYERS", 1)
    monkeypatch.setattr(packed, "QUADS_FREE_BYTES", 1 << 20)
    model = conv_model(**(PACKED_CASES | QUADS_ONLY_CASES)[case])
    lib = assert_matches_oracle(model, tmp_path, n_inputs=3, sanitize=case == "3x3_c4_rest2")
    kernel = kernel_of(lib)
    assert kernel["variant"] == "packed" and kernel["runs"] == 1 and kernel["quads"] == 1 and kernel["pixels"] == 4
    assert "mc_pack4_quad_s8(" in lib.files["src/model_ops.c"]
    assert "mc_dot_x4r2_s8i" in lib.files["src/model_ops.c"]


def test_conv_packed_quads_only_within_the_model_scratch(tmp_path, monkeypatch):
    """Beyond QUADS_FREE_BYTES a one-layer model keeps 2 pixels per step (4 would need more scratch)."""
    monkeypatch.setattr(packed, "RUNS_MIN_LAYERS", 1)
    monkeypatch.setattr(packed, "QUADS_FREE_BYTES", 0)
    lib = compile_bytes(conv_model(**PACKED_CASES["3x3_c3_interior"]), tmp_path)
    kernel = kernel_of(lib)
    assert kernel["runs"] == 1 and "quads" not in kernel and kernel["pixels"] == 2


def _without_long_multiply(model: bytes, tmp_path: Path, variant: str) -> None:
    """The MC_LONG_MULTIPLY=0 path (Armv6-M) built on the host, against the oracle."""
    lib = compile_bytes(model, tmp_path)
    assert kernel_of(lib)["variant"] == variant
    inputs = [random_inputs(lib.info.inputs, seed=s) for s in range(3)]
    ours = HostProgram(lib, tmp_path / "build", opt="-DMC_LONG_MULTIPLY=0").run(inputs)
    oracle = Oracle(model)
    for got, input_set in zip(ours, inputs):
        want = oracle.run(input_set)
        assert np.array_equal(got.outputs[0], want[0].reshape(got.outputs[0].shape))


@pytest.mark.parametrize("runs", [0, 1, 2])
@pytest.mark.parametrize("case", ["3x3_same_border_odd", "10x4_s2_c1", "3x3_c5_odd_rows_straddled"])
def test_conv_packed_without_long_multiply(tmp_path, monkeypatch, case, runs):
    """runs 2: with quads (the Armv6-M path is the same int32 loop)."""
    monkeypatch.setattr(packed, "RUNS_MIN_LAYERS", 1 if runs else 2)
    monkeypatch.setattr(packed, "QUADS_FREE_BYTES", 1 << 20 if runs == 2 else 0)
    _without_long_multiply(conv_model(**PACKED_CASES[case]), tmp_path, "packed")


@pytest.mark.parametrize("case", list(POINTWISE_CASES))
def test_pointwise_both_paths(tmp_path, case):
    model = conv_model(**POINTWISE_CASES[case])
    lib = assert_matches_oracle(model, tmp_path / "long", n_inputs=3)
    assert kernel_of(lib)["variant"] == "pointwise" and kernel_of(lib)["lane"] > 0
    _without_long_multiply(model, tmp_path / "int32", "pointwise")


def test_lane_bits_bound():
    """128 sum|w| < 2^(L - 1): S0 = sum w x0 fits L signed bits for every int8 x0; none above 23."""
    assert lane_bits(np.full((1, 256), 64, np.int8)) == (128 * 256 * 64).bit_length() + 1 == MAX_LANE_BITS
    assert lane_bits(np.full((2, 256), -128, np.int8)) == 0  # 128 * 32,768 = 2^22 needs 24 bits
    assert lane_bits(np.ones((1, 3), np.int8)) == (128 * 3).bit_length() + 1


def test_wide_layer_without_lane_keeps_int32_kernels(tmp_path):
    """No lane width fits (sum|w| too large): pointwise keeps mc_dot_p2r4_s8i, bit-exact."""
    weights = np.where(np.arange(4 * 300).reshape(4, 1, 1, 300) % 3, 127, -127).astype(np.int8)
    model = conv_model(hwc=(3, 1, 300), kernel=(1, 1), out_c=4, padding="VALID", input_zp=-128, weights=weights)
    lib = assert_matches_oracle(model, tmp_path, n_inputs=2)
    assert kernel_of(lib)["variant"] == "pointwise" and kernel_of(lib)["lane"] == 0
    assert "mc_dot_x2r4_s8i(" not in lib.files["src/model_ops.c"]


DW_ROWS_CASES = {
    "kws_like_5_wide": dict(hwc=(6, 5, 8), input_zp=-128, activation="RELU"),
    "wide_rows_loop": dict(hwc=(5, 19, 4), input_zp=50, per_channel=False, output_zp=-100),
    "5x5_pad2_c3": dict(hwc=(7, 11, 3), kernel=(5, 5), activation="RELU6"),
    "valid_batch2": dict(hwc=(6, 12, 8), padding="VALID", batches=2, bias=None),
    "kernel_bigger": dict(hwc=(2, 3, 8), kernel=(4, 5), activation="RELU_N1_TO_1", input_zp=127),
    "1x3_c5": dict(hwc=(3, 10, 5), kernel=(1, 3), input_zp=0),
    "s2_same": dict(hwc=(9, 8, 4), stride=(2, 2), input_zp=-128, activation="RELU"),
    "s2_wide_rows_loop": dict(hwc=(6, 31, 4), stride=(2, 2), input_zp=3),
    "s3x2_5x3": dict(hwc=(8, 9, 12), kernel=(5, 3), stride=(3, 2), activation="RELU6"),
    "dilation_batch2": dict(hwc=(8, 20, 4), dilation=(2, 2), batches=2, bias=None),
    "multiplier8_10x8_s2": dict(hwc=(13, 12, 1), kernel=(10, 8), stride=(2, 2), depth_multiplier=8, input_zp=-128),
    "multiplier2_c3": dict(hwc=(5, 7, 3), depth_multiplier=2, activation="RELU"),
}


@pytest.mark.parametrize("case", list(DW_ROWS_CASES))
def test_depthwise_rows_matches_tflm(tmp_path, case):
    lib = assert_matches_oracle(
        conv_model(kind="DEPTHWISE_CONV_2D", **DW_ROWS_CASES[case]),
        tmp_path,
        n_inputs=3,
        sanitize=case in ("wide_rows_loop", "5x5_pad2_c3"),
    )
    even = DW_ROWS_CASES[case].get("depth_multiplier", 1) % 2 == 0  # channel pairs: packed-rows
    assert kernel_of(lib)["variant"] == ("packed-rows" if even else "rows") and kernel_of(lib)["isa"] == "c"


def test_depthwise_rows_only_where_it_applies(tmp_path):
    """The DSP extension: not rows (any stride, dilation and depth multiplier are)."""

    def variant(features=frozenset(), **kw):
        model = conv_model(kind="DEPTHWISE_CONV_2D", **{"hwc": (6, 6, 8), **kw})
        return kernel_of(compile_bytes(model, tmp_path / str(len(list(tmp_path.iterdir()))), features=features))[
            "variant"
        ]

    assert variant() == "rows"
    assert variant(stride=(2, 2)) == variant(dilation=(2, 2)) == "rows"
    assert variant(depth_multiplier=3) == "rows"
    assert variant(features=frozenset({"dsp"})) != "rows"


@pytest.mark.parametrize(
    "in_hw, k, stride, dil, pad, out_hw",
    [
        ((9, 10), (3, 3), (1, 1), (1, 1), (1, 1), (9, 10)),
        ((11, 12), (3, 3), (2, 2), (1, 1), (0, 0), (6, 6)),  # SAME, stride 2: the extra column after
        ((12, 10), (3, 3), (1, 1), (2, 1), (2, 1), (12, 10)),
        ((49, 10), (10, 4), (2, 2), (1, 1), (4, 1), (25, 5)),  # KWS's first layer
        ((9, 9), (3, 2), (1, 2), (2, 3), (2, 1), (9, 5)),  # dilation across: no interior
        ((31, 31), (3, 3), (2, 2), (1, 1), (-2, 0), (14, 15)),  # a patch's negative padding (inside an image)
        ((5, 3), (3, 3), (1, 1), (1, 1), (1, 1), (5, 3)),  # one column inside: no pair
    ],
)
def test_packed_interior_is_exactly_the_pairs_inside(in_hw, k, stride, dil, pad, out_hw):
    """mc_packed_geom's interior (rows y_lo..y_hi, columns x_lo..x_hi for both pixels of a pair on one
    row) holds exactly the pairs whose every tap is inside the input (dilation 1 across; none
    otherwise), by brute force over the output pixels."""
    g = ConvGeometry(1, *in_hw, 4, *out_hw, 4, *k, *stride, *dil, *pad)
    fields = [int(v) for v in _geom(g, 20, 0, "s", 0).split(", ")[2:]]
    y_lo, y_hi, x_lo, x_hi = fields[-6:-2]

    def inside(oy, ox):
        rows = [oy * g.stride_h - g.pad_h + ky * g.dil_h for ky in range(g.k_h)]
        cols = [ox * g.stride_w - g.pad_w + kx * g.dil_w for kx in range(g.k_w)]
        return all(0 <= r < g.in_h for r in rows) and all(0 <= c < g.in_w for c in cols)

    for oy in range(g.out_h):
        for ox in range(g.out_w - 1):
            want = g.dil_w == 1 and inside(oy, ox) and inside(oy, ox + 1)
            assert (y_lo <= oy <= y_hi and x_lo <= ox and ox + 1 <= x_hi) == want, (oy, ox)
        for ox in range(g.out_w - 3):  # mc_pack4_quad_s8: four pixels on one row
            want = g.dil_w == 1 and all(inside(oy, ox + t) for t in range(4))
            assert (y_lo <= oy <= y_hi and x_lo <= ox and ox + 3 <= x_hi) == want, (oy, ox)
