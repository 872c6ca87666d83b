"""QOperator-format models (docs/onnx.md, "QDQ int8"), as ONNX Runtime's quantize_static writes them
(int8 and uint8 activations): QLinearMul and QLinearAdd by a constant, QLinearMul with a broadcast input,
QLinearAdd of two activations (one shape, or one broadcast) on all input pairs, and whole models; every
output bit equal to ONNX Runtime's on the host."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx_models import assert_same_bits, const, model, session
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

from microcompiler.compiler import compile_model
from microcompiler.host import HostProgram


class _Reader(CalibrationDataReader):
    def __init__(self, samples):
        self.samples = iter([{"x": s} for s in samples])

    def get_next(self):
        return next(self.samples, None)


def _mul_model(rng, case: str) -> onnx.ModelProto:
    """A Conv, then its Mul by a constant (one value, per channel, or per element) or by a squeeze-excite
    gate of shape [1, C, 1, 1], then a Conv."""
    c = 3
    mul = [helper.make_node("Mul", ["c", "k"], ["m"])]
    inits = [const(rng, "w", (c, 2, 1, 1)), const(rng, "w3", (4, c, 1, 1))]
    if case == "gate":
        mul = [
            helper.make_node("GlobalAveragePool", ["c"], ["g"]),
            helper.make_node("Sigmoid", ["g"], ["sg"]),
            helper.make_node("Mul", ["c", "sg"], ["m"]),
        ]
    else:
        inits.append(const(rng, "k", {"scalar": (), "channels": (1, c, 1, 1), "elements": (1, c, 4, 5)}[case], 2.0))
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), *mul, helper.make_node("Conv", ["m", "w3"], ["y"])]
    return model(nodes, {"x": [1, 2, 4, 5]}, {"y": [1, 4, 4, 5]}, inits)


def _quantized_mul_model(tmp_path, rng, case: str, activations):
    """_mul_model quantized by quantize_static in the QOperator format (per-channel int8 weights)."""
    float_path, qop = tmp_path / "mul.onnx", tmp_path / "mul_qop.onnx"
    onnx.save(_mul_model(rng, case), float_path)
    calibration = (rng.standard_normal((8, 1, 2, 4, 5)) + 0.5).astype(np.float32)
    options = dict(quant_format=QuantFormat.QOperator, weight_type=QuantType.QInt8, per_channel=True)
    quantize_static(str(float_path), str(qop), _Reader(calibration), activation_type=activations, **options)
    return qop


@pytest.mark.parametrize(
    "case,activations,kind",
    [
        ("scalar", QuantType.QInt8, "MC_TABLE_CHANNELS_INT8"),
        ("channels", QuantType.QUInt8, "MC_TABLE_CHANNELS_INT8"),
        ("elements", QuantType.QInt8, "MC_QLINEAR_MUL_INT8"),
        ("gate", QuantType.QUInt8, "BROADCAST_TO"),
    ],
)
def test_qlinear_mul_constant_and_broadcast(tmp_path, case, activations, kind):
    rng = np.random.default_rng(12)
    qop = _quantized_mul_model(tmp_path, rng, case, activations)
    assert "QLinearMul" in {n.op_type for n in onnx.load(qop).graph.node}
    lib = compile_model(qop)
    assert kind in {op.kind for op in lib.graph.operators}
    sets = [[(rng.standard_normal((1, 2, 4, 5)) * s).astype(np.float32)] for s in (0.5, 1, 3, 10)]
    ours = [r.outputs for r in HostProgram(lib, tmp_path / "build").run(sets)]
    s = session(qop)
    for k, (got, inputs) in enumerate(zip(ours, sets)):
        assert_same_bits(got[0], s.run(None, {"x": inputs[0]})[0], f"{case} input set {k}")
    assert len({np.asarray(o[0]).tobytes() for o in ours}) > 1, "the outputs do not depend on the input"


def _with_logits(m: onnx.ModelProto) -> onnx.ModelProto:
    """The model with a second output: the dequantized input of its QLinearSoftmax (the random DS-CNN's
    softmax barely moves), so that the bits compared depend on the input."""
    softmax = next((n for n in m.graph.node if n.op_type == "QLinearSoftmax"), None)
    if softmax is None:
        return m
    m.graph.node.append(helper.make_node("DequantizeLinear", list(softmax.input[:3]), ["logits"]))
    m.graph.output.append(helper.make_tensor_value_info("logits", onnx.TensorProto.FLOAT, None))
    return m


@pytest.mark.parametrize(
    "name,activations",
    [("ds_cnn", QuantType.QInt8), ("ds_cnn", QuantType.QUInt8), ("small_cnn", QuantType.QUInt8)],
)
def test_qoperator_models_bit_for_bit(tmp_path, name, activations):
    """The committed float models quantized by quantize_static in the QOperator format (QLinearConv,
    QLinearMatMul, QLinearAdd and QLinearMul by the BatchNorm constants, QLinearGlobalAveragePool,
    QLinearSoftmax, an int8 MaxPool): every output bit equal to ONNX Runtime's."""
    from onnx_models import MODELS

    source = MODELS / f"{name}_float32.onnx"
    s = session(source)
    x = s.get_inputs()[0]
    shape = [d if isinstance(d, int) else 1 for d in x.shape]
    rng = np.random.default_rng(21)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.samples = iter([{x.name: rng.standard_normal(shape).astype(np.float32)} for _ in range(8)])

        def get_next(self):
            return next(self.samples, None)

    qop = tmp_path / "qop.onnx"
    options = dict(quant_format=QuantFormat.QOperator, weight_type=QuantType.QInt8, per_channel=True)
    quantize_static(str(source), str(qop), Reader(), activation_type=activations, **options)
    onnx.save(_with_logits(onnx.load(qop)), qop)
    assert "QLinearConv" in {n.op_type for n in onnx.load(qop).graph.node}
    lib = compile_model(qop)
    sets = [[(rng.standard_normal(shape) * s_).astype(np.float32)] for s_ in (0.5, 1, 3, 10)]
    ours = [r.outputs for r in HostProgram(lib, tmp_path / "build").run(sets)]
    oracle = session(qop)
    for k, (got, inputs) in enumerate(zip(ours, sets)):
        for g, want in zip(got, oracle.run(None, {x.name: inputs[0]})):
            assert_same_bits(g, want, f"{name} input set {k}")
    assert len({np.asarray(o[-1]).tobytes() for o in ours}) > 1, "the outputs do not depend on the input"


@pytest.mark.long
def test_qoperator_broadcast_on_board_equal_to_host(tmp_path):
    """The squeeze-excite QLinearMul (BROADCAST_TO, MC_QLINEAR_MUL_INT8) and the per-channel tables on the
    M4 (mps2_an386): the host's bits, which are ONNX Runtime's."""
    from microcompiler.project import run_on_board

    rng = np.random.default_rng(23)
    qop = _quantized_mul_model(tmp_path, rng, "gate", QuantType.QUInt8)
    x = (rng.standard_normal((1, 2, 4, 5)) * 3).astype(np.float32)
    host = HostProgram(compile_model(qop), tmp_path / "host").run([[x]])[0].outputs
    _, _, run = run_on_board(qop, "mps2_an386", tmp_path / "project", input=[x], log=lambda _: None)
    assert_same_bits(run.outputs[0], host[0], "mps2_an386 vs the host")
    assert_same_bits(host[0], session(qop).run(None, {"x": x})[0], "host vs ONNX Runtime")


def _add_pairs_model(rng, dtype, quantizations: int, step: int = 1):
    """Per quantization k (random scales and zero points): "a{k}" [256, 256] with a's quantization, "b{k}"
    [256, 1] and "t{k}" [256, 256] (b's values along the rows) with b's, QuantizeLinear, the QLinearAdds
    "y{k}" = a + b, "z{k}" = b + a, "w{k}" = a + t, DequantizeLinear. (model, inputs whose quantized
    values are every pair of the 256 values in each QLinearAdd; with ``step``, of every step-th value)."""
    from onnx import numpy_helper

    lo = 0 if dtype == np.uint8 else -128
    grid = np.arange(lo, lo + 256, step)
    n = grid.size
    values = {"a": np.tile(grid, (n, 1)), "b": grid.reshape(n, 1), "t": np.tile(grid, (n, 1)).T}
    quantized_as = {"a": "a", "b": "b", "t": "b"}
    nodes, inits, feeds, outputs = [], [], {}, {}
    for k in range(quantizations):
        scales = np.exp(rng.uniform(-6, 0, 3)).astype(np.float32)
        points = rng.integers(lo, lo + 256, 3)
        for name, s, z in zip(("a", "b", "c"), scales, points):
            inits.append(numpy_helper.from_array(s, f"s{name}{k}"))
            inits.append(numpy_helper.from_array(np.array(z, dtype), f"z{name}{k}"))
        for name, q in values.items():
            s, z = scales[int(name != "a")], points[int(name != "a")]
            x = ((q - z) * s).astype(np.float32)
            assert np.array_equal(np.clip(np.rint(x / s) + z, lo, lo + 255), q)  # every value exactly
            feeds[f"{name}{k}"] = x
            quant = [f"s{quantized_as[name]}{k}", f"z{quantized_as[name]}{k}"]
            nodes.append(helper.make_node("QuantizeLinear", [f"{name}{k}", *quant], [f"q{name}{k}"]))
        for out, first, second in ((f"y{k}", "a", "b"), (f"z{k}", "b", "a"), (f"w{k}", "a", "t")):
            names = []
            for v in (first, second):
                names += [f"q{v}{k}", f"s{quantized_as[v]}{k}", f"z{quantized_as[v]}{k}"]
            nodes.append(
                helper.make_node("QLinearAdd", [*names, f"sc{k}", f"zc{k}"], [f"{out}q"], domain="com.microsoft")
            )
            nodes.append(helper.make_node("DequantizeLinear", [f"{out}q", f"sc{k}", f"zc{k}"], [out]))
            outputs[out] = [n, n]
    inputs = {name: list(x.shape) for name, x in feeds.items()}
    return model(nodes, inputs, outputs, inits, domains=["com.microsoft"]), feeds


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_qlinear_add_all_pairs(tmp_path, dtype):
    """QLinearAdd of two activations of one shape, and where one is a scalar per row, each way round (ONNX
    Runtime exchanges MLAS's operands where the first input is the scalar), in the model's own int8 or
    uint8 zero points: all 65,536 input pairs of each layout over three random quantizations, every output
    bit ONNX Runtime's."""
    rng = np.random.default_rng(31 if dtype == np.int8 else 32)
    m, feeds = _add_pairs_model(rng, dtype, 3)
    path = tmp_path / "add.onnx"
    onnx.save(m, path)
    lib = compile_model(path)
    assert {"MC_QLINEAR_ADD_INT8", "BROADCAST_TO"} <= {op.kind for op in lib.graph.operators}
    s = session(path)
    names = [i.name for i in s.get_inputs()]
    ours = HostProgram(lib, tmp_path / "build").run([[feeds[n] for n in names]])[0].outputs
    for name, got, want in zip([o.name for o in s.get_outputs()], ours, s.run(None, feeds)):
        assert_same_bits(got, want, name)


@pytest.mark.long
def test_qlinear_add_on_board_equal_to_host(tmp_path):
    """The three QLinearAdd layouts (int8 zero points, every 16th value) on the M4 (mps2_an386): the
    host's bits, which are ONNX Runtime's."""
    from microcompiler.project import run_on_board

    m, feeds = _add_pairs_model(np.random.default_rng(33), np.int8, 2, step=16)
    path = tmp_path / "add.onnx"
    onnx.save(m, path)
    s = session(path)
    inputs = [feeds[i.name] for i in s.get_inputs()]
    host = HostProgram(compile_model(path), tmp_path / "host").run([inputs])[0].outputs
    _, _, run = run_on_board(path, "mps2_an386", tmp_path / "project", input=inputs, log=lambda _: None)
    for out, got, h, want in zip(s.get_outputs(), run.outputs, host, s.run(None, feeds)):
        assert_same_bits(got, h, f"{out.name}: mps2_an386 vs the host")
        assert_same_bits(h, want, f"{out.name}: host vs ONNX Runtime")
