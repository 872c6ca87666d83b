"""ONNX models (issue 36, docs/onnx.md): imported into the IR, compiled, and checked against ONNX Runtime.

What is held bit for bit against ONNX Runtime's default CPU session on this host (x86-64 with FMA):
Gemm/MatMul (MLAS's fused multiply-add chain per 256 inputs, bias first), group-1 Conv (MLAS's NCHWc
order, frontend/onnx_conv.py), depthwise Conv, the pools, Sigmoid, Tanh, Softmax (their MLAS orders and
approximations, tests/test_onnx_mlas.py), the elementwise and movement operators, ReLU/Clip and MaxPool.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from harness import cli
from onnx import helper, numpy_helper
from onnx_models import (
    MODELS,
    assert_same_bits,
    const,
    inputs_for,
    model,
    ours_and_onnxruntime,
    scalar,
    session,
)

from microcompiler.errors import ModelFormatError, UnsupportedModelError
from microcompiler.frontend.tflite import load_tflite
from microcompiler.host import HostProgram
from microcompiler.project import run_on_board


def _save(m: onnx.ModelProto, tmp_path, name: str):
    path = tmp_path / f"{name}.onnx"
    onnx.save(m, path)
    return path


def dense_model(rng) -> onnx.ModelProto:
    """Gemm with a 520-long depth (three MLAS blocks) and a bias, ReLU, MatMul of depth 270 + Add (fused
    into a Gemm by ONNX Runtime), Clip, a MatMul without a bias."""
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["g1"], transB=1),
        helper.make_node("Relu", ["g1"], ["r1"]),
        helper.make_node("MatMul", ["r1", "w2"], ["m2"]),
        helper.make_node("Add", ["m2", "b2"], ["a2"]),
        helper.make_node("Clip", ["a2", "lo", "hi"], ["c2"]),
        helper.make_node("MatMul", ["c2", "w3"], ["y"]),
    ]
    inits = [const(rng, "w1", (270, 520), 0.1), const(rng, "b1", (270,)), const(rng, "w2", (270, 8), 0.1)]
    inits += [const(rng, "b2", (8,)), scalar(-0.5, "lo"), scalar(0.75, "hi"), const(rng, "w3", (8, 4))]
    return model(nodes, {"x": [1, 520]}, {"y": [1, 4]}, inits)


def movement_model(rng) -> onnx.ModelProto:
    """Layout changes, elementwise arithmetic with broadcast constants, MaxPool, ReLU6, Concat."""
    nodes = [
        helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"),
        helper.make_node("Mul", ["p", "s"], ["m"]),
        helper.make_node("Sub", ["m", "t"], ["d"]),
        helper.make_node("Div", ["d", "u"], ["q"]),
        helper.make_node("MaxPool", ["x"], ["v"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Relu", ["v"], ["rv"]),
        helper.make_node("Concat", ["q", "rv"], ["c"], axis=1),
        helper.make_node("Clip", ["c", "zero", "six"], ["r6"]),
        helper.make_node("Transpose", ["r6"], ["tr"], perm=[0, 2, 3, 1]),
        helper.make_node("Add", ["tr", "w"], ["a"]),
        helper.make_node("Flatten", ["a"], ["f"]),
        helper.make_node("Reshape", ["f", "shape"], ["y"]),
    ]
    inits = [
        const(rng, "s", (4, 1, 1)),
        const(rng, "t", (1, 4)),
        numpy_helper.from_array(rng.uniform(0.5, 2, (4, 1, 1)).astype(np.float32), "u"),
        const(rng, "w", (8,)),
    ]
    inits += [scalar(0.0, "zero"), scalar(6.0, "six"), numpy_helper.from_array(np.array([2, -1], np.int64), "shape")]
    return model(nodes, {"x": [1, 4, 8, 8]}, {"y": [2, 64]}, inits)


def conv_model(rng) -> onnx.ModelProto:
    """Conv variants: BatchNorm folded (with and without a Conv bias), depthwise with multiplier 2 and
    asymmetric pads (an explicit PAD), auto_pad SAME_LOWER (a PAD too), dilation 2, a standalone BatchNorm,
    GlobalAveragePool, Sigmoid and Softmax; shape arithmetic (Shape, Gather, Unsqueeze, Concat) folded."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], auto_pad="SAME_LOWER", strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c1", "g", "be", "mu", "var"], ["n1"]),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("Conv", ["r1", "wd"], ["c2"], group=6, pads=[0, 1, 2, 1]),
        helper.make_node("BatchNormalization", ["c2", "g2", "be2", "mu2", "var2"], ["n2"]),
        helper.make_node("Conv", ["n2", "w3"], ["c3"], dilations=[2, 2], pads=[2, 2, 2, 2]),
        helper.make_node("Sigmoid", ["c3"], ["s3"]),
        helper.make_node("Relu", ["s3"], ["r3"]),
        helper.make_node("BatchNormalization", ["r3", "g3", "be3", "mu3", "var3"], ["n3"]),
        helper.make_node("GlobalAveragePool", ["n3"], ["gap"]),
        helper.make_node("Shape", ["gap"], ["shp"]),
        helper.make_node("Gather", ["shp", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes"], ["batch1"]),
        helper.make_node("Concat", ["batch1", "minus1"], ["newshape"], axis=0),
        helper.make_node("Reshape", ["gap", "newshape"], ["flat"]),
        helper.make_node("Softmax", ["flat"], ["y"]),
    ]
    ints = [("zero", np.array(0, np.int64)), ("axes", np.array([0], np.int64)), ("minus1", np.array([-1], np.int64))]
    inits = [numpy_helper.from_array(v, n) for n, v in ints]
    inits += [const(rng, "w1", (6, 3, 3, 3)), const(rng, "b1", (6,)), const(rng, "wd", (12, 1, 3, 3))]
    inits += [const(rng, "w3", (5, 12, 3, 3), 0.2)]
    for suffix, c in (("", 6), ("2", 12), ("3", 5)):
        inits += [const(rng, f"g{suffix}", (c,)), const(rng, f"be{suffix}", (c,)), const(rng, f"mu{suffix}", (c,))]
        inits.append(numpy_helper.from_array(rng.uniform(0.5, 2, c).astype(np.float32), f"var{suffix}"))
    return model(nodes, {"x": [1, 3, 12, 10]}, {"y": [1, 5]}, inits)


def test_dense_models_bit_for_bit_onnxruntime(tmp_path):
    """tf2onnx's dense autoencoder and a Gemm/MatMul chain: bits equal ONNX Runtime's default session.
    With graph optimizations off, ONNX Runtime adds a MatMul's bias after the whole sum instead of
    fusing it into a Gemm whose sum starts at the bias: for depths past 256 that rounds differently
    (docs/onnx.md), so the unoptimized session is held only where there is no such bias."""
    rng = np.random.default_rng(36)
    for path in (MODELS / "dense_autoencoder_float32.onnx", _save(dense_model(rng), tmp_path, "dense")):
        lib, ours, theirs = ours_and_onnxruntime(path, tmp_path / path.stem)
        assert {op.kind for op in lib.graph.operators} <= {"FULLY_CONNECTED", "RELU", "MINIMUM", "MAXIMUM"}
        plain = session(path, optimized=False) if path.parent == MODELS else None
        for k, (got, want) in enumerate(zip(ours, theirs)):
            assert_same_bits(got[0], want[0], f"{path.name} input set {k}")
            if plain is not None:
                x = inputs_for(path, len(ours))[k][0]
                assert_same_bits(
                    got[0], plain.run(None, {plain.get_inputs()[0].name: x})[0], f"{path.name} unoptimized"
                )


def test_movement_and_elementwise_bit_for_bit(tmp_path):
    path = _save(movement_model(np.random.default_rng(1)), tmp_path, "movement")
    lib, ours, theirs = ours_and_onnxruntime(path, tmp_path)
    for k, (got, want) in enumerate(zip(ours, theirs)):
        assert_same_bits(got[0], want[0], f"input set {k}")
    kinds = [op.kind for op in lib.graph.operators]
    # the NCHW input goes to NHWC once; the Transpose to NHWC is the NHWC tensor itself
    assert kinds.count("TRANSPOSE") == 1, kinds


@pytest.mark.parametrize("name", ["conv", "ds_cnn_float32", "small_cnn_float32"])
def test_conv_models_match_onnxruntime(tmp_path, name):
    path = _save(conv_model(np.random.default_rng(2)), tmp_path, name) if name == "conv" else MODELS / f"{name}.onnx"
    lib, ours, theirs = ours_and_onnxruntime(path, tmp_path)
    for k, (got, want) in enumerate(zip(ours, theirs)):
        assert_same_bits(got[0], want[0], f"{name} set {k}")
    kinds = [op.kind for op in lib.graph.operators]
    # NCHW becomes NHWC once, at the input (a 1-channel input: a free RESHAPE), never per layer
    assert kinds.count("TRANSPOSE") <= 1, kinds
    if name == "conv":
        assert "BATCH_NORMALIZATION" not in kinds and kinds.count("MUL") == 1  # two folded, one standalone
        assert "PAD" in kinds and "DEPTHWISE_CONV_2D" in kinds


def conv_chain_model(rng) -> onnx.ModelProto:
    """Convolutions of each MLAS kind (onnx_conv.py): 3 input channels (the NCHW kernel), 24 (two NCHWc
    blocks, the second half empty) with dilation 2 and asymmetric pads, 1x1 over 16 and 300 channels (the
    pointwise kernel, chains of 128), 8 channels with stride 2 and SAME_UPPER, with ReLUs between."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], dilations=[2, 2], pads=[0, 1, 2, 1]),
        helper.make_node("Conv", ["c2", "w3", "b3"], ["c3"]),
        helper.make_node("Relu", ["c3"], ["r3"]),
        helper.make_node("Conv", ["r3", "w4"], ["c4"]),
        helper.make_node("Conv", ["c4", "w5", "b5"], ["y"], strides=[2, 2], auto_pad="SAME_UPPER"),
    ]
    shapes = {"w1": (24, 3, 3, 3), "b1": (24,), "w2": (16, 24, 3, 3), "b2": (16,), "w3": (300, 16, 1, 1)}
    shapes.update({"b3": (300,), "w4": (8, 300, 1, 1), "w5": (4, 8, 3, 3), "b5": (4,)})
    inits = [const(rng, name, shape, 0.3) for name, shape in shapes.items()]
    return model(nodes, {"x": [1, 3, 12, 10]}, {"y": [1, 4, 5, 4], "c2": [1, 16, 10, 8]}, inits)


def test_conv_bit_for_bit_onnxruntime(tmp_path):
    """A group-1 Conv is a FULLY_CONNECTED over its patches in MLAS's order: ONNX Runtime's bits."""
    path = _save(conv_chain_model(np.random.default_rng(12)), tmp_path, "convs")
    lib, ours, theirs = ours_and_onnxruntime(path, tmp_path, n=2)
    for k, (got, want) in enumerate(zip(ours, theirs)):
        for name, g, t in zip(("y", "c2"), got, want):
            assert_same_bits(g, t, f"{name}, input set {k}")
    kinds = [op.kind for op in lib.graph.operators]
    assert "CONV_2D" not in kinds and kinds.count("FULLY_CONNECTED") == 5, kinds


def depthwise_chain_model(rng) -> onnx.ModelProto:
    """Depthwise Convs ONNX Runtime runs with its NCHWc kernel or as a GEMM per group: 16 channels 3x3
    with a fused Relu, 12 channels (NCHWc pads them to a block) 5x5 stride 2 with asymmetric pads, a depth
    multiplier 2 over 5 channels without a bias, 1 channel (a plain Conv)."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], group=16, pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[0, 0, 0, 0]),
        helper.make_node("Conv", ["c2", "w3", "b3"], ["c3"], group=12, strides=[2, 2], pads=[1, 2, 2, 1]),
        helper.make_node("Conv", ["c3", "w4"], ["c4"]),
        helper.make_node("Conv", ["c4", "w5"], ["y"], group=5, pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x1", "w6", "b6"], ["y1"], group=1, pads=[1, 1, 1, 1]),
    ]
    shapes = {"w1": (16, 1, 3, 3), "b1": (16,), "w2": (12, 16, 1, 1), "w3": (12, 1, 5, 5), "b3": (12,)}
    shapes.update({"w4": (5, 12, 1, 1), "w5": (10, 1, 3, 3), "w6": (1, 1, 3, 3), "b6": (1,)})
    inits = [const(rng, name, shape, 0.5) for name, shape in shapes.items()]
    inputs = {"x": [1, 16, 12, 10], "x1": [1, 1, 7, 6]}
    return model(nodes, inputs, {"y": [1, 10, 6, 5], "c3": [1, 12, 6, 5], "y1": [1, 1, 7, 6]}, inits)


def test_depthwise_bit_for_bit_onnxruntime(tmp_path):
    """A depthwise Conv is a fused multiply-add chain over its kernel from 0, then the bias (MLAS's
    order, ``fma_chain``): ONNX Runtime's bits where its channels are a multiple of 4, one, or a depth
    multiplier above 1 (docs/onnx.md; other channel counts stay within tolerance)."""
    path = _save(depthwise_chain_model(np.random.default_rng(4)), tmp_path, "depthwise")
    lib, ours, theirs = ours_and_onnxruntime(path, tmp_path, n=2)
    for k, (got, want) in enumerate(zip(ours, theirs)):
        for name, g, t in zip(("y", "c3", "y1"), got, want):
            assert_same_bits(g, t, f"{name}, input set {k}")
    depthwise = [op for op in lib.graph.operators if op.kind == "DEPTHWISE_CONV_2D"]
    assert len(depthwise) == 3 and all(op.options.get("fma_chain") for op in depthwise)


@pytest.mark.long
@pytest.mark.parametrize("board", ["mps2_an386", "mps3_an547", "mps2_an385"])
def test_on_boards_equal_to_host_and_onnxruntime(tmp_path, board):
    """The M4 and M55 (their FPU's VFMA.F32) and the M3 (newlib's software fmaf) compute the same bits
    as the host and ONNX Runtime."""
    path = _save(dense_model(np.random.default_rng(7)), tmp_path, "dense")
    lib, ours, theirs = ours_and_onnxruntime(path, tmp_path, n=1)
    inputs = [np.random.default_rng(0).standard_normal((1, 520)).astype(np.float32)]
    host = HostProgram(lib, tmp_path / "again").run([inputs])[0].outputs
    _, _, run = run_on_board(path, board, tmp_path / "project", input=inputs, log=lambda _: None)
    assert_same_bits(run.outputs[0], host[0], f"{board} vs the host")
    assert_same_bits(host[0], session(path).run(None, {"x": inputs[0]})[0], "host vs ONNX Runtime")


@pytest.mark.long
@pytest.mark.parametrize("board", ["mps2_an386", "mps3_an547"])
def test_conv_on_boards_equal_to_host(tmp_path, board):
    """The convolutions as FULLY_CONNECTED with fused multiply-adds: the M4 and M55 give the host's bits."""
    path = _save(conv_chain_model(np.random.default_rng(12)), tmp_path, "convs")
    lib, ours, theirs = ours_and_onnxruntime(path, tmp_path, n=1)
    x = inputs_for(path, 1)[0]
    _, _, run = run_on_board(path, board, tmp_path / "project", input=x, log=lambda _: None)
    for got, host, want in zip(run.outputs, ours[0], theirs[0]):
        assert_same_bits(got, host, f"{board} vs the host")
        assert_same_bits(host, want, "host vs ONNX Runtime")


def test_unsupported_operators_listed_at_once(tmp_path):
    rng = np.random.default_rng(3)
    nodes = [helper.make_node("Erf", ["x"], ["e"]), helper.make_node("Erf", ["e"], ["f"])]
    nodes += [helper.make_node("Elu", ["f"], ["g"]), helper.make_node("MatMul", ["g", "w"], ["y"])]
    path = _save(model(nodes, {"x": [1, 4]}, {"y": [1, 2]}, [const(rng, "w", (4, 2))]), tmp_path, "erf")
    with pytest.raises(UnsupportedModelError, match=r"unsupported ONNX operators: Elu, Erf \(x2\);"):
        load_tflite(path)  # quantized operators: tests/test_onnx_qdq.py


def test_damaged_and_inconsistent_files_one_line(tmp_path):
    good = (MODELS / "small_cnn_float32.onnx").read_bytes()
    (tmp_path / "cut.onnx").write_bytes(good[: len(good) // 3])
    (tmp_path / "text.onnx").write_bytes(b"hello, not a model")
    for name in ("cut", "text"):
        with pytest.raises(ModelFormatError, match="not an ONNX model|truncated|corrupted|inconsistent"):
            load_tflite(tmp_path / f"{name}.onnx")
    rng = np.random.default_rng(4)
    old = model([helper.make_node("Relu", ["x"], ["y"])], {"x": [1, 4]}, {"y": [1, 4]}, opset=11)
    with pytest.raises(UnsupportedModelError, match="opset 11; .*opset_version=13"):
        load_tflite(_save(old, tmp_path, "old"))
    dynamic = model([helper.make_node("Relu", ["x"], ["y"])], {"x": [1, "n"]}, {"y": [1, "n"]})
    with pytest.raises(UnsupportedModelError, match="dynamic dimension 1"):
        load_tflite(_save(dynamic, tmp_path, "dynamic"))
    unsorted = model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], {"x": [1, 4]}, {"y": [1, 2]}, [const(rng, "w", (4, 2))]
    )
    unsorted.graph.node[0].input[0] = "nowhere"
    with pytest.raises(ModelFormatError, match="reads 'nowhere' before any node writes it"):
        load_tflite(_save(unsorted, tmp_path, "unsorted"))
    short = model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], {"x": [1, 4]}, {"y": [1, 2]}, [const(rng, "w", (4, 2))]
    )
    short.graph.initializer[0].raw_data = short.graph.initializer[0].raw_data[:-4]
    with pytest.raises(ModelFormatError, match="holds 28 bytes; the file is corrupted"):
        load_tflite(_save(short, tmp_path, "short"))


def test_external_data_stays_in_the_models_folder(tmp_path):
    rng = np.random.default_rng(5)
    m = model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], {"x": [1, 64]}, {"y": [1, 32]}, [const(rng, "w", (64, 32))]
    )
    folder = tmp_path / "model"
    folder.mkdir()
    onnx.save(m, folder / "ok.onnx", save_as_external_data=True, location="ok.weights", size_threshold=0)
    assert load_tflite(folder / "ok.onnx").operators[0].kind == "FULLY_CONNECTED"
    (tmp_path / "secret.bin").write_bytes(b"\0" * 64 * 32 * 4)
    for location, message in (("../secret.bin", "outside the model's folder"), ("ok.weights", "truncated")):
        bad = onnx.load(folder / "ok.onnx", load_external_data=False)
        entry = {e.key: e for e in bad.graph.initializer[0].external_data}
        entry["location"].value = location
        if message == "truncated":
            entry.setdefault("offset", bad.graph.initializer[0].external_data.add())
            bad.graph.initializer[0].external_data.add(key="length", value=str(64 * 32 * 4 + 4))
        onnx.save(bad, folder / "bad.onnx")
        with pytest.raises(ModelFormatError, match=message):
            load_tflite(folder / "bad.onnx")


def test_cli_compile_and_check(tmp_path):
    (tmp_path / "bad.onnx").write_bytes(b"\x08\x07garbage")
    bad = cli("compile", tmp_path / "bad.onnx", "-o", tmp_path / "bad")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().count("\n") == 0 and "not an ONNX model" in bad.stderr
    check = cli("compile", "--check", MODELS / "small_cnn_qdq_int8.onnx")
    assert check.returncode == 0 and "QLinearConv" in check.stdout  # the operators ONNX Runtime runs
