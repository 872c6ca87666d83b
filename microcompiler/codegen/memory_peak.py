"""Where the RAM peak sits, for metadata.json ("memory_peak") and ``microcompiler bench``.

The peak is the largest set of arena buffers live at one operator step (the layer-by-layer lower
bound of the memory plan, ``passes/memory_plan.py``); the arena is at least that. Reported with the
operator running at that step and the tensors live there, so a reader sees which layer to change.
"""

from __future__ import annotations

from microcompiler.codegen.model_info import MemoryPeak, PeakTensor
from microcompiler.ir import Graph
from microcompiler.passes.memory_plan import arena_buffers, peak_step


def memory_peak(graph: Graph, layers: dict[int, str]) -> MemoryPeak:
    """The step with the largest live set (the first if several tie), the operator there and the
    tensors live there (codegen/model_info.py's MemoryPeak)."""
    producer = {graph.storage(o): layers[op.index] for op in graph.operators for o in op.outputs}
    step, live = peak_step(arena_buffers(graph), len(graph.operators))
    total = sum(b.size for b in live)
    if step < 0:
        return MemoryPeak(total, graph.arena_bytes)
    op = graph.operators[step]
    tensors = tuple(
        PeakTensor(graph.tensors[b.tensor].name, producer.get(b.tensor), b.size, graph.offsets.get(b.tensor))
        for b in live
    )
    return MemoryPeak(total, graph.arena_bytes, step, op.index, op.kind, layers[op.index], tensors)
