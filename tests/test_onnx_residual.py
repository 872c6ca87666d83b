"""A float Conv whose output ONNX Runtime adds to another activation (a residual connection): its
NchwcTransformer fuses the Add into the Conv (MLAS's NCHWc kernel with a Sum input), whose sum starts at
the other activation, each fused multiply-add chain added to it in turn, then the bias
(frontend/onnx_conv.py ``conv_with_sum``; docs/onnx.md). Bit for bit with ONNX Runtime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx_models import MODELS, assert_same_bits, const, model, ours_and_onnxruntime

from microcompiler.host import HostProgram
from microcompiler.project import run_on_board


@pytest.mark.parametrize(
    ("channels", "out", "kernel", "stride", "conv_first"),
    [
        (32, 16, 3, 1, True),
        (16, 16, 3, 1, False),
        (8, 16, 3, 1, True),
        (48, 16, 1, 2, False),
        (160, 16, 1, 1, True),
        (40, 16, 3, 1, True),
        (144, 16, 1, 1, False),
        (16, 8, 3, 1, True),
        (16, 24, 3, 1, False),
    ],
)
def test_conv_with_residual_add_bit_for_bit(tmp_path, channels, out, kernel, stride, conv_first):
    """One chain (16 channels; a 1x1 Conv of up to 128), several (32, 160, 144 channels: blocks of 16 or
    128; 8 channels: one per channel; 40: a last block of 8, padded), the Conv as the Add's first or second
    input, stride 2 (the shortcut of ResNet-8's stacks), output channels that are not a multiple of 16
    (NCHWc pads them)."""
    rng = np.random.default_rng(channels + kernel + out)
    size = 8
    pad = kernel // 2
    nodes = [
        helper.make_node("Conv", ["x", "w0", "b0"], ["r"], pads=[1] * 4),  # the Sum: an NCHWc Conv + Relu
        helper.make_node("Relu", ["r"], ["s"]),
        helper.make_node("Conv", ["x", "w1", "b1"], ["c"], pads=[pad] * 4, strides=[stride] * 2),
    ]
    if stride > 1:
        nodes.append(helper.make_node("MaxPool", ["s"], ["s2"], kernel_shape=[1, 1], strides=[2, 2]))
    other = "s2" if stride > 1 else "s"
    nodes.append(helper.make_node("Add", ["c", other] if conv_first else [other, "c"], ["y"]))
    inits = [
        const(rng, "w0", (out, channels, 3, 3), 0.3),
        const(rng, "b0", (out,)),
        const(rng, "w1", (out, channels, kernel, kernel), 0.3),
        const(rng, "b1", (out,)),
    ]
    side = size // stride
    _check(tmp_path, model(nodes, {"x": [1, channels, size, size]}, {"y": [1, out, side, side]}, inits), True)


def test_add_of_the_model_input_is_not_fused(tmp_path):
    """A Conv plus the model's input: ONNX Runtime does not fuse that Add (its input is not an NCHWc
    value), nor does the importer; bit for bit either way."""
    rng = np.random.default_rng(2)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1] * 4),
        helper.make_node("Add", ["c", "x"], ["y"]),
    ]
    inits = [const(rng, "w", (16, 16, 3, 3), 0.3), const(rng, "b", (16,))]
    _check(tmp_path, model(nodes, {"x": [1, 16, 8, 8]}, {"y": [1, 16, 8, 8]}, inits), False)


def _check(tmp_path, proto, fused: bool) -> None:
    import onnx

    path = tmp_path / "residual.onnx"
    onnx.save(proto, path)
    lib, ours, theirs = ours_and_onnxruntime(path, tmp_path, n=3)
    for k, (got, want) in enumerate(zip(ours, theirs)):
        assert_same_bits(got[0], want[0], f"set {k}")
    names = [lib.graph.tensors[op.outputs[0]].name for op in lib.graph.operators]
    assert any("_residual" in n for n in names) == fused, names  # the Conv's chains added to the Sum


@pytest.mark.long
def test_resnet8_float_boards_equal_the_host(tmp_path):
    """The float ResNet-8 (its residual Adds fused as ONNX Runtime fuses them): ONNX Runtime's bits on the
    host, and the host's on the Cortex-M4 (mps2_an386) and the Cortex-M55 (mps3_an547)."""
    path = MODELS / "resnet8_float32.onnx"
    lib, ours, theirs = ours_and_onnxruntime(path, tmp_path, n=2)
    for k, (got, want) in enumerate(zip(ours, theirs)):
        assert_same_bits(got[0], want[0], f"host vs ONNX Runtime, set {k}")
    inputs = [(np.random.default_rng(3).standard_normal((1, 32, 32, 3)) * 2).astype(np.float32)]
    host = HostProgram(lib, tmp_path / "again").run([inputs])[0].outputs
    for board in ("mps2_an386", "mps3_an547"):
        _, _, run = run_on_board(path, board, tmp_path / board, input=inputs, log=lambda _: None)
        assert_same_bits(run.outputs[0], host[0], f"{board} vs the host")
