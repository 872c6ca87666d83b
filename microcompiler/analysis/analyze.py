"""``analyze``: per-layer costs, totals, the fit against a board, and the memory plan, with no build."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from microcompiler.analysis import loops
from microcompiler.analysis.memory_plan import memory_plan
from microcompiler.boards import Board
from microcompiler.codegen import ModelLibrary
from microcompiler.compiler import KnobSource, compile_model
from microcompiler.ops import cost_model
from microcompiler.timing import estimated


def analyze_model(
    model: str | Path,
    board: Board | None = None,
    ram_limit: int | None = None,
    tuning: dict | KnobSource | None = None,
    patches: str | None = None,
) -> dict:
    """Compile ``model`` for ``board``'s CPU (portable C without a board) under ``ram_limit`` (or the
    board's RAM, docs/memory.md), with compile_model's ``tuning`` and ``patches``, and analyze it."""
    from microcompiler.passes.ram_budget import NoPlanFits
    from microcompiler.targets.footprint import ram_for_models

    features = board.cpu.features if board is not None else frozenset()
    available = ram_for_models(board) if board is not None and not board.is_host else None
    try:
        library = compile_model(
            model, features=features, ram_limit=ram_limit, ram_available=available, tuning=tuning, patches=patches
        )
    except NoPlanFits:
        if ram_limit is not None:
            raise
        # the board is too small for every plan: analyze the default one, whose fit shows what is missing
        library = compile_model(model, features=features, tuning=tuning, patches=patches)
    return analyze_library(library, board)


def analyze_library(library: ModelLibrary, board: Board | None = None) -> dict:
    from microcompiler.project import estimate_footprint
    from microcompiler.targets.footprint import system_ram_bytes, zephyr_only

    info, graph = library.info, library.graph  # the typed metadata (codegen/model_info.py)
    layers: list[dict[str, Any]] = []
    family = cost_model.core_family(board.cpu.core, board.cpu.features) if board is not None else "m3"
    for fn, op in zip(library.functions, info.operators):
        dtype = graph.tensors[fn.op.inputs[0]].dtype if fn.op.inputs and fn.op.inputs[0] >= 0 else "-"
        estimate, key = loops.operator_estimate(op, dtype, info, graph, fn.op, graph.subgraphs, family)
        layers.append(
            {
                "index": op.index,
                "name": op.layer_name,
                "layer": op.layer,
                "kind": op.kind,
                "dtype": dtype,
                "inputs": [list(s) for s in op.inputs],
                "outputs": [list(s) for s in op.outputs],
                "macs": op.macs,
                "weights_bytes": op.weights_bytes,
                "kernel": dict(op.kernel),
                "estimated_instructions": int(round(estimate)),
                "cost_model": key,
            }
        )
    need = estimate_footprint(info, "aot", system_ram_bytes(board))
    instructions = sum(layer["estimated_instructions"] for layer in layers)
    totals = {
        "macs": info.total_macs,
        "weights_bytes": info.params_bytes,
        "code_bytes_estimate": need["code"],
        "flash_bytes": need["flash"],
        "arena_bytes": info.arena_bytes,
        "scratch_bytes": info.scratch_bytes,
        "stack_bytes_estimate": need["stack"],
        # what the stack figure holds: a Zephyr-only board's also has the kernel and its buffers
        "stack_includes": "zephyr kernel" if zephyr_only(board) else "stack",
        "state_bytes": info.state_bytes,
        "ram_bytes": need["ram"],
        "estimated_instructions": instructions,
    }
    result = {
        "model": info.name,
        "board": board.name if board else None,
        "core": board.cpu.core if board else None,
        "layers": layers,
        "totals": totals,
        "memory_plan": memory_plan(graph, info),
        "memory_peak": info.memory_peak.to_json() if info.memory_peak else None,
        "ram_budget": info.detail("ram_budget", {}),
        "fit": None,
        "estimated_time": estimated(instructions, board),
    }
    if board is not None:
        result["fit"] = {
            "flash": _fit(need["flash"], board.flash.size, board.flash.name),
            "ram": _fit(need["ram"], board.ram.size, board.ram.name),
        }
    return result


def _fit(need: int, size: int, region: str) -> dict:
    return {
        "needed": need,
        "available": size,
        "region": region,
        "margin": size - need,
        "fits": need <= size,
        "used_percent": round(100.0 * need / size, 1) if size else None,
    }
