"""Patch-based execution of a CNN's leading stage (MCUNetV2 / TinyEngine style): a lower RAM peak
for a little recomputation.

The first layers of an image CNN hold the largest activations. This pass takes a *stage*, the
leading operators of the graph up to a layer whose output is small again, and runs it as a grid of
spatial *patches* one after another. Each patch computes one rectangle of the stage's output through
every layer of the stage: each layer computes the rectangle its consumers need from the rectangle of
its input that holds its receptive field (the *halo*, recomputed by the neighbouring patches) into a
small patch buffer, and the last layer's patch is copied into the full stage output. Only patch
buffers are live inside the stage, so the arena shrinks to the stage output plus one patch's buffers.

The rewrite is a plain graph of existing operators, so the memory planner counts the patch buffers
and every executor runs it unchanged:

* each (layer, patch) is an operator of the layer's kind on patch-sized tensors with the
  note ``patch_padding`` (top, left): the padding that remains at the true image border, where the
  kernel's usual bounds checks skip the taps outside the image (``ops/conv_common.geometry``); the
  bottom/right border needs none (taps past the patch buffer's end are outside the image);
* ``MC_PATCH_COPY`` (ops/patch_copy.py) copies a rectangle between tensors: the stage input's window
  into the first layers' patch buffer, a window a residual ADD needs out of a larger patch buffer,
  and each patch of the last layer into the full stage output.

Every value is computed by the same kernel arithmetic on the same inputs, so the result is bit-exact
by construction (tests/test_patches.py checks it against TFLite Micro).

The stage holds int8 CONV_2D, DEPTHWISE_CONV_2D and ADD (same-shape operands). The grid and the
stage length are chosen to give the lowest live-set peak (``memory_plan.lower_bound``) whose
recomputed multiply-accumulates stay within ``MAX_EXTRA_MACS`` of the model's, and only when that
peak is at most ``AUTO_MAX_PEAK_RATIO`` of the layer-by-layer one (a smaller cut is not worth the
slower, larger code unless asked for); ``patch_stage(graph, grid=(rows, cols))`` forces a grid (the
stage still chosen for the lowest peak) and ``grid=(1, 1)`` turns the pass off. The choice and its
cost are in ``Graph.patches`` (metadata.json "patches"). On cores with the DSP extension the chosen
grid may then give way to one that recomputes fewer MACs in no more arena, where its growing 1x1
layers write over their inputs' tails (``tail_shares``, ``Graph.tail_shares``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from microcompiler.ir import Graph, Operator, OperatorNotes, PatchNote, Tensor
from microcompiler.ops.geometry import padding_before
from microcompiler.ops.patch_copy import PATCH_COPY

WINDOWED = ("CONV_2D", "DEPTHWISE_CONV_2D")
MAX_EXTRA_MACS = 0.10  # automatic choice: recompute at most this fraction of the model's MACs
MAX_GRID = 4  # automatic choice: grids up to MAX_GRID x MAX_GRID patches
# automatic choice: only a peak cut to at most this fraction of the layer-by-layer one pays for the
# recomputation and the extra code (IC's first block, 49,152 -> 32,768 B for +4% instructions, is
# left to the knob; the MobileNet's stem, 55,296 -> 23,040 B, is taken)
AUTO_MAX_PEAK_RATIO = 0.5


@dataclass(frozen=True)
class Window:
    """Rows [r0, r1) and columns [c0, c1) of a 4-D NHWC tensor."""

    r0: int
    r1: int
    c0: int
    c1: int

    @property
    def area(self) -> int:
        return (self.r1 - self.r0) * (self.c1 - self.c0)

    def union(self, other: Window | None) -> Window:
        if other is None:
            return self
        return Window(min(self.r0, other.r0), max(self.r1, other.r1), min(self.c0, other.c0), max(self.c1, other.c1))


def _full(t: Tensor) -> Window:
    return Window(0, t.shape[1], 0, t.shape[2])


def _conv_padding(op: Operator, g: Graph) -> tuple[int, int, int, int, int, int, int, int]:
    """(kernel, stride, dilation, padding before) of the rows, then of the columns."""
    x, w, y = g.tensors[op.inputs[0]], g.tensors[op.inputs[1]], g.tensors[op.outputs[0]]
    o = op.options
    rows = (w.shape[1], o["stride_h"], o["dilation_h"])
    cols = (w.shape[2], o["stride_w"], o["dilation_w"])
    return (*rows, padding_before(x.shape[1], *rows, y.shape[1]), *cols, padding_before(x.shape[2], *cols, y.shape[2]))


def _input_window(op: Operator, g: Graph, out: Window, geometry: tuple | None = None) -> Window:
    """The input rectangle (clipped to the image) that output rectangle ``out`` reads (``geometry``:
    the op's _conv_padding, when the caller has it)."""
    if op.kind == "ADD":
        return out
    k_h, s_h, d_h, p_h, k_w, s_w, d_w, p_w = geometry or _conv_padding(op, g)
    x = g.tensors[op.inputs[0]]
    return Window(
        max(0, out.r0 * s_h - p_h),
        min(x.shape[1], (out.r1 - 1) * s_h - p_h + (k_h - 1) * d_h + 1),
        max(0, out.c0 * s_w - p_w),
        min(x.shape[2], (out.c1 - 1) * s_w - p_w + (k_w - 1) * d_w + 1),
    )


def _activation_inputs(op: Operator, g: Graph) -> list[int]:
    """Positions in op.inputs of the activations the patch must cut (the data input of a convolution,
    both operands of ADD)."""
    return [0] if op.kind in WINDOWED else [0, 1]


def _patchable(op: Operator, g: Graph) -> bool:
    if op.kind not in WINDOWED + ("ADD",) or len(op.inputs) < 2:
        return False
    if any(i >= 0 and i in g.aliases for i in op.inputs + op.outputs) or len(op.outputs) != 1:
        return False
    ts = [g.tensors[op.inputs[k]] for k in _activation_inputs(op, g)] + [g.tensors[op.outputs[0]]]
    if any(t.dtype != "int8" or len(t.shape) != 4 or t.shape[0] != 1 or t.is_constant or t.persistent for t in ts):
        return False
    if op.kind in WINDOWED:
        return op.notes.patch_padding is None and all(g.tensors[i].is_constant for i in op.inputs[1:] if i >= 0)
    return op.kind == "ADD" and len(op.inputs) == 2 and all(t.shape == ts[-1].shape for t in ts)


def stage_lengths(g: Graph) -> list[int]:
    """The lengths k for which the first k operators form a stage: patchable, every tensor they
    write read only among them except the last one's output (the stage output)."""
    lengths = []
    produced: set[int] = set()
    for k, op in enumerate(g.operators):
        if not _patchable(op, g):
            break
        produced.add(op.outputs[0])
        internal = produced - {op.outputs[0]}
        later = {i for o in g.operators[k + 1 :] for i in o.inputs}
        if not internal & (later | set(g.outputs)):
            lengths.append(k + 1)
    return lengths


def _split(size: int, parts: int) -> list[tuple[int, int]]:
    bounds = [round(i * size / parts) for i in range(parts + 1)]
    return [(bounds[i], bounds[i + 1]) for i in range(parts)]


def patch_windows(g: Graph, k: int, grid: tuple[int, int]) -> list[dict[int, Window]]:
    """Per patch: tensor -> the rectangle of it the patch computes (or reads, for the stage inputs)."""
    stage = g.operators[:k]
    y = g.tensors[stage[-1].outputs[0]]
    geometry = [None if op.kind == "ADD" else _conv_padding(op, g) for op in stage]  # once, not per patch
    patches = []
    for r0, r1 in _split(y.shape[1], grid[0]):
        for c0, c1 in _split(y.shape[2], grid[1]):
            need: dict[int, Window] = {stage[-1].outputs[0]: Window(r0, r1, c0, c1)}
            for op, geom in zip(reversed(stage), reversed(geometry)):
                window = _input_window(op, g, need[op.outputs[0]], geom)
                for pos in _activation_inputs(op, g):
                    need[op.inputs[pos]] = window.union(need.get(op.inputs[pos]))
            patches.append(need)
    return patches


def extra_macs(g: Graph, k: int, windows: list[dict[int, Window]]) -> int:
    """The multiply-accumulates the patches compute beyond the layers' own (the halos)."""
    from microcompiler.ops.base import kernel_for

    total = 0
    for op in g.operators[:k]:
        if op.kind == "ADD":
            continue
        macs = kernel_for(op).macs(op, g)
        y = g.tensors[op.outputs[0]]
        computed = sum(w[op.outputs[0]].area for w in windows)
        total += macs * computed // (y.shape[1] * y.shape[2]) - macs
    return total


def _memo_extra_macs(g: Graph, k: int, grid: tuple[int, int], memo: dict | None) -> int:
    """extra_macs of stage length ``k`` in ``grid``, kept in ``memo`` (one pass over a graph asks
    choose_patches and _faster_with_tails for the same ones)."""
    if memo is not None and (k, grid) in memo:
        return memo[(k, grid)]
    extra = extra_macs(g, k, patch_windows(g, k, grid))
    if memo is not None:
        memo[(k, grid)] = extra
    return extra


class _Builder:
    """Appends patch tensors and operators to a graph."""

    def __init__(self, g: Graph):
        self.g = g
        self.ops: list[Operator] = []
        self.next_index = max((op.index for op in g.operators), default=-1) + 1

    def tensor(self, like: int, window: Window) -> int:
        t = self.g.tensors[like]
        self.g.tensors.append(
            Tensor(t.name, (1, window.r1 - window.r0, window.c1 - window.c0, t.shape[3]), t.dtype, t.quant)
        )
        return len(self.g.tensors) - 1

    def op(self, kind: str, inputs: list[int], output: int, options: dict, notes: OperatorNotes) -> None:
        self.ops.append(Operator(kind, inputs, [output], options, self.next_index, notes=notes))
        self.next_index += 1

    def copy(self, src: int, src_window: Window, dst: int, dst_window: Window, part: Window, suffix: str) -> None:
        """MC_PATCH_COPY of rectangle ``part`` (whole-tensor coordinates) from src to dst, which hold
        ``src_window`` and ``dst_window`` of the same tensor."""
        self.op(
            PATCH_COPY,
            [src],
            dst,
            {
                "rows": part.r1 - part.r0,
                "cols": part.c1 - part.c0,
                "src_origin": (part.r0 - src_window.r0, part.c0 - src_window.c0),
                "dst_origin": (part.r0 - dst_window.r0, part.c0 - dst_window.c0),
            },
            OperatorNotes(layer_suffix=suffix),
        )


def apply_patches(graph: Graph, k: int, grid: tuple[int, int], copy: bool = True) -> Graph:
    """The graph with its first k operators run as a grid of patches (rows, cols); ``copy=False``
    shares the input's tensors and operators (to measure a candidate, never to keep)."""
    g = (
        graph.copy()
        if copy
        else Graph(graph.name, list(graph.tensors), graph.operators, graph.inputs, graph.outputs, dict(graph.aliases))
    )
    stage = g.operators[:k]
    final = stage[-1].outputs[0]
    b = _Builder(g)
    windows = patch_windows(g, k, grid)
    for p, need in enumerate(windows):
        held: dict[int, tuple[int, Window]] = {}  # stage tensor -> (patch tensor, its window)
        for op in stage:
            inputs = list(op.inputs)
            out_window = need[op.outputs[0]]
            in_window = _input_window(op, g, out_window)
            for pos in _activation_inputs(op, g):
                src = op.inputs[pos]
                if src not in held:  # a stage input: its window, cut out of the full tensor
                    full = _full(g.tensors[src])
                    held[src] = (src, full) if need[src] == full else (b.tensor(src, need[src]), need[src])
                    if held[src][0] != src:
                        b.copy(src, full, held[src][0], need[src], need[src], f"patch{p}_in")
                tensor, window = held[src]
                direct = (
                    window == in_window if op.kind == "ADD" else (window.r0, window.c0) == (in_window.r0, in_window.c0)
                )
                if not direct:  # e.g. a residual ADD's operand inside a larger patch buffer
                    cut = b.tensor(src, in_window)
                    b.copy(tensor, window, cut, in_window, in_window, f"patch{p}_cut")
                    tensor = cut
                inputs[pos] = tensor
            out = b.tensor(op.outputs[0], out_window)
            options = dict(op.options)
            notes = replace(
                op.notes,
                layer_suffix=f"patch{p}",
                patch=PatchNote(op.index, p, (out_window.r0, out_window.r1, out_window.c0, out_window.c1)),
            )
            if op.kind in WINDOWED:
                _, s_h, _, p_h, _, s_w, _, p_w = _conv_padding(op, g)
                notes = replace(
                    notes, patch_padding=(max(0, p_h - out_window.r0 * s_h), max(0, p_w - out_window.c0 * s_w))
                )
            b.op(op.kind, inputs, out, options, notes)
            held[op.outputs[0]] = (out, out_window)
        tensor, window = held[final]
        b.copy(tensor, window, final, _full(g.tensors[final]), window, f"patch{p}_out")
    g.operators = b.ops + g.operators[k:]
    return g


def live_peak(g: Graph) -> int:
    """``memory_plan.lower_bound`` of the graph after in-place sharing."""
    from microcompiler.passes.memory_plan import arena_buffers, lower_bound, share_in_place

    h = Graph(g.name, g.tensors, g.operators, g.inputs, g.outputs, dict(g.aliases), tail_shares=dict(g.tail_shares))
    share_in_place(h)
    return lower_bound(arena_buffers(h), len(g.operators))


def _grids(grid: tuple[int, int] | None) -> list[tuple[int, int]]:
    if grid is not None:
        return [(grid[0], grid[1])]
    return [(r, c) for r in range(1, MAX_GRID + 1) for c in range(1, MAX_GRID + 1) if r * c > 1]


def choose_patches(
    g: Graph, grid: tuple[int, int] | None = None, wide: bool = False, memo: dict | None = None
) -> dict | None:
    """The best (stage length, grid): the lowest peak below the layer-by-layer one, then the fewest
    recomputed MACs; None when no stage lowers the peak. Stages within MAX_EXTRA_MACS recomputed
    first; with ``grid`` given, one over it only when none is within. ``wide``: ties to the fewest
    patch columns (_key; for cores with the DSP extension)."""
    from microcompiler.ops.base import kernel_for

    if grid is not None and tuple(grid) == (1, 1):
        return None
    total = sum(kernel_for(op).macs(op, g) for op in g.operators)
    before = live_peak(g)
    best = over_budget = None
    for k in stage_lengths(g):
        y = g.tensors[g.operators[k - 1].outputs[0]]
        if y.nbytes > max([g.tensors[op.outputs[0]].nbytes for op in g.operators[: k - 1]], default=y.nbytes):
            continue  # the activations grew again: a longer or shorter stage does better
        for rows, cols in _grids(grid):
            if rows > y.shape[1] or cols > y.shape[2]:
                continue
            extra = _memo_extra_macs(g, k, (rows, cols), memo)
            if grid is None and extra > MAX_EXTRA_MACS * total:
                continue
            peak = live_peak(apply_patches(g, k, (rows, cols), copy=False))
            candidate = {
                "stage": k,
                "grid": [rows, cols],
                "peak_before": before,
                "peak_after": peak,
                "extra_macs": extra,
                "total_macs": total,
            }
            if extra <= MAX_EXTRA_MACS * total and _lower(candidate, best, wide):
                best = candidate
            if _lower(candidate, over_budget, wide):  # a forced grid's stage over the budget, if none is within
                over_budget = candidate
    return best or over_budget


def _key(choice: dict, wide: bool) -> tuple[int, int, int]:
    """Peak, then extra MACs, then with ``wide`` fewer patch columns: of two grids equal in both (2x3
    and 3x2 on a square image), the wider patches, whose rows the DSP kernels run with less overhead
    per value (person_detect's look-alike on the M4: 3x2 9,591,720 instructions, 2x3 9,630,040; the
    M3's portable kernels the other way: 16,576,520 and 16,529,760, so there the first grid found)."""
    return choice["peak_after"], choice["extra_macs"], choice["grid"][1] if wide else 0


def _lower(candidate: dict, current: dict | None, wide: bool = False) -> bool:
    """The candidate lowers the layer-by-layer peak, and beats ``current`` (_key)."""
    return candidate["peak_after"] < candidate["peak_before"] and (
        current is None or _key(candidate, wide) < _key(current, wide)
    )


def tail_shares(g: Graph, features: frozenset[str]) -> dict[int, int]:
    """Input -> output of the patches' 1x1 stride-1 convolutions that grow the channels and run the
    im2col kernel on this target: it gathers 4 pixels into its column buffer before it writes their 4
    outputs, so with the input in the last bytes of the output's buffer (output pixel n ends at
    (n + 1) * out_c, the first unread input pixel n + 1 starts at N * (out_c - in_c) + (n + 1) * in_c,
    not before it) the layer needs the output's bytes only, not both (``memory_plan.tail_pairs``)."""
    from microcompiler.ops.base import kernel_for
    from microcompiler.ops.fast.conv_2d_im2col import IM2COL

    shares = {}
    for op in g.operators:
        if op.kind != "CONV_2D" or op.notes.patch is None or len(op.inputs) < 2 or len(op.outputs) != 1:
            continue
        x, w, y = g.tensors[op.inputs[0]], g.tensors[op.inputs[1]], g.tensors[op.outputs[0]]
        if (
            (x.dtype, y.dtype) != ("int8", "int8")
            or tuple(w.shape[1:3]) != (1, 1)
            or (op.options.get("stride_h"), op.options.get("stride_w")) != (1, 1)
            or tuple(y.shape[:3]) != tuple(x.shape[:3])
            or y.shape[3] <= x.shape[3]
            or x.shape[3] % 4
        ):
            continue
        if kernel_for(op).kernel_plan(op, g, features).variant == IM2COL:  # what emit() runs for the target
            shares[op.inputs[0]] = op.outputs[0]
    return shares


def _planned_arena(g: Graph) -> int:
    from microcompiler.passes.memory_plan import plan_memory

    return plan_memory(g).arena_bytes


def _faster_with_tails(
    graph: Graph, choice: dict, features: frozenset[str], wide: bool, memo: dict | None = None
) -> Graph | None:
    """The patched graph, with its tail shares, that recomputes fewer MACs than ``choice`` in no more
    arena than ``choice`` takes without them (the fewest MACs first); None when there is none."""
    arena = _planned_arena(apply_patches(graph, choice["stage"], tuple(choice["grid"]), copy=False))
    candidates = []
    for k in stage_lengths(graph):
        out = graph.tensors[graph.operators[k - 1].outputs[0]]
        if out.nbytes > max(
            [graph.tensors[op.outputs[0]].nbytes for op in graph.operators[: k - 1]], default=out.nbytes
        ):
            continue  # the activations grew again (choose_patches)
        for rows, cols in _grids(None):
            if rows > out.shape[1] or cols > out.shape[2]:
                continue
            extra = _memo_extra_macs(graph, k, (rows, cols), memo)
            if extra < choice["extra_macs"]:
                candidates.append((extra, cols if wide else 0, k, (rows, cols)))
    for extra, _, k, grid in sorted(candidates):
        g = apply_patches(graph, k, grid, copy=False)
        g.tail_shares = tail_shares(g, features)
        if not g.tail_shares or live_peak(g) > arena:
            continue  # not even with every share
        g = apply_patches(graph, k, grid)
        by_layer: dict[int, dict[int, int]] = {}  # the shares of each stage layer, all its patches
        for src, dst in tail_shares(g, features).items():
            producer = g.producer(dst)
            note = producer.notes.patch if producer is not None else None
            by_layer.setdefault(note.of if note else -1, {})[src] = dst
        subsets = [dict(kv for d in by_layer.values() for kv in d.items()), *by_layer.values()]
        for shares in subsets if by_layer else []:
            g.tail_shares = shares
            if live_peak(g) <= arena and _planned_arena(g) <= arena:
                break
        else:
            continue
        g.patches = {
            **choice,
            "stage": k,
            "grid": list(grid),
            "peak_after": live_peak(g),
            "extra_macs": extra,
            "count": grid[0] * grid[1],
            "stage_operators": [op.index for op in graph.operators[:k]],
        }
        return g
    return None


def patch_stage(
    graph: Graph, grid: tuple[int, int] | None = None, wide: bool = False, features: frozenset[str] | None = None
) -> Graph:
    """The graph with its leading stage run in patches when that lowers the RAM peak (module doc);
    ``Graph.patches`` records the choice ({} when the pass changed nothing). ``wide``: choose_patches'.
    ``features`` (cores with the DSP extension, the grid chosen): a grid that recomputes fewer MACs is
    taken where its growing 1x1 layers writing over their inputs' tails (``tail_shares``) keep the
    arena within the chosen grid's."""
    if graph.subgraphs or any(graph.tensors[i].persistent for i in range(len(graph.tensors))):
        return graph
    memo: dict = {}  # (stage length, grid) -> recomputed MACs, for both searches
    choice = choose_patches(graph, grid, wide, memo)
    if choice is None or (grid is None and choice["peak_after"] > AUTO_MAX_PEAK_RATIO * choice["peak_before"]):
        return graph
    if grid is None and wide and features is not None:
        faster = _faster_with_tails(graph, choice, features, wide, memo)
        if faster is not None:
            return faster
    g = apply_patches(graph, choice["stage"], tuple(choice["grid"]))
    g.patches = {
        **choice,
        "count": choice["grid"][0] * choice["grid"][1],
        "stage_operators": [op.index for op in graph.operators[: choice["stage"]]],
    }
    return g
