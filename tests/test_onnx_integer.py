"""ONNX Runtime's dynamic quantization (docs/onnx.md, "MatMulInteger, ConvInteger: quantize_dynamic"):
DynamicQuantizeLinear, MatMulInteger, ConvInteger (and ONNX Runtime's fused DynamicQuantizeMatMul) then
Cast and the Mul by the scales, compiled to float32 integer arithmetic that is exact, bit for bit against
ONNX Runtime on the host; what is not supported, or damaged, in one line."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_models import assert_same_bits, const, model, session
from onnxruntime.quantization import QuantType, quantize_dynamic

from microcompiler.compiler import compile_model
from microcompiler.errors import UnsupportedModelError
from microcompiler.frontend.tflite import load_tflite
from microcompiler.host import HostProgram


def _input_sets(rng, shape) -> list[list[np.ndarray]]:
    """Ordinary, wide, tiny, one-signed and all-zero inputs (DynamicQuantizeLinear's scale 1 there)."""
    sets = [(rng.standard_normal(shape) * s).astype(np.float32) for s in (1, 3, 1e4, 1e-20)]
    sets += [np.abs(sets[0]), -np.abs(sets[1]), np.zeros(shape, np.float32), np.round(sets[1] * 2) / 2]
    return [[s.astype(np.float32)] for s in sets]


def _compare(path, tmp_path, shape, rng) -> list[str]:
    library = compile_model(path)
    sets = _input_sets(rng, shape)
    ours = [r.outputs for r in HostProgram(library, tmp_path / "build").run(sets)]
    s = session(path)
    name = s.get_inputs()[0].name
    for k, (got, inputs) in enumerate(zip(ours, sets)):
        for g, want in zip(got, s.run(None, {name: inputs[0]})):
            assert_same_bits(g, want, f"{path.name} input set {k}")
    assert len({np.asarray(o[0]).tobytes() for o in ours}) > 4, "the outputs do not depend on the input"
    return [op.kind for op in library.graph.operators]


def _float_model(rng) -> onnx.ModelProto:
    """A Conv (5 channels, stride 2, padded) -> Relu -> Flatten -> MatMul + Add: what quantize_dynamic quantizes."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"]),
        helper.make_node("MatMul", ["f", "w2"], ["m"]),
        helper.make_node("Add", ["m", "b2"], ["y"]),
    ]
    inits = [const(rng, "w1", (5, 3, 3, 3)), const(rng, "b1", (5,), 0.1), const(rng, "w2", (5 * 4 * 4, 10), 0.2)]
    inits.append(const(rng, "b2", (10,), 0.1))
    return model(nodes, {"x": [1, 3, 8, 8]}, {"y": [1, 10]}, inits)


@pytest.mark.parametrize("weights,per_channel", [(QuantType.QInt8, False), (QuantType.QUInt8, True)])
def test_quantize_dynamic_bit_for_bit(tmp_path, weights, per_channel):
    """ONNX Runtime's quantize_dynamic on a Conv + MatMul model (int8 weights per tensor; uint8 weights with
    per-column zero points): ConvInteger, ONNX Runtime's fused DynamicQuantizeMatMul; every output bit."""
    rng = np.random.default_rng(5)
    float_path, dynamic = tmp_path / "float.onnx", tmp_path / "dynamic.onnx"
    onnx.save(_float_model(rng), float_path)
    quantize_dynamic(
        float_path, dynamic, weight_type=weights, per_channel=per_channel, op_types_to_quantize=["Conv", "MatMul"]
    )
    written = {n.op_type for n in onnx.load(dynamic).graph.node}
    assert {"DynamicQuantizeLinear", "ConvInteger", "MatMulInteger"} <= written
    kinds = _compare(dynamic, tmp_path, [1, 3, 8, 8], rng)
    assert {"REDUCE_MIN", "REDUCE_MAX", "ROUND", "FULLY_CONNECTED"} <= set(kinds)


def _integer_model(rng, w_zp_conv, b, b_zp) -> onnx.ModelProto:
    """DynamicQuantizeLinear -> ConvInteger (uint8 weights and zero point, asymmetric pads)
    -> Cast -> Mul; and DynamicQuantizeLinear -> MatMulInteger (no fusion: the int32 sum is an output too)."""
    w = rng.integers(0, 256, (4, 2, 3, 2)).astype(np.uint8)
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("ConvInteger", ["xq", "w", "xz", "wz"], ["ci"], pads=[0, 1, 2, 0]),
        helper.make_node("Cast", ["ci"], ["cf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["xs", "ws"], ["s"]),
        helper.make_node("Mul", ["cf", "s"], ["y"]),
        helper.make_node("Flatten", ["x"], ["f"]),
        helper.make_node("DynamicQuantizeLinear", ["f"], ["fq", "fs", "fz"]),
        helper.make_node("MatMulInteger", ["fq", "b", "fz", "bz"], ["mi"]),
        helper.make_node("Cast", ["mi"], ["z"], to=TensorProto.FLOAT),
    ]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(w_zp_conv, "wz")]
    inits += [numpy_helper.from_array(np.float32(0.02), "ws"), numpy_helper.from_array(b, "b")]
    inits.append(numpy_helper.from_array(b_zp, "bz"))
    graph = helper.make_graph(
        nodes,
        "integer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 6])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, None),
        ],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_conv_and_matmul_integer_zero_points(tmp_path):
    """ConvInteger with uint8 weights and zero point, MatMulInteger with int8 weights and a zero point per
    column, as written (the int32 sum itself an output): ONNX Runtime's bits. A ConvInteger zero point per
    output channel, which ONNX Runtime does not run, is refused in one line."""
    rng = np.random.default_rng(3)
    b = rng.integers(-128, 128, (60, 7)).astype(np.int8)
    column_zp = rng.integers(-128, 128, 7).astype(np.int8)
    path = tmp_path / "integer.onnx"
    onnx.save(_integer_model(rng, np.uint8(131), b, column_zp), path)
    kinds = _compare(path, tmp_path, [1, 2, 5, 6], rng)
    assert kinds.count("REDUCE_MIN") == 2
    per_channel = _integer_model(rng, np.array([0, 3, 128, 255], np.uint8), b, column_zp)
    _refused(tmp_path, per_channel, r"weights zero point per output channel.*not supported yet")


def _refused(tmp_path, m: onnx.ModelProto, pattern: str) -> None:
    path = tmp_path / "bad.onnx"
    onnx.save(m, path)
    with pytest.raises(UnsupportedModelError, match=pattern) as info:
        load_tflite(path)
    assert "\n" not in str(info.value)


def test_unsupported_and_damaged_one_line(tmp_path):
    rng = np.random.default_rng(4)
    deep = np.where(rng.random((600, 7)) < 0.5, -127, 127).astype(np.int8)  # 255 * sum |w| beyond 2^24
    graph = helper.make_graph(
        [
            helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
            helper.make_node("MatMulInteger", ["xq", "b", "xz"], ["y"]),
        ],
        "deep",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 600])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 7])],
        [numpy_helper.from_array(deep, "b")],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    _refused(tmp_path, m, r"beyond 2\^24.*not supported yet")
    b = rng.integers(-128, 128, (60, 7)).astype(np.int8)
    zp = np.zeros(3, np.int8)  # 3 zero points for 7 columns
    _refused(tmp_path, _integer_model(rng, np.uint8(1), b, zp), r"zero point has 3 values; expected 1 or 7 .*damaged")
    graph = helper.make_graph(  # MatMulInteger of a static QuantizeLinear: not quantize_dynamic's pattern
        [
            helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
            helper.make_node("MatMulInteger", ["q", "b", "z"], ["i"]),
            helper.make_node("Cast", ["i"], ["y"], to=TensorProto.FLOAT),
        ],
        "static",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 60])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 7])],
        [numpy_helper.from_array(b, "b"), numpy_helper.from_array(np.float32(0.1), "s")]
        + [numpy_helper.from_array(np.int8(3), "z")],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    _refused(tmp_path, m, r"DynamicQuantizeLinear's output.*not supported yet")


@pytest.mark.long
@pytest.mark.parametrize("board", ["mps2_an386", "mps2_an385"])
def test_quantize_dynamic_on_boards_equal_to_host(tmp_path, board):
    """The quantize_dynamic model's float32 integer arithmetic on the M4 (FPU) and the M3 (software
    float): the host's bits, which are ONNX Runtime's."""
    from microcompiler.project import run_on_board

    rng = np.random.default_rng(6)
    float_path, dynamic = tmp_path / "float.onnx", tmp_path / "dynamic.onnx"
    onnx.save(_float_model(rng), float_path)
    quantize_dynamic(float_path, dynamic, weight_type=QuantType.QUInt8, per_channel=True)
    x = (rng.standard_normal((1, 3, 8, 8)) * 3).astype(np.float32)
    host = HostProgram(compile_model(dynamic), tmp_path / "host").run([[x]])[0].outputs
    _, _, run = run_on_board(dynamic, board, tmp_path / "project", input=[x], log=lambda _: None)
    assert_same_bits(run.outputs[0], host[0], f"{board} vs the host")
    assert_same_bits(host[0], session(dynamic).run(None, {"x": x})[0], "host vs ONNX Runtime")
