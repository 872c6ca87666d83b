"""Remove operators whose outputs nobody reads (unless they touch persistent state), constants
nobody uses, and subgraphs no control-flow operator of the model reaches."""

from __future__ import annotations

from microcompiler.ir import Graph, called_subgraphs


def remove_dead_code(graph: Graph) -> Graph:
    g = graph.copy()
    needed = {g.storage(t) for t in g.outputs}
    kept = []
    for op in reversed(g.operators):
        # An operator that touches state (SVDF updates its activation state in place) has an effect
        # on later inferences even when nobody reads its outputs now.
        touches_state = bool(op.state) or any(
            t >= 0 and g.tensors[g.storage(t)].persistent for t in op.inputs + op.outputs
        )
        # A control-flow operator's subgraphs may touch state (a resource variable) too.
        if touches_state or called_subgraphs(op) or any(g.storage(o) in needed for o in op.outputs):
            kept.append(op)
            needed.update(g.storage(i) for i in op.inputs if i >= 0)
    g.operators = list(reversed(kept))
    for i, t in enumerate(g.tensors):
        if t.is_constant and i not in needed:
            t.data = None  # an unused constant costs no flash
    return g


def remove_uncalled_subgraphs(graph: Graph) -> Graph:
    """Drop the subgraphs that no IF, WHILE or CALL_ONCE reachable from the main graph calls (TFLM
    never runs them either; their C functions would be unused, which -Werror refuses). The importer
    has checked every subgraph and every call already."""
    g = graph.copy()
    reached: set[int] = set()

    def visit(sub: Graph) -> None:
        for op in sub.operators:
            for k in called_subgraphs(op):
                if k not in reached and k in graph.subgraphs:
                    reached.add(k)
                    visit(graph.subgraphs[k])

    visit(graph)
    g.subgraphs = {k: s for k, s in graph.subgraphs.items() if k in reached}
    return g
