"""Choose the memory plan under a RAM budget: the fastest plan whose arena + scratch fits.

Users do not ask for a patch grid; they ask "make it fit my board's RAM". This planner lists the
plans that trade time for RAM, plans each one (``plan_memory``), and keeps the fastest that fits the
budget (``--ram-limit BYTES``, or by default what the board's RAM leaves after the runtime, the stack
and the model's inputs and outputs):

* **layer by layer**: no patches, no depthwise layer in place (the fastest kernels everywhere);
* **in-place depthwise and pointwise**: ``plan_memory``'s choice of depthwise layers written over
  their input (one channel at a time through the ``planes`` kernel, also where ``channels4`` or the
  Helium kernel would run otherwise: that is what it costs in time), and the 1x1 convolutions that
  can write over their input on the target's kernel (``share_pointwise_in_place``, no time cost);
* **patches**: every leading stage the patch pass can run (``patches.stage_lengths``, also past the
  downsampling blocks) under every grid up to ``MAX_GRID`` x ``MAX_GRID``, each with and without the
  in-place layers (inside the patches and after the stage, where the peak moves).

A plan's RAM is its arena plus the kernels' shared scratch (the largest any kernel plan asks for on
the target's CPU); its time is the cost model's estimated instructions (``ops/cost_model.py``,
fitted to ``-icount`` runs), beside the multiply-accumulates the halos recompute. There are many
(stage, grid) pairs, so they are screened first by the live-set lower bound with every depthwise
layer in place (``memory_plan.lower_bound``) and their extra MACs: only those that no other pair
beats on both are planned in full.

``plan_for_budget(graph, limit)`` is a pass (IR -> IR): it returns the chosen planned graph, with the
plans it tried in ``Graph.ram_plan``, or raises ``NoPlanFits`` naming the smallest plan and the layer
that holds its peak. ``keep_default=True`` (the board's budget, no explicit limit) keeps the plan the
pipeline makes without a budget (``patch_stage``'s automatic choice) whenever it fits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from microcompiler.errors import BoardError
from microcompiler.ir import Graph, Operator
from microcompiler.ops.fast.conv_2d_im2col import IM2COL
from microcompiler.ops.features import has_dsp
from microcompiler.ops.plan import KernelPlan
from microcompiler.passes.memory_plan import arena_buffers, lower_bound, peak_step, plan_memory, share_in_place
from microcompiler.passes.patches import apply_patches, extra_macs, live_peak, patch_stage, patch_windows, stage_lengths

MAX_GRID = 4  # patch grids up to MAX_GRID x MAX_GRID
IN_PLACE = "in-place depthwise and pointwise"
MAX_EXTRA_MACS = 1.0  # patch stages that recompute at most the model's own MACs once more
# kernels whose ``plan(op, graph, features)`` gives the variant and scratch they emit for a target
_PLANNED_KINDS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")


@dataclass
class Plan:
    """One way to run the model: its planned graph, RAM (arena + scratch) and estimated time."""

    name: str
    graph: Graph
    arena_bytes: int
    scratch_bytes: int
    estimated_instructions: int
    extra_macs: int
    peak_operator: Operator | None  # the operator at the arena's largest live set
    settings: dict = field(default_factory=dict)  # stage, grid, in_place_depthwise

    @property
    def ram_bytes(self) -> int:
        return self.arena_bytes + self.scratch_bytes


class NoPlanFits(BoardError):
    """No plan's arena + scratch fits the RAM budget."""

    def __init__(self, message: str, limit: int, smallest: Plan):
        super().__init__(message)
        self.limit, self.smallest = limit, smallest


def _kernel_plan(op: Operator, g: Graph, features: frozenset[str]) -> KernelPlan:
    from microcompiler.ops.base import kernel_for

    kernel = kernel_for(op)
    if op.kind in _PLANNED_KINDS:  # their plan(op, graph, features) is what emit() runs for the target
        return kernel.kernel_plan(op, g, features)
    return kernel.kernel_plan(op, g)


def estimate(g: Graph, features: frozenset[str]) -> tuple[int, int]:
    """(kernel scratch bytes, estimated instructions) of a planned graph on a CPU with ``features``."""
    from microcompiler.ops.base import kernel_for
    from microcompiler.ops.cost_model import OperatorWork, core_family
    from microcompiler.ops.cost_model import estimate as cost

    scratch, instructions = 0, 0.0
    for op in g.operators:
        plan = _kernel_plan(op, g, features)
        scratch = max(scratch, -(-plan.scratch // 4) * 4)
        x = g.tensors[op.inputs[0]] if op.inputs and op.inputs[0] >= 0 else None
        work = OperatorWork(
            kind=op.kind,
            macs=kernel_for(op).macs(op, g),
            inputs=[g.tensors[i].shape for i in op.inputs if i >= 0],
            outputs=[g.tensors[o].shape for o in op.outputs],
            kernel=plan.as_json(),
        )
        instructions += cost(work, x.dtype if x is not None else "-", core_family(None, features))[0]
    return scratch, int(round(instructions))


def share_pointwise_in_place(g: Graph, features: frozenset[str]) -> None:
    """Let a 1x1 stride-1 int8 CONV_2D with no more output than input channels write its output over
    its input where that input dies there, when it runs the im2col kernel on this target: the kernel
    gathers 4 input pixels into its column buffer before it writes their 4 output pixels, which lie
    at or before the gathered input bytes (output pixel n ends at (n + 1) * out_c <= (n + 1) * in_c).
    Not for the reference loops, which read a pixel's channels while writing them."""
    from microcompiler.passes.memory_plan import _last_reads

    owned = {g.storage(t) for t in g.inputs + g.outputs}
    last = _last_reads(g)
    for step, op in enumerate(g.operators):
        if op.kind != "CONV_2D" or len(op.outputs) != 1 or len(op.inputs) < 2 or op.outputs[0] in g.aliases:
            continue
        x, w, y = g.tensors[op.inputs[0]], g.tensors[op.inputs[1]], g.tensors[op.outputs[0]]
        root = g.storage(op.inputs[0])
        t = g.tensors[root]
        if (
            (x.dtype, y.dtype) != ("int8", "int8")
            or len(x.shape) != 4
            or x.shape[0] != 1
            or tuple(w.shape[1:3]) != (1, 1)
            or (op.options.get("stride_h"), op.options.get("stride_w")) != (1, 1)
            or tuple(y.shape[1:3]) != tuple(x.shape[1:3])
            or y.shape[3] > x.shape[3]
        ):
            continue
        if (
            root in owned
            or g.storage(op.outputs[0]) in owned
            or t.is_constant
            or t.persistent
            or last.get(root) != step
            or t.nbytes < y.nbytes
        ):
            continue
        if _kernel_plan(op, g, features).variant != IM2COL:
            continue
        g.aliases[op.outputs[0]] = root
        last[root] = max(last.get(root, step), last.pop(op.outputs[0], step))


def _planned(
    name: str,
    g: Graph,
    features: frozenset[str],
    in_place: bool,
    extra: int,
    settings: dict,
    pointwise: bool = False,
) -> Plan:
    """``g`` planned: depthwise layers in place where that pays (``in_place``), pointwise ones where
    they can (``pointwise``, ``share_pointwise_in_place``)."""
    h = Graph(
        g.name,
        g.tensors,
        g.operators,
        g.inputs,
        g.outputs,
        dict(g.aliases),
        subgraphs=g.subgraphs,
        patches=g.patches,
        ram_plan={"in_place_depthwise": in_place},
        tail_shares=dict(g.tail_shares),
    )
    if pointwise:
        share_pointwise_in_place(h, features)
    planned = plan_memory(h)  # a copy: ``g`` may share its operators with the input graph
    scratch, instructions = estimate(planned, features)
    step, _ = peak_step(arena_buffers(planned), len(planned.operators))
    return Plan(
        name,
        planned,
        planned.arena_bytes,
        scratch,
        instructions,
        extra,
        planned.operators[step] if step >= 0 else None,
        {**settings, "in_place_depthwise": in_place, "in_place_pointwise": pointwise},
    )


def _optimistic_peak(g: Graph, features: frozenset[str], pointwise: bool) -> int:
    """The live-set lower bound with every depthwise (and pointwise) layer that can run in place in place."""
    from microcompiler.passes.memory_plan import _in_place_inputs

    h = Graph(g.name, g.tensors, g.operators, g.inputs, g.outputs, dict(g.aliases))
    if pointwise:
        share_pointwise_in_place(h, features)
    share_in_place(h)
    for _, out, root, _ in list(_in_place_inputs(h, with_scratch=True)):
        h.aliases[out] = root
    return lower_bound(arena_buffers(h), len(g.operators))


def _patch_candidates(
    g: Graph, max_grid: int, total: int, features: frozenset[str], pointwise: bool
) -> list[tuple[int, tuple[int, int], int]]:
    """(stage length, grid, extra MACs) of the stages and grids no other beats on both the optimistic
    peak and the recomputed MACs (at most ``MAX_EXTRA_MACS`` of the model's ``total``)."""
    screened = []
    for k in stage_lengths(g):
        y = g.tensors[g.operators[k - 1].outputs[0]]
        if y.nbytes > max([g.tensors[op.outputs[0]].nbytes for op in g.operators[: k - 1]], default=y.nbytes):
            continue  # the activations grew again: a longer or shorter stage does better
        for rows in range(1, max_grid + 1):
            for cols in range(1, max_grid + 1):
                if rows * cols == 1 or rows > y.shape[1] or cols > y.shape[2]:
                    continue
                extra = extra_macs(g, k, patch_windows(g, k, (rows, cols)))
                if extra > MAX_EXTRA_MACS * total:
                    continue
                peak = _optimistic_peak(apply_patches(g, k, (rows, cols), copy=False), features, pointwise)
                screened.append((peak, extra, k, (rows, cols)))
    base = _optimistic_peak(g, features, pointwise)
    front, best_extra = [], None
    for peak, extra, k, grid in sorted(screened):
        if peak < base and (best_extra is None or extra < best_extra):
            front.append((k, grid, extra))
            best_extra = extra
    return front


def _describe(g: Graph, k: int, grid: tuple[int, int], layer_name: Callable[[Graph, Operator], str]) -> str:
    return f"patches {grid[0]}x{grid[1]}, {k} layers to {layer_name(g, g.operators[k - 1])}"


def _any_in_place(g: Graph) -> bool:
    """A depthwise or pointwise layer writes over its input."""
    return any(
        op.kind in ("DEPTHWISE_CONV_2D", "CONV_2D") and g.storage(op.outputs[0]) == g.storage(op.inputs[0])
        for op in g.operators
    )


def _tensor_layer(g: Graph, op: Operator) -> str:
    return g.tensors[op.outputs[0]].name if op.outputs else f"{op.kind.lower()}_{op.index}"


def default_plan(graph: Graph, features: frozenset[str] = frozenset(), tails: bool = True) -> Plan:
    """The plan the pipeline makes without a budget: ``patch_stage``'s automatic choice (``tails``:
    with its tail shares), then ``plan_memory`` with the in-place depthwise layers that lower arena +
    scratch."""
    g = patch_stage(graph, wide=has_dsp(features), features=features if tails else None)
    p = g.patches
    name = f"default ({'patches ' + 'x'.join(map(str, p['grid'])) if p else 'layer by layer'})"
    return _planned(
        name, g, features, True, p.get("extra_macs", 0), {"stage": p.get("stage", 0), "grid": p.get("grid", [1, 1])}
    )


def candidate_plans(
    graph: Graph,
    features: frozenset[str] = frozenset(),
    max_grid: int = MAX_GRID,
    layer_name: Callable[[Graph, Operator], str] = _tensor_layer,
    reference: bool = False,
    tails: bool = True,
) -> list[Plan]:
    """Every plan worth trying (module doc), planned, after the pipeline's default plan;
    ``reference``: the reference kernels will be emitted (no pointwise layer in place); ``tails``:
    default_plan's."""
    pointwise = not reference
    plans = [
        default_plan(graph, features, tails),
        _planned("layer by layer", graph, features, False, 0, {"stage": 0, "grid": [1, 1]}),
    ]
    _add(plans, _planned(IN_PLACE, graph, features, True, 0, {"stage": 0, "grid": [1, 1]}, pointwise))
    if graph.subgraphs or any(t.persistent for t in graph.tensors):
        return plans  # what the patch pass leaves alone
    before = live_peak(graph)
    total = sum(_macs(op, graph) for op in graph.operators)
    for k, grid, extra in _patch_candidates(graph, max_grid, total, features, pointwise):
        name = _describe(graph, k, grid, layer_name)
        g = apply_patches(graph, k, grid, copy=False)  # plan_memory copies it
        g.patches = {
            "stage": k,
            "grid": list(grid),
            "peak_before": before,
            "peak_after": live_peak(g),
            "extra_macs": extra,
            "total_macs": total,
            "count": grid[0] * grid[1],
            "stage_operators": [op.index for op in graph.operators[:k]],
        }
        for in_place in (False, True):
            _add(
                plans,
                _planned(
                    name + (", " + IN_PLACE if in_place else ""),
                    g,
                    features,
                    in_place,
                    extra,
                    {"stage": k, "grid": list(grid)},
                    pointwise and in_place,
                ),
            )
    return plans


def _add(plans: list[Plan], plan: Plan) -> None:
    """Append a plan unless it is one already listed (the default's choice, or in-place layers
    where no layer goes in place)."""
    if plan.settings["in_place_depthwise"] and not _any_in_place(plan.graph):
        return
    same = {"stage", "grid"}
    if any(
        p.settings["in_place_depthwise"] == plan.settings["in_place_depthwise"] or not _any_in_place(p.graph)
        for p in plans
        if {k: p.settings[k] for k in same} == {k: plan.settings[k] for k in same} and p.ram_bytes == plan.ram_bytes
    ):
        return
    plans.append(plan)


def choose_plan(plans: list[Plan], limit: int | None) -> Plan | None:
    """The fastest plan (fewest estimated instructions, then the least RAM) whose arena + scratch is at
    most ``limit``."""
    fitting = [p for p in plans if limit is None or p.ram_bytes <= limit]
    return min(fitting, key=lambda p: (p.estimated_instructions, p.ram_bytes)) if fitting else None


def plan_for_budget(
    graph: Graph,
    limit: int | None,
    features: frozenset[str] = frozenset(),
    keep_default: bool = False,
    limit_source: str = "--ram-limit",
    layer_name: Callable[[Graph, Operator], str] = _tensor_layer,
    reference: bool = False,
    tails: bool = True,
) -> Graph:
    """The pass: the chosen plan's graph (planned: offsets and arena), with ``Graph.ram_plan`` listing
    the plans tried; ``NoPlanFits`` when none fits ``limit``. ``keep_default``: the default plan
    whenever it fits (then it is the only one tried); ``tails``: the patch pass's tail shares."""
    plans = [default_plan(graph, features, tails)] if keep_default else []
    if not plans or (limit is not None and plans[0].ram_bytes > limit):
        plans = candidate_plans(graph, features, layer_name=layer_name, reference=reference, tails=tails)
    chosen = plans[0] if keep_default and (limit is None or plans[0].ram_bytes <= limit) else choose_plan(plans, limit)
    if chosen is None:
        assert limit is not None  # without a limit every plan fits
        smallest = min(plans, key=lambda p: (p.ram_bytes, p.estimated_instructions))
        where = layer_name(smallest.graph, smallest.peak_operator) if smallest.peak_operator else "no layer"
        raise NoPlanFits(
            f"no memory plan fits {limit_source} {limit:,} B: the smallest needs {smallest.ram_bytes:,} B "
            f"(arena {smallest.arena_bytes:,} + scratch {smallest.scratch_bytes:,}, {smallest.name}), "
            f"its peak at layer {where}; raise the limit or use a board with more RAM",
            limit,
            smallest,
        )
    g = chosen.graph
    g.ram_plan = {
        "limit": limit,
        "limit_source": limit_source,
        "chosen": chosen.name,
        "in_place_depthwise": chosen.settings["in_place_depthwise"],
        "plans": [_record(p, p is chosen, limit, layer_name) for p in plans],
    }
    return g


def _macs(op: Operator, g: Graph) -> int:
    from microcompiler.ops.base import kernel_for

    return kernel_for(op).macs(op, g)


def _record(p: Plan, chosen: bool, limit: int | None, layer_name: Callable[[Graph, Operator], str]) -> dict:
    return {
        "plan": p.name,
        "arena_bytes": p.arena_bytes,
        "scratch_bytes": p.scratch_bytes,
        "ram_bytes": p.ram_bytes,
        "extra_macs": p.extra_macs,
        "estimated_instructions": p.estimated_instructions,
        "peak_layer": layer_name(p.graph, p.peak_operator) if p.peak_operator else None,
        "fits": limit is None or p.ram_bytes <= limit,
        "chosen": chosen,
        **p.settings,
    }
