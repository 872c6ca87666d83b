"""Turn RESHAPE, SQUEEZE and EXPAND_DIMS into an alias: the output shares the input's memory, and no code runs.

A reshape stays a real copy only when both sides must live in caller-owned buffers (a model input
reshaped straight into a model output), since two caller buffers cannot be the same memory.
"""

from __future__ import annotations

from microcompiler.ir import Graph

NO_OP_KINDS = {"RESHAPE", "SQUEEZE", "EXPAND_DIMS"}


def _caller_owned(g: Graph, t: int) -> bool:
    return t in g.inputs or t in g.outputs


def remove_reshapes(graph: Graph) -> Graph:
    g = graph.copy()
    kept = []
    for op in g.operators:
        if op.kind not in NO_OP_KINDS:
            kept.append(op)
            continue
        src, dst = g.storage(op.inputs[0]), op.outputs[0]
        src_t = g.tensors[src]
        if src_t.is_constant or src_t.persistent:  # state must keep its own memory: copy it
            kept.append(op)
            continue
        src_owned = _caller_owned(g, src) or any(_caller_owned(g, t) for t, s in g.aliases.items() if s == src)
        if src_owned and _caller_owned(g, dst):
            kept.append(op)  # must copy between two caller buffers
        elif _caller_owned(g, dst):
            # The model output is the real storage: the producer writes straight into it.
            for t, s in list(g.aliases.items()):
                if s == src:
                    g.aliases[t] = dst
            g.aliases[src] = dst
        else:
            g.aliases[dst] = src
    g.operators = kept
    return g
