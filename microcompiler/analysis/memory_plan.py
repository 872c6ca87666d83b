"""The memory plan as data: which tensors are live at each operator step and where they sit."""

from __future__ import annotations

from microcompiler.codegen.model_info import ModelInfo
from microcompiler.ir import Graph
from microcompiler.passes.memory_plan import arena_buffers, lower_bound


def memory_plan(graph: Graph, info: ModelInfo) -> dict:
    """Arena buffers (tensor, producing layer, offset, size, first and last step), the live bytes
    per step, the arena size and the layer-by-layer lower bound (the largest live set), and the state
    section (persistent tensors, never part of the arena)."""
    layer_of = {}
    for step, op in enumerate(graph.operators):
        for o in op.outputs:
            layer_of[graph.storage(o)] = (step, info.operators[step].name)
    buffers = []
    for b in sorted(arena_buffers(graph), key=lambda b: (b.first, graph.offsets.get(b.tensor, 0))):
        t = graph.tensors[b.tensor]
        buffers.append(
            {
                "tensor": t.name,
                "layer": layer_of.get(b.tensor, (None, "?"))[1],
                "dtype": t.dtype,
                "shape": list(t.shape),
                "offset": graph.offsets.get(b.tensor),
                "bytes": b.size,
                "first_step": b.first,
                "last_step": b.last,
            }
        )
    steps = len(graph.operators)
    live = live_bytes({"steps": steps, "buffers": buffers})
    raw = arena_buffers(graph)
    return {
        "steps": steps,
        "step_layers": [op.name for op in info.operators],
        "arena_bytes": graph.arena_bytes,
        "lower_bound_bytes": lower_bound(raw, steps),
        "live_bytes_per_step": live,
        "buffers": buffers,
        # state kept across inferences: a section of its own, live at every step (docs/state.md)
        "state_bytes": graph.state_bytes,
        "state": [
            {
                "tensor": graph.tensors[i].name,
                "dtype": graph.tensors[i].dtype,
                "shape": list(graph.tensors[i].shape),
                "offset": off,
                "bytes": graph.tensors[i].nbytes,
            }
            for i, off in graph.state_offsets.items()
        ],
    }


def live_bytes(plan: dict) -> list[int]:
    """The bytes of arena buffers live at each operator step: the plan's own list when it has one
    (every plan :func:`memory_plan` makes), else summed from its buffers (a plan saved before the
    list was kept, or drawn from hand-made data)."""
    if "live_bytes_per_step" in plan:
        return list(plan["live_bytes_per_step"])
    return [
        sum(b["bytes"] for b in plan["buffers"] if b["first_step"] <= s <= b["last_step"]) for s in range(plan["steps"])
    ]
