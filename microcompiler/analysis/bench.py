"""What ``bench`` measured, as one report: the whole inference and each operator, in the shared time
vocabulary (microcompiler/timing.py), beside analyze's estimate (``microcompiler bench``, ``api.bench``)."""

from __future__ import annotations

from collections.abc import Callable

from microcompiler.boards import Board
from microcompiler.codegen.model_info import ModelInfo
from microcompiler.errors import MicrocompilerError
from microcompiler.rpc.client import TimeResult
from microcompiler.timing import measured, relative_error

# The most runs one TIME request may ask of the device: MC_RPC_MAX_TIMED_RUNS in
# crt/include/microcompiler/rpc_server.h (the firmware microcompiler builds uses the default).
DEVICE_MAX_TIMED_RUNS = 1_000_000


def check_timed_runs(number: int, repeat: int, spell: Callable[[str], str] = lambda name: f"--{name}") -> None:
    """``bench``'s --number and --repeat (the API's number= and repeat=): whole numbers of at least
    1, --number within what the device runs in one TIME request. One line naming the option."""
    for name, value in (("number", number), ("repeat", repeat)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise MicrocompilerError(f"{spell(name)} {value!r}: give a whole number of at least 1")
    if number > DEVICE_MAX_TIMED_RUNS:
        raise MicrocompilerError(
            f"{spell('number')} {number} is more than the device runs in one measurement: its "
            f"limit is {DEVICE_MAX_TIMED_RUNS:,} (MC_RPC_MAX_TIMED_RUNS); use {spell('number')} "
            f"{DEVICE_MAX_TIMED_RUNS} or less and raise {spell('repeat')} instead"
        )


def bench_report(
    meta: ModelInfo,
    board: Board,
    whole: TimeResult,
    operators: list[dict],
    analysis: dict,
    number: int,
    repeat: int,
) -> dict:
    """What bench measured, in the shared time vocabulary (microcompiler/timing.py), each operator under
    its short layer name (the full tensor name kept as "layer") beside analyze's estimate."""
    hz = whole.timer_hz
    estimates = {layer["index"]: layer for layer in analysis["layers"]}
    for op in operators:
        op["time"] = measured(op["ticks"], hz, board)
        layer = estimates.get(op.get("index"))
        if layer is not None:
            op["layer_name"] = layer["name"]
            op["estimated_instructions"] = layer["estimated_instructions"]
            if op["time"]["instructions"] is not None:
                op["estimate_error"] = relative_error(layer["estimated_instructions"], op["time"]["instructions"])
    inference = {
        "ticks": whole.median_ticks,
        "ticks_per_run": whole.ticks_per_run,
        "seconds": whole.median_ticks / hz,
        "ticks_per_run_each_repeat": [t // number for t in whole.ticks],
        "time": measured(whole.median_ticks, hz, board),
        "estimated_instructions": analysis["totals"]["estimated_instructions"],
    }
    if inference["time"]["instructions"] is not None:
        inference["estimate_error"] = relative_error(
            inference["estimated_instructions"], inference["time"]["instructions"]
        )
    total = sum(op["ticks"] for op in operators)
    return {
        "model": meta.name,
        "board": board.name,
        "timer_hz": hz,
        "number": number,
        "repeat": repeat,
        "inference": inference,
        "operators": operators,
        "operator_ticks_total": total,
        "operator_time": measured(total, hz, board),
        "total_macs": meta.total_macs,
        "memory_peak": meta.memory_peak.to_json() if meta.memory_peak else {},
    }
