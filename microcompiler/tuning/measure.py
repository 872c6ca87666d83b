"""One measurement job: build a model with given knobs, run it on the device, check and time each operator.

The job is plain data (picklable), so any :class:`~microcompiler.tuning.runner.JobRunner` can ship
it to a worker. On the device (host-driven firmware over RPC, docs/rpc.md) the operators run one by
one from the job's input; after each, its output tensors are read back and compared with the
oracle's tensors of the same index (the TFLite Micro interpreter's, computed once by the tuner):
integers bit for bit, floats within the validation tolerance. From the first operator that differs
on, operators are "unchecked" (their inputs are no longer the oracle's). Then each operator is
timed alone (``number`` back-to-back runs, device timer ticks) and, if asked, the whole inference.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from microcompiler import cleanup
from microcompiler.boards import resolve_board
from microcompiler.compiler import compile_model
from microcompiler.targets import RPC_TIMEOUT
from microcompiler.targets.base import quiet, start_on_board
from microcompiler.validation.layers import INTEGER_DTYPES, last_writers
from microcompiler.validation.metrics import within_tolerance


@dataclass
class MeasureJob:
    model: str  # the .tflite file's name (its path where the job was made; the worker uses model_bytes)
    board: str
    tuning: dict  # compile_model's tuning: {operator index: knobs}
    inputs: list  # the model's input arrays
    expected: dict  # the oracle's tensors after those inputs: {tensor index: array}
    label: str = ""
    template: str = "baremetal"
    number: int = 10  # runs per timing
    whole: bool = False  # also time the whole inference (<model>_run)
    rpc_timeout: float = RPC_TIMEOUT
    call_timeout: float = 120.0
    options: dict = field(default_factory=dict)
    model_bytes: bytes | None = None  # the .tflite file itself: the job needs no path shared with the worker


def _matches(ours: np.ndarray, theirs: np.ndarray, dtype: str) -> bool:
    theirs = theirs.reshape(ours.shape)
    return bool(np.array_equal(ours, theirs)) if dtype in INTEGER_DTYPES else within_tolerance(ours, theirs)


def check_operators(ex, library, job: MeasureJob) -> list[bool | None]:
    """Per operator: True (outputs equal the oracle's), False (differ), None (unchecked)."""
    graph = library.graph
    for k, x in enumerate(job.inputs):
        ex.set_input(k, x)
    verdicts: list[bool | None] = []
    diverged = False
    last_writer = last_writers(library.functions)
    for k, fn in enumerate(library.functions):
        ex.run_operator(k)
        if diverged:
            verdicts.append(None)
            continue
        same = True
        for t in fn.op.outputs:
            position = next((p for p, (_, _, u) in enumerate(fn.params) if graph.storage(u) == graph.storage(t)), None)
            if position is None or t not in job.expected or last_writer[t] != k:
                continue
            tensor = graph.tensors[t]
            ours = ex.read_argument(k, position, tensor.dtype, tensor.shape)
            same = same and _matches(ours, job.expected[t], tensor.dtype)
        verdicts.append(same)
        diverged = not same
    return verdicts


def measure(job: MeasureJob) -> dict:
    """Build, start, check and time; the device and its project are gone when this returns."""
    board = resolve_board(job.board)
    work = cleanup.temp_dir("microcompiler-tune-")
    try:
        model: str | Path = job.model
        if job.model_bytes is not None:
            name = Path(job.model).name
            copy = work / (name if name.endswith(".tflite") else "model.tflite")
            copy.write_bytes(job.model_bytes)
            model = copy
        library = compile_model(model, features=board.cpu.features, tuning=job.tuning)
        _, _, session = start_on_board(
            library,
            board,
            work / "project",
            template=job.template,
            log=quiet,
            timeout=job.rpc_timeout,
            call_timeout=job.call_timeout,
        )
        with session:
            with session.executor() as ex:
                verdicts = check_operators(ex, library, job)
                timings = [ex.time_operator(k, job.number) for k in range(len(library.functions))]
                whole = _per_run(ex.time_inference(job.number, 1)) if job.whole else None
    finally:
        cleanup.remove_dir(work)
    ops = [
        {
            "index": fn.op.index,
            "ticks": _per_run(timing),
            "exact": verdict,
            "variant": fn.plan.variant.name,
        }
        for fn, timing, verdict in zip(library.functions, timings, verdicts)
    ]
    return {
        "label": job.label,
        "operators": ops,
        "whole_ticks": whole,
        "timer_hz": timings[0].timer_hz if timings else None,
    }


def _per_run(result) -> float:
    """Timer ticks per run, to a tenth (the device timer is coarse: the total of the runs keeps the detail)."""
    return round(sum(result.ticks) / (result.number * len(result.ticks)), 1)
