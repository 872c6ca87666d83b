"""Graph-to-graph passes. Each is a function ``Graph -> Graph`` that leaves its input untouched.

``PIPELINE`` is the default order ``microcompiler.compiler`` runs them in. A model with several
subgraphs (IF, WHILE, CALL_ONCE) keeps them in ``Graph.subgraphs``: every pass of the pipeline
transforms each of them as well (``each_subgraph``); ``plan_memory`` plans them itself, callees first.
"""

import functools

from microcompiler.ir import Graph
from microcompiler.passes.dead_code import remove_dead_code, remove_uncalled_subgraphs
from microcompiler.passes.fold_constants import fold_constants
from microcompiler.passes.fuse_activations import fuse_activations
from microcompiler.passes.fuse_tables import fuse_tables
from microcompiler.passes.memory_plan import plan_memory
from microcompiler.passes.operator_state import add_operator_state
from microcompiler.passes.patches import patch_stage
from microcompiler.passes.ram_budget import plan_for_budget
from microcompiler.passes.remove_reshapes import remove_reshapes
from microcompiler.passes.zero_channels import drop_zero_channels


def each_subgraph(graph_pass):
    """``graph_pass`` applied to the main graph and to each of its subgraphs."""

    @functools.wraps(graph_pass)
    def run(graph: Graph) -> Graph:
        g = graph_pass(graph)
        g.subgraphs = {k: graph_pass(s) for k, s in graph.subgraphs.items()}
        return g

    return run


PIPELINE = (
    [remove_uncalled_subgraphs]
    + [
        each_subgraph(p)
        for p in (
            add_operator_state,
            fold_constants,
            fuse_activations,
            remove_reshapes,
            fuse_tables,
            drop_zero_channels,
            remove_dead_code,
        )
    ]
    + [patch_stage, plan_memory]
)


def pipeline(
    patches: tuple[int, int] | None = None, wide: bool = False, features: frozenset[str] | None = None
) -> list:
    """``PIPELINE`` with the patch pass's grid forced (``(1, 1)``: off; None: chosen, docs/memory.md);
    ``wide``: the patch pass's tie to wider patches (patches.choose_patches, DSP cores); ``features``:
    the target's, for the patch pass's tail shares (patches.tail_shares)."""
    if patches is None and not wide:
        return PIPELINE
    grid = None if patches is None else tuple(patches)
    return [
        functools.partial(patch_stage, grid=grid, wide=wide, features=features) if p is patch_stage else p
        for p in PIPELINE
    ]


def budget_pipeline(planner) -> list:
    """``PIPELINE`` with ``patch_stage`` and ``plan_memory`` replaced by ``planner``, a RAM-budget
    planner (``functools.partial(plan_for_budget, limit=...)``, passes/ram_budget.py) that chooses the
    patches and the in-place layers and plans the memory itself."""
    return [p for p in PIPELINE if p not in (patch_stage, plan_memory)] + [planner]


__all__ = [
    "PIPELINE",
    "pipeline",
    "budget_pipeline",
    "plan_for_budget",
    "each_subgraph",
    "add_operator_state",
    "fold_constants",
    "fuse_activations",
    "remove_reshapes",
    "fuse_tables",
    "drop_zero_channels",
    "remove_dead_code",
    "remove_uncalled_subgraphs",
    "patch_stage",
    "plan_memory",
]
