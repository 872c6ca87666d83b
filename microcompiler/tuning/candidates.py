"""The candidates of each operator: the knob settings its kernel offers that generate distinct code.

The list comes from the kernels (``OpKernel.tuning_knobs`` / ``tuning_candidates``), so a variant
or knob a kernel adds becomes tunable without touching the tuner. Settings that generate the same C
body and the same constant arrays as an earlier one (a knob that does not apply to this shape) are
dropped, so each candidate is measured once; the heuristic's setting ({}) is always first.
"""

from __future__ import annotations

import hashlib

from microcompiler.ir import Graph, Operator
from microcompiler.ops.base import EmitContext, ParamSink, kernel_for


def _code_key(op: Operator, graph: Graph, features: frozenset[str], knobs: dict) -> str:
    ctx = EmitContext(graph, op, "tune", ParamSink("tune"), features, knobs)
    body = kernel_for(op).emit(op, graph, ctx)
    digest = hashlib.sha256(body.encode())
    for name, ctype, data, _ in ctx.params.arrays:  # a variable tensor (LSTM state) has no data
        symbols = ctx.params.symbols.get(name)
        digest.update(repr((name, ctype, symbols)).encode() + (data.tobytes() if data is not None else b""))
    return digest.hexdigest()


def operator_candidates(op: Operator, graph: Graph, features: frozenset[str]) -> list[dict]:
    """The distinct knob settings of one operator, the heuristic's ({}) first."""
    seen, out = set(), []
    for knobs in kernel_for(op).tuning_candidates(op, graph, features):
        key = _code_key(op, graph, features, knobs)
        if key not in seen:
            seen.add(key)
            out.append(knobs)
    return out
