"""The DSP im2col paths of issue #34's M4/M7 round against the TFLM oracle, bit for bit.

- stems (input channels not a multiple of 4) in the lanes encoding gather their column straight
  from the input rows (conv_2d_im2col.DirectLayout): whole words per kernel row, either reaching a
  pixel past the row (the last row's words ending with it instead) or leaving the rows' last bytes
  to shared groups; border pixels go through the byte buffer;
- 1x1 stride-1 layers without padding read their pixels one after the other ("contiguous");
- the lanes encoding from 4 output channels on;
- wide depthwise planes loaded 4 values per step (kernel_planes.h, odd widths and tails).

On the host the DSP instructions run as their portable C emulation (features={"dsp"}: the same
generated code); the QEMU test runs a model holding every case on the Cortex-M4 and M7 (the inline
assembly) and compares every intermediate tensor with TFLM.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from harness import assert_matches_oracle
from model_builder import ModelBuilder, conv2d_options, depthwise_options
from test_fast_kernels import QEMU_TOOLS, _quantized_conv, assert_device_matches_tflm, kernel_of
from test_op_conv_2d import conv_model

from microcompiler.ops.conv_common import geometry
from microcompiler.ops.fast.conv_2d_im2col import direct_layout

DSP = frozenset({"dsp"})

STEM_CASES = {
    # (words per row, bytes past the row, leftover bytes per row)
    "c1_3x3_s2_same": (dict(hwc=(13, 11, 1), out_c=8, stride=(2, 2), input_zp=-128, activation="RELU6"), (1, 1, 0)),
    "c1_3x3_valid": (dict(hwc=(7, 9, 1), out_c=5, padding="VALID", input_zp=40), (1, 1, 0)),
    "c1_5x5_same": (dict(hwc=(9, 8, 1), kernel=(5, 5), out_c=6, input_zp=3), (1, 0, 1)),
    "c3_3x3_s2_same": (dict(hwc=(11, 12, 3), out_c=8, stride=(2, 2), input_zp=-1, activation="RELU"), (2, 0, 1)),
    "c3_3x3_valid_odd_pixels": (dict(hwc=(6, 7, 3), out_c=4, padding="VALID", output_zp=-100), (2, 0, 1)),
    "c2_3x3_same": (dict(hwc=(7, 6, 2), out_c=7, input_zp=-128), (1, 0, 2)),
    "c3_1x3_same": (dict(hwc=(5, 9, 3), kernel=(1, 3), out_c=5, stride=(1, 2)), (2, 0, 1)),
    # tall kernels with a pixel tail (3, 3, 1 pixels): the tail's rows in a loop (KWS's 10x4 stem)
    "c1_10x4_s2_same_tail": (dict(hwc=(21, 10, 1), kernel=(10, 4), out_c=8, stride=(2, 2), input_zp=7), (1, 0, 0)),
    "c1_7x4_same_tail": (dict(hwc=(9, 9, 1), kernel=(7, 4), out_c=5, input_zp=-20), (1, 0, 0)),
    "c2_5x5_same_tail": (dict(hwc=(7, 7, 2), kernel=(5, 5), out_c=6, output_zp=-50), (2, 0, 2)),
}


def _layout(model_bytes: bytes, tmp_path):
    from microcompiler.compiler import load_tflite

    path = tmp_path / "m.tflite"
    path.write_bytes(model_bytes)
    g = load_tflite(path)
    return direct_layout(geometry(g.operators[0], g))


@pytest.mark.parametrize("case", list(STEM_CASES))
def test_direct_stem_matches_tflm(tmp_path, case):
    options, (words, over, leftover) = STEM_CASES[case]
    model = conv_model(**options)
    layout = _layout(model, tmp_path)
    assert (layout.words, layout.over, layout.leftover) == (words, over, leftover)
    lib = assert_matches_oracle(model, tmp_path / "lib", n_inputs=3, features=DSP)
    assert kernel_of(lib)["variant"] == "im2col" and kernel_of(lib)["extract"] == "lanes"
    g = geometry(lib.graph.operators[0], lib.graph)
    tall_tail = g.k_h > 3 and (g.out_h * g.out_w) % 4 != 0
    assert ("for (int r_ = 0;" in lib.files["src/model_ops.c"]) == tall_tail


def test_direct_layout_order_keeps_every_tap_once():
    """The permuted column holds every tap exactly once, the extra positions are zero weights, and
    no word reads before the first row or after the last one."""
    from microcompiler.ops.fast.conv_2d_im2col import DirectLayout

    for layout in (DirectLayout(3, 3, 1, 1, 0), DirectLayout(9, 3, 2, 0, 1), DirectLayout(6, 3, 1, 0, 2)):
        order = layout.order()
        taps = [t for t in order if t is not None]
        assert sorted(taps) == list(range(layout.rows * layout.row_bytes))
        assert len(order) == 4 * layout.steps == 4 * -(-layout.rows * layout.row_bytes // 4)
        rows = np.arange(1, 1 + layout.rows * layout.row_bytes, dtype=np.int8)[None, :]
        permuted = layout.permute(rows)
        assert sorted(permuted[0][permuted[0] != 0].tolist()) == rows[0].tolist()
        first = min(ky * layout.row_bytes + layout.start(ky) for ky in range(layout.rows))
        last = max(ky * layout.row_bytes + layout.start(ky) + 4 * layout.words for ky in range(layout.rows))
        assert first >= 0 and last <= layout.rows * layout.row_bytes + layout.over


@pytest.mark.parametrize("out_c", [4, 5, 16])
def test_contiguous_pointwise_lanes_matches_tflm(tmp_path, out_c):
    """1x1 stride 1 VALID with 4..16 output channels: lanes encoding, pixels one after the other,
    a tail of 1, 2 and 3 pixels."""
    for hw in ((3, 3), (2, 5), (1, 7)):
        model = conv_model(hwc=(*hw, 8), kernel=(1, 1), out_c=out_c, padding="VALID", input_zp=-128, seed=out_c)
        lib = assert_matches_oracle(model, tmp_path / f"{hw[0]}x{hw[1]}", n_inputs=2, features=DSP)
        assert kernel_of(lib)["extract"] == "lanes"


def stems_model(seed=0):
    """A grayscale stem (3x3 s2), a wide depthwise layer (planes, 21 columns: 4 per step and a tail),
    a 1x1 layer with 6 output channels (lanes, contiguous); an RGB stem (3x3, SAME) and a 2-channel
    one (3x3 VALID) on other inputs. Every tensor is a model output."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    g = b.activation("g", [1, 21, 43, 1], "int8", scale=0.05, zero_point=-128)
    ins, s = _quantized_conv(b, "stem1", g, 0.05, 1, (3, 3), 8, None, rng=rng, spread=8)
    a = b.activation("a", [1, 11, 22, 8], "int8", scale=s, zero_point=-128)
    b.op("CONV_2D", ins, [a], conv2d_options("SAME", stride=(2, 2), activation="RELU6"))
    ins, s2 = _quantized_conv(b, "dw", a, s, 8, (3, 3), 8, None, depthwise=True, rng=rng, spread=20)
    d = b.activation("d", [1, 11, 22, 8], "int8", scale=s2, zero_point=-128)
    b.op("DEPTHWISE_CONV_2D", ins, [d], depthwise_options("SAME", activation="RELU"))
    ins, s3 = _quantized_conv(b, "pw", d, s2, 8, (1, 1), 6, None, rng=rng)
    p = b.activation("p", [1, 11, 22, 6], "int8", scale=s3, zero_point=5)
    b.op("CONV_2D", ins, [p], conv2d_options("VALID"))
    rgb = b.activation("rgb", [1, 9, 10, 3], "int8", scale=0.04, zero_point=-7)
    ins, s4 = _quantized_conv(b, "stem3", rgb, 0.04, 3, (3, 3), 12, None, rng=rng, spread=12)
    r = b.activation("r", [1, 9, 10, 12], "int8", scale=s4, zero_point=-3)
    b.op("CONV_2D", ins, [r], conv2d_options("SAME"))
    two = b.activation("two", [1, 8, 7, 2], "int8", scale=0.03, zero_point=11)
    ins, s5 = _quantized_conv(b, "stem2", two, 0.03, 2, (3, 3), 5, None, rng=rng, spread=10)
    t = b.activation("t", [1, 6, 5, 5], "int8", scale=s5 * math.sqrt(2), zero_point=0)
    b.op("CONV_2D", ins, [t], conv2d_options("VALID", activation="RELU"))
    return b.finish([g, rgb, two], [a, d, p, r, t])


@pytest.mark.skipif(not QEMU_TOOLS, reason="needs arm-none-eabi-gcc, cmake, ninja and qemu-system-arm")
@pytest.mark.parametrize("board", ["mps2_an386", "mps2_an500"], ids=["m4", "m7"])
def test_stems_model_on_device_matches_tflm(tmp_path, board):
    from microcompiler.boards import load_board
    from microcompiler.compiler import compile_model

    path = tmp_path / "stems.tflite"
    path.write_bytes(stems_model(seed=2))
    b = load_board(board)
    lib = compile_model(path, features=b.cpu.features)
    kernels = [o["kernel"] for o in lib.metadata["operators"]]
    assert [k["variant"] for k in kernels] == ["im2col", "planes", "im2col", "im2col", "im2col"]
    assert all(k.get("extract") == "lanes" for k in kernels if k["variant"] == "im2col")
    assert_device_matches_tflm(path, lib, b, tmp_path, outputs=5, seed=3)
