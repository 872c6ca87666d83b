"""The 1x1 im2col convolutions whose 4 sums start from the bias inside the first SMLAD
(mc_dot_p4_s8l_b, kernel_lanes.h): column lengths (input channels / 4) of every remainder mod 4,
pixel counts with tails of 0..3, on the emulated Cortex-M4 and M7 (the inline assembly) against TFLM,
every intermediate tensor a model output.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from model_builder import ModelBuilder, conv2d_options
from test_fast_kernels import _quantized_conv, assert_device_matches_tflm

QEMU_TOOLS = all(shutil.which(t) for t in ("arm-none-eabi-gcc", "cmake", "ninja", "qemu-system-arm"))
# (input channels, output channels) of the chain: column steps 4, 9, 2, 5, 16 (remainders 0, 1, 2, 1, 0)
CHANNELS = [(16, 36), (36, 8), (8, 20), (20, 64), (64, 6)]


def pointwise_chain(hw: tuple[int, int], seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.activation("x", [1, *hw, CHANNELS[0][0]], "int8", scale=0.05, zero_point=-7)
    src, scale, outs = x, 0.05, []
    for i, (c, oc) in enumerate(CHANNELS):
        ins, s = _quantized_conv(b, f"p{i}", src, scale, c, (1, 1), oc, None, rng=rng, spread=30)
        y = b.activation(f"p{i}", [1, *hw, oc], "int8", scale=s, zero_point=int(rng.integers(-128, 20)))
        b.op("CONV_2D", ins, [y], conv2d_options("VALID", activation="RELU" if i % 2 else "NONE"))
        src, scale = y, s
        outs.append(y)
    return b.finish([x], outs)


@pytest.mark.skipif(not QEMU_TOOLS, reason="needs arm-none-eabi-gcc, cmake, ninja and qemu-system-arm")
@pytest.mark.parametrize(
    "board,hw",
    [
        ("mps2_an386", (5, 7)),  # 35 pixels: a tail of 3 (4 sums)
        ("mps2_an500", (4, 6)),  # 24: no tail
        ("mps2_an386", (3, 3)),  # 9: a tail of 1 (narrow)
    ],
    ids=["m4-tail3", "m7-even", "m4-tail1"],
)
def test_pointwise_bias_start_on_device(tmp_path, board, hw):
    from microcompiler.boards import load_board
    from microcompiler.compiler import compile_model

    path = tmp_path / "pointwise.tflite"
    path.write_bytes(pointwise_chain(hw, seed=len(board) + hw[0]))
    b = load_board(board)
    lib = compile_model(path, features=b.cpu.features)
    assert {o["kernel"]["variant"] for o in lib.metadata["operators"]} == {"im2col"}
    ops_c = next(p for p in lib.files if p.endswith("_ops.c"))
    assert lib.files[ops_c].count("mc_dot_p4_s8l_b(") >= 3, "the bias-start dot product is not used"
    assert_device_matches_tflm(path, lib, b, tmp_path, outputs=len(CHANNELS), seed=5)
