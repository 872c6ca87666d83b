"""Every operator a model needs, supported or not, with every reason, in one go (no build).

``microcompiler compile MODEL --check`` prints it; ``analyze`` prints it instead of its analysis when
something is missing. A model is read twice at most: first only its operator codes (so a model with
operators microcompiler lacks is still listed whole, every unsupported kind with TFLite Micro's
stance and the Keras advice), then, if every kind has a kernel, whole, and each operator is checked
by its kernel (a kernel refuses configurations it cannot run: a type, an option, a shape). A damaged
file is still an error of its own (ModelFormatError), never a list.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import tflite

from microcompiler.compiler import check_operator
from microcompiler.errors import ModelFormatError, UnsupportedModelError, printable
from microcompiler.frontend.onnx_read import looks_like_onnx
from microcompiler.frontend.tflite import (
    check_header,
    load_tflite,
    operator_kind,
    raised_by_the_flatbuffer_reader,
    read_model_file,
)
from microcompiler.ops import supported_operators
from microcompiler.ops.tflm_operators import where_it_stands


@dataclass
class OperatorNeed:
    """One operator kind a model uses: how many operators, where, and whether microcompiler runs them."""

    kind: str
    operators: list[int] = field(default_factory=list)  # operator indices (in their subgraph)
    reasons: list[str] = field(default_factory=list)  # why not (distinct); empty when supported

    @property
    def supported(self) -> bool:
        return not self.reasons

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "count": len(self.operators),
            "operators": self.operators,
            "supported": self.supported,
            "reasons": self.reasons,
        }


def operator_needs(model: str | Path) -> list[OperatorNeed]:
    """The operator kinds ``model`` uses, in order of first use, each with its reasons if unsupported."""
    buf = read_model_file(model)
    if looks_like_onnx(Path(model), buf[:8]):
        return _onnx_needs(model)
    check_header(buf)
    needs: dict[str, OperatorNeed] = {}
    kernels = supported_operators()
    try:
        root = tflite.Model.GetRootAs(buf, 0)
        for s in range(root.SubgraphsLength()):
            sub = root.Subgraphs(s)
            for k in range(sub.OperatorsLength()):
                code = sub.Operators(k).OpcodeIndex()
                if not 0 <= code < root.OperatorCodesLength():
                    raise ModelFormatError(
                        f"operator {k} refers to opcode {code}, but there are "
                        f"{root.OperatorCodesLength()} opcodes; the file is corrupted"
                    )
                kind, custom = operator_kind(root.OperatorCodes(code))
                need = needs.setdefault(kind, OperatorNeed(kind))
                need.operators.append(k)
                if kind not in kernels and not need.reasons:
                    need.reasons.append(where_it_stands(kind, custom))
    except (ModelFormatError, UnsupportedModelError):
        raise
    except Exception as exc:
        if not raised_by_the_flatbuffer_reader(exc):
            raise  # microcompiler's own fault: a traceback to report, not the user's file
        raise ModelFormatError(
            "the model file is truncated or corrupted (its flatbuffer offsets point outside "
            "the file); re-export it from the TFLite converter"
        ) from None
    if all(n.supported for n in needs.values()):
        _check_each_operator(model, needs)
    return list(needs.values())


def _onnx_needs(model: str | Path) -> list[OperatorNeed]:
    """An ONNX model's operator types, in order of first use, with the reason for each unsupported one."""
    from microcompiler.frontend import onnx_layers, onnx_qdq, onnx_qdq_tables
    from microcompiler.frontend.onnx_read import QDQ_OPERATORS, read_onnx

    needs: dict[str, OperatorNeed] = {}
    proto = read_onnx(Path(model))
    supported = onnx_layers.SUPPORTED
    if onnx_qdq.is_qdq(proto):  # a quantized model: the operators ONNX Runtime's optimizer makes of it
        proto, supported = onnx_qdq.ort_optimized(proto), onnx_qdq_tables.SUPPORTED  # as load_onnx imports it
        onnx_qdq_tables.fuse_tables(proto)
    for k, node in enumerate(proto.graph.node):
        kind = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        need = needs.setdefault(printable(kind), OperatorNeed(printable(kind)))
        need.operators.append(k)
        if kind not in supported and not need.reasons:
            quantized = node.op_type in QDQ_OPERATORS or node.op_type.startswith("QLinear")
            need.reasons.append(
                "quantized ONNX operator (as ONNX Runtime fuses the QDQ model): not supported yet"
                if quantized
                else "no ONNX importer for it"
            )
    if all(n.supported for n in needs.values()):
        _check_each_operator(model, needs)
    return list(needs.values())


def _check_each_operator(model: str | Path, needs: dict[str, OperatorNeed]) -> None:
    """Every kind has a kernel: import the model whole and let each kernel check its operators."""
    try:
        graph = load_tflite(model)
    except UnsupportedModelError as exc:  # something beyond the operators (a tensor type, a shape)
        needs.setdefault("(model)", OperatorNeed("(model)")).reasons.append(str(exc))
        return
    for g in [graph, *graph.subgraphs.values()]:
        for op in g.operators:
            try:
                check_operator(op, g)
            except UnsupportedModelError as exc:
                reasons = needs.setdefault(op.kind, OperatorNeed(op.kind)).reasons
                if str(exc) not in reasons:
                    reasons.append(str(exc))


def missing(needs: list[OperatorNeed]) -> list[OperatorNeed]:
    return [n for n in needs if not n.supported]


def needs_lines(model_name: str, needs: list[OperatorNeed]) -> list[str]:
    """The list as text: a line per kind, then the reasons of the unsupported ones."""
    lacking = missing(needs)
    total = sum(len(n.operators) for n in needs)
    lines = [
        f"{model_name} uses {len(needs)} operator kinds ({total} operators): "
        + (f"{len(lacking)} not supported" if lacking else "all supported")
    ]
    width = max((len(n.kind) for n in needs), default=8)
    for n in needs:
        verdict = "supported" if n.supported else "NOT SUPPORTED"
        lines.append(f"  {n.kind:<{width}}  x{len(n.operators):<4} {verdict}")
        lines.extend(f"      {reason}" for reason in n.reasons)
    return lines


def missing_error(needs: list[OperatorNeed]) -> UnsupportedModelError:
    """The one-line error that ends a check that found unsupported operators."""
    kinds = [n.kind for n in missing(needs)]
    return UnsupportedModelError(
        f"{len(kinds)} of {len(needs)} operator kinds the model uses cannot be compiled "
        f"({', '.join(kinds)}); the lines above say why and what to do"
    )
