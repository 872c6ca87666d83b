"""DEPTHWISE_CONV_2D "packed-rows" (ops/fast/depthwise_conv_2d_packed_rows.py: an even depth
multiplier on cores without the DSP extension) against the TFLM oracle, bit for bit, on both paths:
with the long multiply (the host, the Cortex-M3: a ring of packed input rows, 4 pixels x 2 channels
per step) and without it (MC_LONG_MULTIPLY=0, the Cortex-M0: the rows kernel's C on the same arrays).
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import assert_matches_oracle, compile_bytes
from test_op_conv_2d import conv_model
from test_portable_kernels import _without_long_multiply, kernel_of

from microcompiler.ops.fast.depthwise_conv_2d_packed_rows import edge_words, ring
from microcompiler.ops.geometry import ConvGeometry

CASES = {
    # micro_speech's layer (10x8, stride 2, multiplier 8, one input channel), a smaller image
    "micro_speech_like": dict(hwc=(13, 12, 1), kernel=(10, 8), stride=(2, 2), depth_multiplier=8, input_zp=-128),
    # output widths not a multiple of 4 (the last group's extra pixels not stored), several input channels
    "m2_c3_width7": dict(hwc=(5, 7, 3), depth_multiplier=2, activation="RELU"),
    "m4_c2_width5_s2": dict(hwc=(9, 10, 2), depth_multiplier=4, stride=(2, 2), input_zp=127, output_zp=-100),
    "m2_dilated_batch2": dict(hwc=(8, 11, 2), depth_multiplier=2, dilation=(2, 3), batches=2, bias=None),
    "m6_valid_s3x2": dict(hwc=(9, 13, 1), kernel=(4, 3), depth_multiplier=6, stride=(3, 2), padding="VALID"),
    "m2_width1_kernel_bigger": dict(hwc=(3, 1, 2), kernel=(4, 5), depth_multiplier=2, activation="RELU6"),
    # extreme weights: the widest lane, 23 bits (128 sum|w| = 128 * 256 * 127 just under 2^22)
    "m2_extreme_weights_lane23": dict(
        hwc=(18, 9, 1),
        kernel=(16, 16),
        depth_multiplier=2,
        input_zp=-128,
        weights=np.where(np.arange(512).reshape(1, 16, 16, 2) % 5 == 0, -127, 127).astype(np.int8),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_packed_rows_matches_tflm(tmp_path, case):
    model = conv_model(kind="DEPTHWISE_CONV_2D", **CASES[case])
    lib = assert_matches_oracle(model, tmp_path / "long", n_inputs=3, sanitize=case == "m2_c3_width7")
    kernel = kernel_of(lib)
    assert kernel["variant"] == "packed-rows" and kernel["isa"] == "c" and 0 < kernel["lane"] <= 23
    assert kernel["lane"] == 23 or case != "m2_extreme_weights_lane23"
    _without_long_multiply(model, tmp_path / "int32", "packed-rows")


def test_packed_rows_only_where_it_applies(tmp_path):
    """Odd multipliers, the DSP extension and the tuning knob {"variant": "rows"} keep other kernels."""

    def variant(features=frozenset(), tuning=None, **kw):
        model = conv_model(kind="DEPTHWISE_CONV_2D", **{"hwc": (6, 6, 2), **kw})
        out = tmp_path / str(len(list(tmp_path.iterdir())))
        return kernel_of(compile_bytes(model, out, features=features, tuning=tuning))["variant"]

    assert variant(depth_multiplier=2) == "packed-rows"
    assert variant() == variant(depth_multiplier=3) == "rows"
    assert variant(depth_multiplier=2, features=frozenset({"dsp"})) != "packed-rows"
    assert variant(depth_multiplier=2, tuning={"DEPTHWISE_CONV_2D": {"variant": "rows"}}) == "rows"


def test_ring_covers_every_tap():
    """The ring's words cover the last group's 4 pixels at the last tap, and the edge words are
    exactly those with a padding lane."""
    g = ConvGeometry(1, 49, 40, 1, 25, 20, 8, 10, 8, 2, 2, 1, 1, 4, 3)
    rows, words = ring(g)
    assert rows == 10 and words == 2 * 16 + 2 * 2 + 7 + 1
    edges, lo, hi = edge_words(g, words)
    for k in range(words):
        inside = [0 <= c - g.pad_w < g.in_w for c in (k, k + g.stride_w)]
        assert (lo <= k < hi) == all(inside)
    assert [k for k, *_ in edges] == [k for k in range(words) if not lo <= k < hi]
