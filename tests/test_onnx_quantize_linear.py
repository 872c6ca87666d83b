"""ONNX Runtime's QuantizeLinear (float32 -> int8; docs/onnx.md "QDQ int8"): x / scale in float32, clamped,
rounded half to even, plus the zero point; a NaN gives the lower bound. On cores with an FPU and the DSP
extension eight values per step (kernel_math.h ``mc_quantize_even_s8_x8``: one VLDMIA, one NaN test for
the eight, VCVTR, SSAT) and the tail one at a time: ties, saturation at both ends, NaN and infinities
(also inf - inf in a block, whose sum is NaN), against ONNX Runtime; then DequantizeLinear from its
table of 256 results (ops/quantize.py)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_models import assert_same_bits, session

from microcompiler.compiler import compile_model
from microcompiler.host import HostProgram
from microcompiler.project import run_on_board

SIZE = 8 * 8 + 5  # eight blocks of eight and a tail of five (and DequantizeLinear from its table: 64 values or more)


def _model(path, scale: float, zero_point: int) -> None:
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"]),
    ]
    inits = [
        numpy_helper.from_array(np.array(scale, np.float32), "s"),
        numpy_helper.from_array(np.array(zero_point, np.int8), "z"),
    ]
    graph = helper.make_graph(
        nodes,
        "quantize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, SIZE])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, SIZE])],
        inits,
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def _inputs(scale: float) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    ties = (np.arange(-20, 20) + 0.5).astype(np.float32) * np.float32(scale)  # halves: round to even
    plain = (rng.standard_normal(SIZE) * 60 * scale).astype(np.float32)
    edge = plain.copy()
    edge[[1, 17, 66]] = np.nan  # a NaN in two blocks and in the tail
    edge[[9, 10]] = [np.inf, -np.inf]  # inf - inf: the block's sum is NaN, a false alarm
    edge[[33, 67]] = [1e30, -1e30]
    return [np.resize(ties, SIZE)[None], plain[None], edge[None]]


@pytest.mark.parametrize(("scale", "zero_point"), [(0.05, 0), (0.2, -7), (0.013, 4)])
def test_quantize_linear_host_bit_for_bit(tmp_path, scale, zero_point):
    path = tmp_path / "q.onnx"
    _model(path, scale, zero_point)
    lib = compile_model(path)
    assert "QUANTIZE" in {op.kind for op in lib.graph.operators}
    assert any(op.options.get("table") for op in lib.graph.operators if op.kind == "DEQUANTIZE")
    sets = [[x] for x in _inputs(scale)]
    ours = [r.outputs[0] for r in HostProgram(lib, tmp_path / "build").run(sets)]
    for k, (got, x) in enumerate(zip(ours, sets)):
        assert_same_bits(got, session(path).run(None, {"x": x[0]})[0], f"set {k}")


@pytest.mark.long
def test_quantize_linear_on_the_cortex_m4(tmp_path):
    """mps2_an386 (FPU, DSP extension: the eight-at-a-time path) gives ONNX Runtime's bits."""
    for scale, zero_point in [(0.05, 0), (0.2, -7)]:
        path = tmp_path / f"q{zero_point}.onnx"
        _model(path, scale, zero_point)
        for k, x in enumerate(_inputs(scale)):
            _, _, run = run_on_board(path, "mps2_an386", tmp_path / f"b{zero_point}_{k}", input=[x], log=lambda _: None)
            assert_same_bits(run.outputs[0], session(path).run(None, {"x": x})[0], f"zp {zero_point}, set {k}")
