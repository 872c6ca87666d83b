"""WHILE loops in analyze's cost model: the body and the condition times the trip count.

A WHILE runs its condition subgraph, then its body, until the condition gives false (ops/control_flow.py);
each turn also copies the body's results back into the loop values. Its cost is

    trips x (condition + body + copy of the loop values) + condition

with the subgraphs' operators costed like the main graph's (cost_model.estimate, from the operator
entries of metadata.json's ``subgraphs``). The trip count is knowable at compile time for the loops
converters write for recurrent layers (Keras GRU/LSTM, ``tf.while_loop`` over a range): a condition
of one comparison between a loop value and a limit (a constant, or a loop value the body passes on
unchanged), that loop value starting from a constant and stepped by a constant (ADD or SUB of a
constant in the body). Then the loop is run on those integers at compile time. Any other loop is
costed as running its body ASSUMED_TRIPS times, and the estimate says so (its cost-model key).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping

import numpy as np

from microcompiler.codegen.model_info import ModelInfo, OperatorInfo
from microcompiler.ir import Graph, Operator
from microcompiler.ops import cost_model

ASSUMED_TRIPS = 1  # the stated assumption for a loop whose trip count is not knowable at compile time
MAX_TRIPS = 10**6  # a counted loop longer than this is treated as not knowable
COMPARISONS = {
    "LESS": operator.lt,
    "LESS_EQUAL": operator.le,
    "GREATER": operator.gt,
    "GREATER_EQUAL": operator.ge,
    "NOT_EQUAL": operator.ne,
}
# Per turn besides the subgraphs: the calls and the copy of each loop value back from the body's
# temporaries (memcpy: cost_model's per-byte rate), fitted to the float GRU look-alike on mps2_an386.
PER_TRIP = 60.0
PER_LOOP_VALUE = 20.0


def _scalar(graph: Graph, tensor: int) -> int | None:
    t = graph.tensors[tensor]
    if t.is_constant and t.data is not None and t.size == 1 and np.issubdtype(np.asarray(t.data).dtype, np.integer):
        return int(np.asarray(t.data).reshape(-1)[0])
    return None


def _step(body: Graph, position: int) -> int | None:
    """The constant the body adds to loop value ``position`` each turn, or None."""
    out, into = body.outputs[position], body.inputs[position]
    for op in body.operators:
        if out not in op.outputs:
            continue
        if op.kind in ("ADD", "SUB") and len(op.inputs) == 2 and op.options.get("activation", "NONE") == "NONE":
            a, b = op.inputs
            step_b, step_a = _scalar(body, b), _scalar(body, a)
            if a == into and step_b is not None:
                return step_b * (1 if op.kind == "ADD" else -1)
            if op.kind == "ADD" and b == into and step_a is not None:
                return step_a
        return None
    return None


def trip_count(graph: Graph, op: Operator, subgraphs: Mapping[int, Graph]) -> int | None:
    """The number of times the WHILE ``op`` of ``graph`` runs its body, when the compiler can know it."""
    cond, body = subgraphs[int(op.options["cond_subgraph_index"])], subgraphs[int(op.options["body_subgraph_index"])]
    if len(cond.operators) != 1 or cond.operators[0].kind not in COMPARISONS:
        return None
    compare = cond.operators[0]
    if list(compare.outputs) != list(cond.outputs) or len(compare.inputs) != 2:
        return None

    def side(tensor: int) -> tuple[str | None, int | None]:
        """("counter", position) for a loop value, ("limit", value) for a known constant."""
        if tensor in cond.inputs:
            position = cond.inputs.index(tensor)
            start = _scalar(graph, op.inputs[position])
            if body.outputs[position] == body.inputs[position] and start is not None:
                return ("limit", start)  # passed on unchanged: a limit
            return ("counter", position)
        value = _scalar(cond, tensor)
        return ("limit", value) if value is not None else (None, None)

    (kind_a, a), (kind_b, b) = side(compare.inputs[0]), side(compare.inputs[1])
    if {kind_a, kind_b} != {"counter", "limit"}:
        return None
    position = a if kind_a == "counter" else b
    limit = b if kind_a == "counter" else a
    if position is None or limit is None:
        return None
    start, step = _scalar(graph, op.inputs[position]), _step(body, position)
    if start is None or not step:
        return None
    test = COMPARISONS[compare.kind]
    value, trips = start, 0
    while test(value, limit) if kind_a == "counter" else test(limit, value):
        value, trips = value + step, trips + 1
        if trips > MAX_TRIPS:
            return None
    return trips


def subgraph_estimate(
    info: ModelInfo, index: int, graph: Graph, subgraphs: Mapping[int, Graph], family: str = "m4"
) -> float:
    """Estimated instructions of one run of subgraph ``index`` (its operators from metadata.json)."""
    sub = subgraphs[index]
    total = 0.0
    for op_meta, op in zip(info.subgraph(index).operators, sub.operators):
        total += operator_estimate(op_meta, op_meta.dtype or "-", info, sub, op, subgraphs, family)[0]
    return total


def operator_estimate(
    op_meta: OperatorInfo,
    dtype: str,
    info: ModelInfo,
    graph: Graph,
    op: Operator,
    subgraphs: Mapping[int, Graph],
    family: str = "m4",
) -> tuple[float, str]:
    """cost_model.estimate on a core of ``family``, with WHILE costed as its trip count times its subgraphs."""
    if op_meta.kind != "WHILE":
        return cost_model.estimate(op_meta, dtype, family, cost_model.after_relu(graph, op), cost_model.onnx_knobs(op))
    counted_trips = trip_count(graph, op, subgraphs)
    counted = counted_trips is not None
    trips = counted_trips if counted_trips is not None else ASSUMED_TRIPS
    cond = subgraph_estimate(info, int(op.options["cond_subgraph_index"]), graph, subgraphs, family)
    body = subgraph_estimate(info, int(op.options["body_subgraph_index"]), graph, subgraphs, family)
    body_graph = subgraphs[int(op.options["body_subgraph_index"])]
    copies = sum(
        PER_LOOP_VALUE + cost_model.COPY_PER_ELEMENT * body_graph.tensors[t].nbytes for t in body_graph.outputs
    )
    per_trip = cond + body + PER_TRIP + copies
    how = "counted" if counted else "not knowable at compile time: assumed"
    return trips * per_trip + cond, f"WHILE|{trips} trips ({how})"
