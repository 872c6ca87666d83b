"""Small ONNX models built with the ``onnx`` helper API, and ONNX Runtime as their oracle (tests/test_onnx.py).

The models made by the real tools (tf2onnx, quantize_static) are in tests/models/onnx; these add the
operator variants those do not cover (grouped/dilated/padded Conv, Gemm with a long depth, layouts).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from microcompiler.compiler import compile_model
from microcompiler.host import HostProgram

MODELS = Path(__file__).resolve().parent / "models" / "onnx"


def const(rng: np.random.Generator, name: str, shape, scale: float = 0.5) -> onnx.TensorProto:
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def scalar(value: float, name: str) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(value, dtype=np.float32), name)


def model(nodes, inputs: dict, outputs: dict, initializers=(), opset: int = 17, domains=()) -> onnx.ModelProto:
    """A checked float32 model: inputs/outputs name -> shape; ``domains``: more operator sets (com.microsoft)."""
    graph = helper.make_graph(
        nodes,
        "test",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs.items()],
        list(initializers),
    )
    m = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset), *(helper.make_opsetid(d, 1) for d in domains)]
    )
    onnx.checker.check_model(m, full_check=True)
    return m


def session(path: Path, optimized: bool = True) -> ort.InferenceSession:
    """ONNX Runtime's default CPU session (graph optimizations on), or one with them off."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    if not optimized:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def inputs_for(path: Path, n: int, seed: int = 0) -> list[list[np.ndarray]]:
    """n seeded standard-normal input sets (a symbolic batch is 1)."""
    rng = np.random.default_rng(seed)
    graph = onnx.load(path).graph
    initializers = {t.name for t in graph.initializer}
    shapes = [
        [d.dim_value if d.dim_value > 0 else 1 for d in v.type.tensor_type.shape.dim]
        for v in graph.input
        if v.name not in initializers
    ]
    return [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(n)]


def ours_and_onnxruntime(path: Path, work: Path, n: int = 3, optimized: bool = True):
    """(library, our host outputs per input set, ONNX Runtime's outputs per input set)."""
    library = compile_model(path)
    sets = inputs_for(path, n)
    ours = [r.outputs for r in HostProgram(library, work / "build").run(sets)]
    s = session(path, optimized)
    names = [i.name for i in s.get_inputs()]
    theirs = [s.run(None, dict(zip(names, inputs))) for inputs in sets]
    return library, ours, theirs


def assert_same_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32).reshape(np.shape(got))
    differ = got.view(np.uint32) != want.view(np.uint32)
    assert not differ.any(), (
        f"{what}: {int(differ.sum())} of {got.size} values differ; first at {np.argwhere(differ)[0].tolist()}: "
        f"ours {got[tuple(np.argwhere(differ)[0])]!r}, ONNX Runtime {want[tuple(np.argwhere(differ)[0])]!r}"
    )
