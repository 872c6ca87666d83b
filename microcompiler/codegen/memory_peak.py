"""Where the RAM peak sits, for metadata.json ("memory_peak") and ``microcompiler bench``.

The peak is the largest set of arena buffers live at one operator step (the layer-by-layer lower
bound of the memory plan, ``passes/memory_plan.py``); the arena is at least that. Reported with the
operator running at that step and the tensors live there, so a reader sees which layer to change.
"""

from __future__ import annotations

from microcompiler.ir import Graph
from microcompiler.passes.memory_plan import arena_buffers, peak_step


def memory_peak(graph: Graph, layers: dict[int, str]) -> dict:
    """{"bytes", "arena_bytes", "step", "operator", "kind", "layer_name", "tensors": [{"name",
    "layer_name", "bytes", "offset"}]}: the step with the largest live set (the first if several tie)."""
    producer = {graph.storage(o): layers[op.index] for op in graph.operators for o in op.outputs}
    step, live = peak_step(arena_buffers(graph), len(graph.operators))
    peak = {
        "bytes": sum(b.size for b in live),
        "arena_bytes": graph.arena_bytes,
        "step": None,
        "operator": None,
        "kind": None,
        "layer_name": None,
        "tensors": [],
    }
    if step >= 0:
        op = graph.operators[step]
        peak.update(step=step, operator=op.index, kind=op.kind, layer_name=layers[op.index])
        peak["tensors"] = [
            {
                "name": graph.tensors[b.tensor].name,
                "layer_name": producer.get(b.tensor),
                "bytes": b.size,
                "offset": graph.offsets.get(b.tensor),
            }
            for b in live
        ]
    return peak
