"""Static memory planning: give every intermediate tensor a byte offset in one arena.

Model inputs and outputs live in caller-provided buffers and constants in flash, so the arena holds
only intermediate activations. Two buffers may overlap in memory when their lifetimes (from the
operator that writes them to the last operator that reads them) do not overlap. The planner tries
several placement orders (first-fit at the lowest free offset) and keeps the smallest arena; the
result is compared against the lower bound, the largest set of simultaneously live buffers.

Persistent tensors (state kept across inferences, ``Tensor.persistent``) never enter the arena: they
get offsets in a separate state section (``Graph.state_offsets``, ``Graph.state_bytes``) that no
other tensor shares, because their values must survive from one inference to the next.

A model's other subgraphs (``Graph.subgraphs``: IF branches, WHILE condition and body, CALL_ONCE
initialisation) are planned first, callees before callers, each in an arena of its own; a
control-flow operator then gets one more output, its *subgraph arena* (``ops/control_flow.py``), a
buffer of the caller's arena that is live for that operator only, so a called subgraph's tensors
occupy the caller's arena exactly while the call runs. The state section covers every subgraph: a
resource variable used in two subgraphs (same ``Tensor.variable`` key) has one offset.

Before placing, operators whose kernel opts in (``OpKernel.inplace_inputs``, e.g. ADD and MUL) write
their output over an input that dies with them, which removes a buffer from the live set. Kernels
whose in-place schedule needs scratch (``OpKernel.inplace_scratch``: DEPTHWISE_CONV_2D, one input
channel at a time in scratch) go in place only where that lowers the arena by more than the scratch.
The patch pass's tail shares (``Graph.tail_shares``, ``tail_pairs``: a growing 1x1 convolution whose
input may lie in the last bytes of its output) are placed as one piece: the output where both fit,
the input at its end, its lifetime ending the step before the operator that overwrites it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from microcompiler.ir import Graph, Tensor, called_subgraphs, np_dtype


@dataclass(frozen=True)
class Buffer:
    tensor: int  # the storage tensor (root of its alias class)
    size: int
    first: int  # index of the operator that writes it
    last: int  # index of the last operator that reads it
    align: int

    def overlaps_in_time(self, other: Buffer) -> bool:
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
    tails = tail_pairs(g, first, last)
    buffers = []
    for root, start in first.items():
        if root in owned or g.tensors[root].persistent:
            continue
        t = g.tensors[root]
        align = max(4, np.dtype(np_dtype(t.dtype)).itemsize)
        # an input in the tail of its convolution's output (tail_pairs) is inside the output's bytes
        # at that step: its own lifetime ends the step before
        end = last[root] - 1 if root in tails else last[root]
        buffers.append(Buffer(root, t.nbytes, start, end, align))
    return buffers


def tail_pairs(g: Graph, first: dict[int, int] | None = None, last: dict[int, int] | None = None) -> dict[int, int]:
    """Input storage -> output storage of the ``Graph.tail_shares`` that still hold after the aliases
    the planner made: both their own storage (nothing else aliased to them), the input last read by
    the operator that first writes the output, both before and after it, and the offset the input
    takes in the output's buffer (the output's size less the input's) aligned. The planner places the
    input there, so the operator's output overlaps its input's dying bytes (passes/patches.py)."""
    if not g.tail_shares:
        return {}
    if first is None or last is None:
        first, last = {}, {}
        for step, op in enumerate(g.operators):
            for o in op.outputs:
                first.setdefault(g.storage(o), step)
            for i in op.inputs:
                if i >= 0:
                    last[g.storage(i)] = step
    targets = set(g.aliases.values())
    pairs: dict[int, int] = {}
    for x, y in g.tail_shares.items():
        if {x, y} & (set(g.aliases) | targets) or x not in first or y not in first:
            continue
        offset = g.tensors[y].nbytes - g.tensors[x].nbytes
        if offset < 0 or offset % 8 or last.get(x) != first[y] or first[x] >= first[y]:
            continue
        if {x, y} & (set(pairs) | set(pairs.values())):
            continue  # one pair per buffer: a chain (x in y, y in z) is placed one pair deep
        pairs[x] = y
    return pairs


def lower_bound(buffers: list[Buffer], steps: int) -> int:
    """The largest total size of buffers live at the same operator step (one sweep over the steps:
    the patch pass asks this of every stage and grid it tries)."""
    change = [0] * (steps + 1)
    for b in buffers:
        first, last = max(b.first, 0), min(b.last, steps - 1)
        if first <= last:
            change[first] += b.size
            change[last + 1] -= b.size
    peak = live = 0
    for step in range(steps):
        live += change[step]
        peak = max(peak, live)
    return peak


def peak_step(buffers: list[Buffer], steps: int) -> tuple[int, list[Buffer]]:
    """The first operator step with the largest live set, and the buffers live there (largest
    first). Their total is ``lower_bound``; ``(-1, [])`` for a graph without arena buffers."""
    change = [0] * (steps + 1)  # one sweep over the steps (not one scan of the buffers per step)
    for b in buffers:
        first, last = max(b.first, 0), min(b.last, steps - 1)
        if first <= last:
            change[first] += b.size
            change[last + 1] -= b.size
    best, peak, total = -1, 0, 0
    for s in range(steps):
        total += change[s]
        if total > peak:
            best, peak = s, total
    live = [b for b in buffers if b.first <= best <= b.last] if best >= 0 else []
    return best, sorted(live, key=lambda b: (-b.size, b.first))


def _place(order: list[Buffer], tails: dict[int, int] | None = None) -> tuple[dict[int, int], int]:
    """First fit in ``order``; ``tails`` (input -> output storage, ``tail_pairs``): each input is
    placed with its output, in the output's last bytes."""
    placed: list[tuple[Buffer, int]] = []
    offsets = {}
    # the placed buffers live at each step: a buffer meets only those of the steps it lives in, so
    # placing n buffers costs their lifetimes, not n^2 comparisons (a 20,000-operator chain)
    live_at: dict[int, list[tuple[int, int, int]]] = {}
    tails = tails or {}
    by_tensor = {b.tensor: b for b in order}
    inner = {y: by_tensor[x] for x, y in tails.items() if x in by_tensor and y in by_tensor}

    def busy(buf: Buffer) -> list[tuple[int, int]]:
        busy_set = {}
        for step in range(buf.first, buf.last + 1):
            for key, start, end in live_at.get(step, ()):
                busy_set[key] = (start, end)
        return sorted(busy_set.values())

    def fits(buf: Buffer, offset: int, intervals: list[tuple[int, int]]) -> int | None:
        """None when [offset, offset + size) is free, else the end of the first interval it meets."""
        for start, end in intervals:
            if offset < end and start < offset + buf.size:
                return end
        return None

    for buf in order:
        if buf.tensor in tails and tails[buf.tensor] in inner:
            continue  # placed with its output
        group = [(buf, 0)]
        offset = 0
        if buf.tensor not in inner:  # one buffer: the lowest gap, one pass over the sorted intervals
            for start, end in busy(buf):
                offset = -(-offset // buf.align) * buf.align
                if offset + buf.size <= start:
                    break
                offset = max(offset, end)
            offset = -(-offset // buf.align) * buf.align
        else:  # an output and the input in its tail: the lowest offset where both are free
            group.append((inner[buf.tensor], buf.size - inner[buf.tensor].size))
            intervals = [busy(b) for b, _ in group]
            while True:
                offset = -(-offset // buf.align) * buf.align
                clash = next(
                    (
                        end - delta
                        for (b, delta), iv in zip(group, intervals)
                        if (end := fits(b, offset + delta, iv)) is not None
                    ),
                    None,
                )
                if clash is None:
                    break
                offset = max(offset + 1, clash)
        for b, delta in group:
            placed.append((b, offset + delta))
            offsets[b.tensor] = offset + delta
            for step in range(b.first, b.last + 1):
                live_at.setdefault(step, []).append((len(placed), offset + delta, offset + delta + b.size))
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


def _in_place_inputs(g: Graph, with_scratch: bool):
    """(step, output, input storage root, scratch bytes) for each operator whose kernel offers an
    input that dies there (``OpKernel.inplace_inputs``): kernels without scratch
    (``inplace_scratch`` 0) with an output of the input's size, or with ``with_scratch`` the others,
    with an output no larger than the input."""
    from microcompiler.ops import load_kernels
    from microcompiler.ops.base import KERNELS

    load_kernels()
    owned = {g.storage(t) for t in g.inputs + g.outputs}
    last = _last_reads(g)
    for step, op in enumerate(g.operators):
        kernel = KERNELS.get(op.kind)
        if kernel is None or len(op.outputs) != 1:
            continue
        out = op.outputs[0]
        if out in g.aliases or g.storage(out) in owned:
            continue
        scratch = kernel.inplace_scratch(op, g)
        if (scratch > 0) != with_scratch:
            continue
        for pos in kernel.inplace_inputs(op, g):
            root = g.storage(op.inputs[pos])
            t, size = g.tensors[root], g.tensors[out].nbytes
            if (
                root in owned
                or t.is_constant
                or t.persistent
                or last.get(root) != step
                or root == out
                or (t.nbytes < size if with_scratch else t.nbytes != size)
            ):
                continue
            yield step, out, root, scratch
            if g.storage(out) == root:  # the caller shared it: the reads of out are reads of root now
                last[root] = max(last.get(root, step), last.pop(out, step))
            break


def share_in_place(g: Graph) -> None:
    """Let an operator's output take over the memory of an input that dies at that operator, when
    the kernel opts in (``OpKernel.inplace_inputs``: elementwise, same size). Records it as an
    alias, so lifetimes, offsets and the graph executor's slots follow the shared storage."""
    for _, out, root, _ in _in_place_inputs(g, with_scratch=False):
        g.aliases[out] = root


def share_in_place_with_scratch(g: Graph, arena_bytes) -> None:
    """The in-place schedules that cost scratch (``OpKernel.inplace_scratch``: DEPTHWISE_CONV_2D),
    only where they pay: all candidates in place, then each one taken back (largest scratch first)
    where that does not raise the arena; the rest is kept only if it lowers the arena
    (``arena_bytes(g)``) by more than the largest scratch it needs, so arena + scratch never rises."""
    candidates = list(_in_place_inputs(g, with_scratch=True))
    if not candidates:
        return
    before = arena_bytes(g)

    def arena_with(chosen) -> int:
        for _, out, root, _ in chosen:
            g.aliases[out] = root
        try:
            return arena_bytes(g)
        finally:
            for _, out, _, _ in chosen:
                del g.aliases[out]

    chosen = candidates
    current = arena_with(chosen)
    for c in sorted(candidates, key=lambda c: -c[3]):
        fewer = [d for d in chosen if d is not c]
        arena = arena_with(fewer)
        if arena <= current:
            chosen, current = fewer, arena
    if chosen and current + max(c[3] for c in chosen) < before:
        for _, out, root, _ in chosen:
            g.aliases[out] = root


def plan_memory(graph: Graph) -> Graph:
    g = graph.copy()
    planned: dict[int, Graph] = {}
    for k in _callees_first(g):
        planned[k] = _plan_graph(_with_subgraph_arenas(g.subgraphs[k], planned))
    g = _plan_graph(_with_subgraph_arenas(g, planned))
    g.subgraphs = planned
    _plan_all_state(g)
    return g


def _callees_first(g: Graph) -> list[int]:
    order: list[int] = []

    def visit(graph: Graph) -> None:
        for op in graph.operators:
            for k in called_subgraphs(op):
                if k not in order:
                    visit(g.subgraphs[k])
                    order.append(k)

    visit(g)
    for k in sorted(g.subgraphs):  # never called: planned all the same, after the subgraphs they call
        if k not in order:
            visit(g.subgraphs[k])
            order.append(k)
    return order


def _with_subgraph_arenas(g: Graph, planned: dict[int, Graph]) -> Graph:
    """Give each control-flow operator of ``g`` its subgraph arena (an int64 buffer, so that every
    tensor inside is aligned) as one more output."""
    from microcompiler.ops.control_flow import subgraph_arena_bytes

    for op in g.operators:
        nbytes = subgraph_arena_bytes(op, planned)
        if nbytes:
            g.tensors.append(Tensor(f"{op.kind.lower()}_{op.index}/subgraph_arena", (-(-nbytes // 8),), "int64"))
            op.outputs.append(len(g.tensors) - 1)
            op.notes = replace(op.notes, subgraph_arena=nbytes)
    return g


def _by_proxy(key: Callable[[Buffer], tuple], proxy: dict[int, Buffer], b: Buffer) -> tuple:
    return key(proxy[b.tensor])


def _best_placement(g: Graph) -> tuple[dict[int, int], int]:
    buffers = arena_buffers(g)
    tails = tail_pairs(g)
    best = None
    # with tail pairs, also the orders that sort an output holding an input by the input's size (the
    # person_detect look-alike's 2x2 patches: 20,032 B where the plain orders leave 22,944 or more)
    inner = {y: x for x, y in tails.items()}
    sizes = {b.tensor: b.size for b in buffers}
    proxy = {b.tensor: replace(b, size=sizes.get(inner.get(b.tensor, -1), b.size)) for b in buffers}
    orders: list[Callable[[Buffer], tuple]] = list(_ORDERS.values())
    if tails:
        orders += [functools.partial(_by_proxy, key, proxy) for key in _ORDERS.values()]
    for key in orders:
        offsets, total = _place(sorted(buffers, key=key), tails)
        if best is None or total < best[1]:
            best = (offsets, total)
    return best


def _plan_graph(g: Graph) -> Graph:
    share_in_place(g)
    if g.ram_plan.get("in_place_depthwise", True):  # the RAM-budget planner may ask for the faster kernels
        share_in_place_with_scratch(g, lambda graph: _best_placement(graph)[1])
    g.offsets, g.arena_bytes = _best_placement(g)
    return g


def _plan_all_state(main: Graph) -> None:
    """One state section for the main graph and its subgraphs (``plan_state``'s layout); each graph's
    ``state_offsets`` point into it and the main graph's ``state_bytes`` is its size."""
    combined = Graph(main.name, [], [], [], [])
    where: dict[tuple[int, int], int] = {}  # (graph, tensor) -> tensor of ``combined``
    keys: dict[str, int] = {}
    for n, g in enumerate(main.all_graphs()):
        for i in g.state_tensors:
            key = g.tensors[i].variable
            if key is None or key not in keys:
                combined.tensors.append(g.tensors[i])
                if key is not None:
                    keys[key] = len(combined.tensors) - 1
            where[n, i] = keys[key] if key is not None else len(combined.tensors) - 1
    offsets, main.state_bytes = plan_state(combined)
    for n, g in enumerate(main.all_graphs()):
        g.state_offsets = {i: offsets[where[n, i]] for i in g.state_tensors}


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
