"""Import a float32 ``.onnx`` model into the graph IR (docs/onnx.md).

ONNX is NCHW; the IR (TFLite's) is NHWC. The layout changes once: a 4-D value that a Conv, a pool or
a BatchNormalization makes lives in the IR as NHWC (``_Value.nhwc``), weights are transposed at
import, and a value goes back to ONNX's layout only where an operator needs it there (Reshape,
Flatten, Gemm, MatMul, a model output): one TRANSPOSE, or a free RESHAPE when the channel or the
spatial size is 1. The compiled model's inputs and outputs keep the ONNX model's shapes and layout.
Nodes whose inputs are all constants (shape arithmetic, Constant) are evaluated at import with the
``onnx`` package's reference evaluator. BatchNormalization after a Conv is folded into its weights
the way ONNX Runtime's ConvBNFusion folds it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from microcompiler.errors import ModelFormatError, UnsupportedModelError, printable
from microcompiler.frontend import onnx_conv, onnx_layers, onnx_qdq, onnx_qdq_tables
from microcompiler.frontend.onnx_layers import _Value
from microcompiler.frontend.onnx_read import (
    check_operators,
    initializer_array,
    onnx_module,
    read_onnx,
    value_dtype,
    value_shape,
)
from microcompiler.frontend.onnx_values import check_elements
from microcompiler.ir import Graph, Operator, Tensor

_MOVES = frozenset({"RESHAPE", "TRANSPOSE", "MAX_POOL_2D", "CONCATENATION"})  # keep an int8 value's quantization
_FOLD_LIMIT = 1 << 22  # elements of a value computed at import from constants


def load_onnx(path: Path, name: str) -> Graph:
    """Read, check and convert an ``.onnx`` file; the graph is named ``name``."""
    model = read_onnx(path)
    if onnx_qdq.is_qdq(model):  # quantized: import what ONNX Runtime's optimizer makes of it
        model = onnx_qdq.ort_optimized(model)
        onnx_qdq.warn_unfused_convs(model, str(path))
        onnx_qdq_tables.fuse_tables(model)  # its float Mul/Add between DQ and Q: per-channel int8 tables
        check_operators(model, onnx_qdq_tables.SUPPORTED)
        return _Importer(model, name, {**onnx_layers.CONVERTERS, **onnx_qdq_tables.CONVERTERS}).graph()
    check_operators(model, onnx_layers.SUPPORTED)
    return _Importer(model, name).graph()


class _Importer:
    def __init__(self, model: Any, name: str, converters: dict | None = None):
        self.model = model
        self.converters = converters or onnx_layers.CONVERTERS
        self.name = name
        self.tensors: list[Tensor] = []
        self.operators: list[Operator] = []
        self.values: dict[str, _Value] = {}
        self.layouts: dict[tuple[int, bool], int] = {}  # (tensor, to NHWC) -> converted tensor
        self.readers: dict[str, int] = {}
        self.node_index = 0
        self.residual_adds: dict[str, tuple[str, int]] = {}  # Add -> the Conv ONNX Runtime fuses it with
        self.residual_convs: set[str] = set()
        self.deferred: dict[str, tuple] = {}  # such a Conv's output -> (node, inputs, attributes)
        self.biasless: dict[str, Operator] = {}  # MatMul output -> its FULLY_CONNECTED, for a following Add

    # --- the graph --------------------------------------------------------------------------------
    def graph(self) -> Graph:
        g = self.model.graph
        for t in g.initializer:
            self.values[t.name] = _Value(tuple(int(d) for d in t.dims), initializer_array(t))
        inputs = []
        for v in g.input:
            if v.name in self.values:
                continue  # an initializer listed as an input (old exporters): a constant
            shape = value_shape(v, "input")
            index = self.add_tensor(v.name, shape, value_dtype(v, "input"))
            self.values[v.name] = _Value(shape, tensor=index)
            inputs.append(index)
        if not inputs:
            raise ModelFormatError("the ONNX model has no inputs (every graph input is a constant); re-export it")
        for node in g.node:
            for i in node.input:
                self.readers[i] = self.readers.get(i, 0) + 1
        for o in g.output:
            self.readers[o.name] = self.readers.get(o.name, 0) + 1
        onnx_layers.fold_batch_norms(self)
        onnx_conv.fold_conv_mul_add(self)
        self.residual_adds = onnx_conv.find_residual_adds(self)
        self.residual_convs = {conv for conv, _ in self.residual_adds.values()}
        for k, node in enumerate(g.node):
            self.node_index = k
            self.convert(node)
        outputs = []
        for o in g.output:
            value_dtype(o, "output")
            v = self.get(o.name)
            if v.const is not None:
                raise UnsupportedModelError(
                    f"model output '{printable(o.name)}' is a constant (it does not depend on the input); "
                    "remove it from the model's outputs"
                )
            index = self.plain(v)
            if index in inputs or index in outputs:  # an output that is an input or another output: a copy
                index = self.emit("RESHAPE", [index, self.shape_const(v.shape)], v.shape, {}, o.name)
            self.tensors[index].name = printable(o.name)
            outputs.append(index)
        return Graph(self.name, self.tensors, self.operators, inputs, outputs)

    def convert(self, node: Any) -> None:
        names = list(node.input)
        for i in names:
            if i and i not in self.values:
                raise ModelFormatError(
                    f"ONNX node {self.node_index} ({printable(node.op_type)} '{printable(node.name)}') reads "
                    f"'{printable(i)}' before any node writes it; the file is corrupted or not topologically sorted"
                )
        ins = [self.values[i] if i else None for i in names]
        if node.op_type in onnx_layers.IDENTITY:
            self.values[node.output[0]] = ins[0]  # type: ignore[assignment]
            return
        exact = node.op_type == "DequantizeLinear"  # of a constant: as ONNX Runtime computes it, not folded
        if not exact and (all(v is None or v.const is not None for v in ins) or node.op_type == "Shape"):
            folded = self.fold(node, ins)
            if folded is not None:
                for o, arr in zip(node.output, folded):
                    self.values[o] = _Value(arr.shape, arr)
                return
        if node.op_type not in self.converters:
            raise UnsupportedModelError(
                f"{self.where(node)} computes on values that are not constants; microcompiler folds "
                f"{node.op_type} only when its inputs are constants (shape arithmetic)"
            )
        results = self.converters[node.op_type](self, node, ins, attributes(node))
        for o, v in zip(node.output, results):
            self.values[o] = v

    def fold(self, node: Any, ins: list[_Value | None]) -> list[np.ndarray] | None:
        """Evaluate a node of constants (or a Shape of a fixed-shape value) at import."""
        if node.op_type == "Shape":
            if ins[0] is None:
                raise ModelFormatError(f"{self.where(node)} has no input; the file is corrupted")
            attrs = attributes(node)
            shape = np.array(ins[0].shape, dtype=np.int64)
            return [shape[int(attrs.get("start", 0)) : attrs.get("end", None)]]
        onnx = onnx_module()
        from onnx.reference import ReferenceEvaluator

        feeds = {n: v.const for n, v in zip(node.input, ins) if v is not None}
        opset = onnx.helper.make_opsetid("", max(o.version for o in self.model.opset_import if o.domain == ""))
        graph = onnx.helper.make_graph(
            [node],
            "fold",
            [onnx.helper.make_tensor_value_info(n, 0, None) for n in feeds],
            [onnx.helper.make_tensor_value_info(o, 0, None) for o in node.output],
        )
        try:
            results = ReferenceEvaluator(onnx.helper.make_model(graph, opset_imports=[opset])).run(None, feeds)
        except Exception as exc:
            raise ModelFormatError(
                f"{self.where(node)}: its constant inputs cannot be evaluated ({printable(str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__)}); "
                "the model is inconsistent: re-export it"
            ) from None
        out = [np.asarray(r) for r in results]
        if any(r.size > _FOLD_LIMIT for r in out):
            raise UnsupportedModelError(f"{self.where(node)} makes a constant of more than {_FOLD_LIMIT} elements")
        return out

    # --- tensors and operators ------------------------------------------------------------------
    def where(self, node: Any) -> str:
        return f"ONNX node {self.node_index} ({printable(node.op_type)} '{printable(node.name)}')"

    def get(self, name: str) -> _Value:
        if name not in self.values:
            raise ModelFormatError(
                f"the ONNX graph's output '{printable(name)}' is never written; the file is corrupted"
            )
        return self.values[name]

    def add_tensor(self, name: str, shape: tuple[int, ...], dtype: str, data: np.ndarray | None = None) -> int:
        if any(d <= 0 for d in shape) and data is None:
            raise UnsupportedModelError(
                f"value '{printable(name)}' has shape {list(shape)} with no elements; microcompiler cannot run "
                "zero-sized tensors: export the model with non-empty shapes"
            )
        check_elements(name, shape)
        self.tensors.append(Tensor(printable(name) or f"tensor_{len(self.tensors)}", tuple(shape), dtype, None, data))
        return len(self.tensors) - 1

    def const(self, arr: np.ndarray, name: str = "const", dtype: str = "float32") -> int:
        from microcompiler.ir import np_dtype

        data = np.ascontiguousarray(np.asarray(arr, dtype=np_dtype(dtype)))
        return self.add_tensor(f"{name}_{len(self.tensors)}", tuple(data.shape), dtype, data)

    def shape_const(self, shape: tuple[int, ...]) -> int:
        return self.const(np.array(shape, dtype=np.int32), "shape", "int32")

    def emit(self, kind: str, inputs: list[int], shape: tuple[int, ...], options: dict, name: str) -> int:
        source = self.tensors[inputs[0]] if inputs and inputs[0] >= 0 else None
        if kind in _MOVES and source is not None and source.dtype == "int8":  # an int8 value moved: int8 too
            out = self.add_tensor(name, shape, "int8")
            self.tensors[out].quant = source.quant
        else:
            out = self.add_tensor(name, shape, "float32")
        self.operators.append(Operator(kind, inputs, [out], dict(options), len(self.operators)))
        return out

    def float_input(self, v: _Value, node: Any) -> None:
        if v.const is not None and v.const.dtype != np.float32:
            raise UnsupportedModelError(f"{self.where(node)} reads a {v.const.dtype} constant; expected float32")
        if v.const is None and self.tensors[v.tensor].dtype != "float32":
            raise UnsupportedModelError(f"{self.where(node)} reads a non-float32 value")

    # --- layouts --------------------------------------------------------------------------------
    def plain(self, v: _Value) -> int:
        """The IR tensor holding ``v`` in ONNX's layout."""
        if v.const is not None:
            if v.tensor < 0:
                v.tensor = self.const(v.const.astype(np.float32))
            return v.tensor
        if not v.nhwc:
            return v.tensor
        return self._relayout(v.tensor, v.shape, to_nhwc=False)

    def nhwc(self, v: _Value) -> int:
        """The IR tensor holding the 4-D ``v`` as NHWC."""
        if len(v.shape) != 4:
            raise UnsupportedModelError(f"a spatial operator reads a {len(v.shape)}-D value; expected NCHW")
        if v.const is not None:
            return self.const(np.transpose(v.const, (0, 2, 3, 1)))
        if v.nhwc:
            return v.tensor
        return self._relayout(v.tensor, v.shape, to_nhwc=True)

    def _relayout(self, tensor: int, nchw: tuple[int, ...], to_nhwc: bool) -> int:
        key = (tensor, to_nhwc)
        if key not in self.layouts:
            n, c, h, w = nchw
            shape = (n, h, w, c) if to_nhwc else nchw
            name = f"{self.tensors[tensor].name}_{'nhwc' if to_nhwc else 'nchw'}"
            if c == 1 or h * w == 1:  # the same element order: a free reshape
                self.layouts[key] = self.emit("RESHAPE", [tensor, self.shape_const(shape)], shape, {}, name)
            else:
                perm = np.array((0, 2, 3, 1) if to_nhwc else (0, 3, 1, 2), dtype=np.int32)
                self.layouts[key] = self.emit("TRANSPOSE", [tensor, self.const(perm, "perm", "int32")], shape, {}, name)
        return self.layouts[key]


def attributes(node: Any) -> dict[str, Any]:
    """A node's attributes as Python values (ints, floats, strings, lists, tensors as arrays)."""
    onnx = onnx_module()
    values: dict[str, Any] = {}
    for a in node.attribute:
        if a.type == onnx.AttributeProto.TENSOR:
            values[a.name] = initializer_array(a.t)
        elif a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            raise UnsupportedModelError(
                f"ONNX operator {printable(node.op_type)} carries a subgraph (If/Loop/Scan); not supported"
            )
        else:
            value = onnx.helper.get_attribute_value(a)
            values[a.name] = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return values
