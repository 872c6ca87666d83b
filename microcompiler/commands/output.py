"""What run, bench and flash print: one JSON object (--json) or lines for people."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from microcompiler.boards import Board
from microcompiler.codegen.model_info import ModelInfo
from microcompiler.report.provenance import with_provenance
from microcompiler.targets import HOST_DRIVEN, BuildResult, model_flash
from microcompiler.timing import describe, format_duration, measured


def run_report(
    meta: ModelInfo,
    board: Board,
    template: str,
    mode: str,
    executor: str,
    outputs: list[np.ndarray],
    ticks: int,
    hz: int,
    built: BuildResult | None = None,
    stack_bytes: int | None = None,
    operator_ticks: list[int] | None = None,
    rpc: dict | None = None,
) -> dict:
    """The result of one run, as --json prints it."""
    report: dict[str, Any] = {
        "model": meta.name,
        "board": board.name,
        "template": template,
        "mode": mode,
        "executor": executor,
    }
    if built is not None:
        report.update(flash_bytes=built.flash_bytes, ram_bytes=built.ram_bytes, stack_bytes=stack_bytes)
        report.update(model_flash_split(built, meta.name))
    report.update(
        {
            "outputs": [out.tolist() for out in outputs],
            "output_dtypes": [o.dtype for o in meta.outputs],
            "device_ticks": ticks,
            "timer_hz": hz,
            "time": measured(ticks, hz, board),
        }
    )
    if operator_ticks is not None:
        report["operator_ticks"] = operator_ticks
    report.update(arena_bytes=meta.arena_bytes, params_bytes=meta.params_bytes)
    if rpc is not None:
        report["rpc"] = rpc
    return report


def model_flash_split(built: BuildResult | None, name: str) -> dict:
    """The model's code and weights in the firmware's flash (measured from the ELF), or nothing."""
    split = model_flash(built.elf, name) if built is not None and built.elf.is_file() else None
    return (
        {}
        if split is None
        else {"model_code_bytes": split["code_bytes"], "model_weights_bytes": split["weights_bytes"]}
    )


def flash_line(report: dict) -> str | None:
    """One line: the firmware's flash, and in it the model's code and weights apart."""
    if "model_code_bytes" not in report:
        return None
    return (
        f"flash: {report['flash_bytes']:,} B, of which the model's code {report['model_code_bytes']:,} B and its "
        f"weights {report['model_weights_bytes']:,} B"
    )


def add_steps(report: dict, step_outputs: list[list[np.ndarray]], step_ticks: list[int]) -> None:
    """A sequence of inferences (docs/state.md): every step's outputs and device ticks, in order;
    the report's own "outputs" and "device_ticks" stay those of the last step."""
    report["steps"] = [
        {"outputs": [out.tolist() for out in outputs], "device_ticks": ticks}
        for outputs, ticks in zip(step_outputs, step_ticks)
    ]


def print_outputs(outputs: list[np.ndarray], dtypes: list[str]) -> None:
    """The model's outputs, one block per output tensor."""
    for k, out in enumerate(outputs):
        print(f"output{k} {dtypes[k]}{list(out.shape)}:")
        print(np.array2string(out, threshold=64))


def print_run(
    report: dict,
    outputs: list[np.ndarray],
    label: str | None,
    as_json: bool,
    step_arrays: list[list[np.ndarray]] | None = None,
) -> None:
    """``microcompiler run``'s result. label: how the target is named in the summary (None: not);
    step_arrays: every step's outputs of a sequence, printed step by step."""
    if as_json:
        print(json.dumps(with_provenance(report)))
        return
    if step_arrays:
        for step, step_outputs in enumerate(step_arrays):
            print(f"step {step}:")
            print_outputs(step_outputs, report["output_dtypes"])
    else:
        print_outputs(outputs, report["output_dtypes"])
    details = [label] if label else []
    if report["mode"] == HOST_DRIVEN:
        details.append(f"sum of {len(report['operator_ticks'])} operators, host-driven")
    where = f"{report['board']} ({', '.join(details)})" if details else report["board"]
    print(f"time on {where}: {describe(report['time'])}; {report['device_ticks']:,} timer ticks")
    if "flash_bytes" in report:
        stack = report["stack_bytes"]
        print(
            f"firmware: flash {report['flash_bytes']:,} B, RAM {report['ram_bytes']:,} B"
            + (f" (stack high-water {stack:,} B)" if stack is not None else "")
        )
        if flash_line(report):
            print(flash_line(report))


def print_flash(report: dict, outputs: list[np.ndarray], as_json: bool) -> None:
    """``microcompiler flash``'s result."""
    if as_json:
        print(json.dumps(with_provenance(report)))
        return
    print_outputs(outputs, [str(out.dtype) for out in outputs])
    print(f"time on {report['board']}: {describe(report['time'])}; {report['device_ticks']:,} timer ticks")
    if report["stack_bytes"] is not None:
        print(f"stack high-water mark: {report['stack_bytes']:,} B")


def print_bench(report: dict, as_json: bool) -> None:
    """``microcompiler bench``'s result: the whole inference, then a table of the operators, each measured
    beside analyze's estimate (the same unit: instructions on emulated boards, time at the board's clock)."""
    if as_json:
        print(json.dumps(with_provenance(report)))
        return
    inference, operators = report["inference"], report["operators"]
    op_total = report["operator_ticks_total"]
    estimate = inference.get("estimated_instructions")
    versus = (
        f"; analyze estimated {estimate:,} ({_percent(inference['estimate_error'])})"
        if estimate is not None and inference.get("estimate_error") is not None
        else ""
    )
    print(
        f"{report['model']} on {report['board']}: {describe(inference['time'])} per inference "
        f"(median of {report['repeat']} x {report['number']} runs){versus}"
    )
    exact = inference["time"].get("instructions") is not None
    unit = "instructions" if exact else "ticks"
    print(
        f"{'#':>3}  {'layer':<24} {'operator':<20} {unit:>12} {'time':>9} {'share':>6} {'est. instr.':>12} {'error':>7}"
    )
    for op in operators:
        share = op["ticks"] / op_total * 100 if op_total else 0.0
        amount = op["time"]["instructions"] if exact else op["ticks"]
        est = op.get("estimated_instructions")
        error = _percent(op.get("estimate_error")) if op.get("estimate_error") is not None else ""
        print(
            f"{op.get('index', ''):>3}  {str(op.get('layer_name') or op['function'])[:24]:<24} "
            f"{str(op.get('kind', ''))[:20]:<20} {amount:>12,} {format_duration(op['time']['seconds']):>9} "
            f"{share:>5.1f}% {'' if est is None else f'{est:,}':>12} {error:>7}"
        )
    total = report.get("operator_time")
    print(f"sum of operators: {describe(total) if total else f'{op_total} ticks'}")
    if flash_line(report):
        print(flash_line(report))
    print(peak_line(report["memory_peak"]))


def _percent(fraction: float) -> str:
    return f"{fraction * 100:+.0f}%"


def peak_line(peak: dict) -> str:
    """Where the RAM peak sits: the operator and the tensors live there (metadata.json "memory_peak")."""
    if peak["step"] is None:
        return f"RAM peak: no arena buffers (arena {peak['arena_bytes']:,} B)"
    live = ", ".join(f"{t['layer_name'] or t['name']} output {t['bytes']:,} B" for t in peak["tensors"])
    return (
        f"RAM peak: {peak['bytes']:,} B live at operator {peak['operator']} {peak['kind']} "
        f"({peak['layer_name']}), arena {peak['arena_bytes']:,} B; live: {live}"
    )
