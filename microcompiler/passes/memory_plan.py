"""Static memory planning: give every intermediate tensor a byte offset in one arena.

Model inputs and outputs live in caller-provided buffers and constants in flash, so the arena holds
only intermediate activations. Two buffers may overlap in memory when their lifetimes (from the
operator that writes them to the last operator that reads them) do not overlap. The planner tries
several placement orders (first-fit at the lowest free offset) and keeps the smallest arena; the
result is compared against the lower bound, the largest set of simultaneously live buffers.

Persistent tensors (state kept across inferences, ``Tensor.persistent``) never enter the arena: they
get offsets in a separate state section (``Graph.state_offsets``, ``Graph.state_bytes``) that no
other tensor shares, because their values must survive from one inference to the next.

Before placing, operators whose kernel opts in (``OpKernel.inplace_inputs``, e.g. ADD and MUL) write
their output over an input that dies with them, which removes a buffer from the live set.
"""
from __future__ import annotations

from dataclasses import dataclass

from microcompiler.ir import Graph, np_dtype

import numpy as np


@dataclass(frozen=True)
class Buffer:
    tensor: int  # the storage tensor (root of its alias class)
    size: int
    first: int  # index of the operator that writes it
    last: int  # index of the last operator that reads it
    align: int

    def overlaps_in_time(self, other: "Buffer") -> bool:
        return self.first <= other.last and other.first <= self.last


def arena_buffers(graph: Graph) -> list[Buffer]:
    """The intermediate buffers of a graph, with their lifetimes in operator steps."""
    g = graph
    owned = {g.storage(t) for t in g.inputs + g.outputs}
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for step, op in enumerate(g.operators):
        for o in op.outputs:
            root = g.storage(o)
            first.setdefault(root, step)
            last[root] = max(last.get(root, step), step)
        for i in op.inputs:
            if i >= 0 and not g.tensors[g.storage(i)].is_constant:
                last[g.storage(i)] = step
    buffers = []
    for root, start in first.items():
        if root in owned or g.tensors[root].persistent:
            continue
        t = g.tensors[root]
        align = max(4, np.dtype(np_dtype(t.dtype)).itemsize)
        buffers.append(Buffer(root, t.nbytes, start, last[root], align))
    return buffers


def lower_bound(buffers: list[Buffer], steps: int) -> int:
    """The largest total size of buffers live at the same operator step."""
    return max([sum(b.size for b in buffers if b.first <= s <= b.last) for s in range(steps)] or [0])


def peak_step(buffers: list[Buffer], steps: int) -> tuple[int, list[Buffer]]:
    """The first operator step with the largest live set, and the buffers live there (largest
    first). Their total is ``lower_bound``; ``(-1, [])`` for a graph without arena buffers."""
    best, live = -1, []
    for s in range(steps):
        here = [b for b in buffers if b.first <= s <= b.last]
        if here and sum(b.size for b in here) > sum(b.size for b in live):
            best, live = s, here
    return best, sorted(live, key=lambda b: (-b.size, b.first))


def _place(order: list[Buffer]) -> tuple[dict[int, int], int]:
    placed: list[tuple[Buffer, int]] = []
    offsets = {}
    for buf in order:
        busy = sorted((off, off + b.size) for b, off in placed if b.overlaps_in_time(buf))
        offset = 0
        for start, end in busy:
            offset = -(-offset // buf.align) * buf.align
            if offset + buf.size <= start:
                break
            offset = max(offset, end)
        offset = -(-offset // buf.align) * buf.align
        placed.append((buf, offset))
        offsets[buf.tensor] = offset
    total = max([off + b.size for b, off in placed] or [0])
    return offsets, total


_ORDERS = {
    "size": lambda b: (-b.size, b.first),
    "first_use": lambda b: (b.first, -b.size),
    "lifetime": lambda b: (-(b.last - b.first), -b.size),
    "area": lambda b: (-(b.size * (b.last - b.first + 1)), b.first),
}


def _last_reads(g: Graph) -> dict[int, int]:
    """For each storage root, the step of the last operator that reads it."""
    last: dict[int, int] = {}
    for step, op in enumerate(g.operators):
        for i in op.inputs:
            if i >= 0:
                last[g.storage(i)] = step
    return last


def share_in_place(g: Graph) -> None:
    """Let an operator's output take over the memory of an input that dies at that operator, when
    the kernel opts in (``OpKernel.inplace_inputs``: elementwise, same size). Records it as an
    alias, so lifetimes, offsets and the graph executor's slots follow the shared storage."""
    from microcompiler.ops import load_kernels
    from microcompiler.ops.base import KERNELS
    load_kernels()
    owned = {g.storage(t) for t in g.inputs + g.outputs}
    for step, op in enumerate(g.operators):
        kernel = KERNELS.get(op.kind)
        if kernel is None or len(op.outputs) != 1:
            continue
        out = op.outputs[0]
        if out in g.aliases or g.storage(out) in owned:
            continue
        last = _last_reads(g)
        for pos in kernel.inplace_inputs(op, g):
            root = g.storage(op.inputs[pos])
            t = g.tensors[root]
            if (root in owned or t.is_constant or t.persistent or last.get(root) != step
                    or t.nbytes != g.tensors[out].nbytes or root == out):
                continue
            g.aliases[out] = root
            break


def plan_memory(graph: Graph) -> Graph:
    g = graph.copy()
    share_in_place(g)
    buffers = arena_buffers(g)
    best = None
    for key in _ORDERS.values():
        offsets, total = _place(sorted(buffers, key=key))
        if best is None or total < best[1]:
            best = (offsets, total)
    g.offsets, g.arena_bytes = best
    g.state_offsets, g.state_bytes = plan_state(g)
    return g


def plan_state(g: Graph) -> tuple[dict[int, int], int]:
    """Offsets of the persistent tensors in the state section: one after the other, each aligned to
    its element size (at least 4 bytes), never shared."""
    offsets, end = {}, 0
    for i in g.state_tensors:
        t = g.tensors[i]
        align = max(4, np.dtype(np_dtype(t.dtype)).itemsize)
        offsets[i] = -(-end // align) * align
        end = offsets[i] + t.nbytes
    return offsets, end
