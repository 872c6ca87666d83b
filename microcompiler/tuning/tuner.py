"""The tuner: pick, per operator signature, the fastest knob setting that is bit-exact on the device.

1. Compile the model's graph; each operator's candidates come from its kernel
   (:mod:`~microcompiler.tuning.candidates`); operators are grouped by signature (identical layers
   are tuned once). Signatures already in the log given with ``--tuning`` are reused, not measured.
2. Round r builds the model with every group's r-th candidate (round 0 is the heuristic: every
   operator as ``compile`` picks it) and measures it (:mod:`~microcompiler.tuning.measure`): each
   operator checked against the oracle and timed. The rounds are independent jobs, run by a
   :class:`~microcompiler.tuning.runner.JobRunner` (``--jobs N`` devices at once).
3. Per group, the fastest candidate whose every instance was exact wins; the heuristic's setting
   is always a candidate and a tie keeps it. A last job builds the tuned model, checks it whole and
   times it: if it is not exact or slower than the heuristic, the new choices are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from microcompiler.boards import Board
from microcompiler.compiler import run_passes
from microcompiler.errors import MicrocompilerError
from microcompiler.frontend.tflite import load_tflite
from microcompiler.tuning.candidates import operator_candidates
from microcompiler.tuning.log import TuningLog
from microcompiler.tuning.measure import MeasureJob, measure
from microcompiler.tuning.runner import JobRunner
from microcompiler.tuning.signature import cpu_key, operator_signature, signature_key


@dataclass
class Group:
    """Operators of one signature: tuned together (a candidate wins only if exact on every one)."""

    signature: dict
    kind: str
    indices: list[int]
    candidates: list[dict]
    status: str = "tuned"  # tuned | reused | nothing to tune
    knobs: dict = field(default_factory=dict)
    results: list[dict] = field(default_factory=list)  # per candidate: knobs, ticks, exact

    def chosen_ticks(self) -> int | None:
        return next((r["ticks"] for r in self.results if r["knobs"] == self.knobs), None)


@dataclass
class TuneResult:
    log: TuningLog
    groups: list[Group]
    heuristic_ticks: int | None
    tuned_ticks: int | None
    timer_hz: int | None
    exact: bool
    notes: list[str] = field(default_factory=list)


def oracle_tensors(model: str | Path, graph, inputs) -> dict:
    """The TFLite Micro interpreter's tensors after ``inputs``, for every operator output of ``graph``.
    An ONNX model's oracle is ONNX Runtime, whose intermediate values have no counterpart in the IR: its
    outputs only (the operators before them are checked through them)."""
    from microcompiler.validation.onnx_reference import OnnxReference, onnx_model
    from microcompiler.validation.reference import Reference

    if onnx_model(model, Path(model).read_bytes()[:8]) is not None:
        results = OnnxReference(model, len(graph.outputs)).run(inputs)
        return {t: r.reshape(graph.tensors[t].shape) for t, r in zip(graph.outputs, results)}

    with Reference(Path(model).read_bytes(), len(graph.outputs), what=str(model), preserve=True) as reference:
        reference.run(inputs)
        count = len(load_tflite(model).tensors)  # the tensors a pass made (patch buffers) have no counterpart
        wanted = {t for op in graph.operators for t in op.outputs if 0 <= t < count}
        return {t: reference.tensor(t) for t in sorted(wanted)}


def plan_groups(graph, board: Board, previous: TuningLog | None) -> list[Group]:
    groups: dict[str, Group] = {}
    cpu = cpu_key(board.cpu)
    for op in graph.operators:
        signature = operator_signature(op, graph)
        key = signature_key(signature)
        if key in groups:
            groups[key].indices.append(op.index)
            continue
        candidates = operator_candidates(op, graph, board.cpu.features)
        group = Group(signature, op.kind, [op.index], candidates)
        entry = previous.lookup(cpu, signature) if previous is not None else None
        if entry is not None:
            group.status, group.knobs = "reused", dict(entry["knobs"])
        elif len(candidates) < 2:
            group.status = "nothing to tune"
        groups[key] = group
    return list(groups.values())


def _round_tuning(groups: list[Group], r: int) -> dict:
    tuning = {}
    for g in groups:
        knobs = g.candidates[r] if g.status == "tuned" and r < len(g.candidates) else g.knobs
        for index in g.indices:
            if knobs:
                tuning[index] = knobs
    return tuning


def _choose(group: Group, rounds: list[dict]) -> None:
    """Fill group.results from the rounds' measurements and pick the winner (ties keep the heuristic)."""
    for r, knobs in enumerate(group.candidates):
        ops = {o["index"]: o for o in rounds[r]["operators"]}
        mine = [ops[i] for i in group.indices if i in ops]
        exact = bool(mine) and all(o["exact"] is True for o in mine)
        group.results.append(
            {
                "knobs": knobs,
                "ticks": round(sum(o["ticks"] for o in mine), 1),
                "exact": exact,
                "variant": mine[0]["variant"] if mine else None,
            }
        )
    best = group.results[0]
    for result in group.results[1:]:
        if result["exact"] and result["ticks"] < best["ticks"]:
            best = result
    group.knobs = dict(best["knobs"])


def tune(
    model: str | Path,
    board: Board,
    runner: JobRunner,
    inputs,
    *,
    previous: TuningLog | None = None,
    template: str = "baremetal",
    number: int = 10,
    step=lambda note: None,
    plan: tuple | None = None,
) -> TuneResult:
    """Tune ``model`` for ``board``; ``previous``'s entries for this CPU are reused and carried over.
    ``plan``: (graph, groups) from :func:`plan_model`. ``step(note)`` is called after each finished
    job (:func:`job_count` of them)."""
    graph, groups = plan if plan is not None else plan_model(model, board, previous)
    carried = TuningLog(list(previous.entries.values()) if previous is not None else [])
    if not any(g.status == "tuned" for g in groups):  # everything reused or fixed: nothing to measure
        return TuneResult(carried, groups, None, None, None, True, ["nothing left to measure"])
    expected = oracle_tensors(model, graph, inputs)
    rounds = max([len(g.candidates) for g in groups if g.status == "tuned"], default=1)
    model_bytes = Path(model).read_bytes()

    def job(r: int | None, tuning: dict, label: str) -> MeasureJob:
        return MeasureJob(
            model=str(model),
            board=board.name,
            tuning=tuning,
            inputs=list(inputs),
            expected=expected,
            label=label,
            template=template,
            number=number,
            whole=r in (0, None),
            model_bytes=model_bytes,
        )

    jobs = [job(r, _round_tuning(groups, r), f"round {r + 1}/{rounds}") for r in range(rounds)]
    measured: list[dict | None] = [None] * rounds
    for k, result in runner.run(measure, jobs):
        measured[k] = result
        step(result["label"])
    heuristic = measured[0]
    for g in groups:
        if g.status == "tuned":
            _choose(g, measured)
    [(_, final)] = list(runner.run(measure, [job(None, _round_tuning(groups, rounds), "tuned model")]))
    step("tuned model")
    exact = all(o["exact"] is True for o in final["operators"])
    notes = []
    if not all(o["exact"] is True for o in heuristic["operators"]):
        notes.append("the heuristic build differs from the oracle (a compiler bug: run 'microcompiler validate')")
    if not exact or final["whole_ticks"] > heuristic["whole_ticks"]:
        notes.append(
            "the tuned model was "
            + ("not bit-exact" if not exact else "slower than the heuristic")
            + "; its new choices were dropped"
        )
        for g in groups:
            if g.status == "tuned":
                g.knobs = {}
        final, exact = heuristic, all(o["exact"] is True for o in heuristic["operators"])
    out = carried
    cpu = cpu_key(board.cpu)
    for g in groups:
        if g.status == "tuned":
            out.add(
                {
                    "cpu": cpu,
                    "signature": g.signature,
                    "knobs": g.knobs,
                    "ticks": g.chosen_ticks(),
                    "heuristic_ticks": g.results[0]["ticks"],
                    "timer_hz": heuristic["timer_hz"],
                    "board": board.name,
                    "model": Path(model).name,
                    "operators": len(g.indices),
                    "candidates": g.results,
                }
            )
    return TuneResult(out, groups, heuristic["whole_ticks"], final["whole_ticks"], heuristic["timer_hz"], exact, notes)


def plan_model(model: str | Path, board: Board, previous: TuningLog | None = None) -> tuple:
    """(planned graph, groups): what :func:`tune` measures."""
    graph = run_passes(load_tflite(model))
    return graph, plan_groups(graph, board, previous)


def job_count(groups: list[Group]) -> int:
    """The jobs :func:`tune` runs: one per round, and the tuned model (none if nothing is left to tune)."""
    if not any(g.status == "tuned" for g in groups):
        return 0
    return 1 + max([len(g.candidates) for g in groups if g.status == "tuned"], default=1)


def require_tunable(board: Board, port: str | None) -> None:
    """Each round needs its own firmware: only boards microcompiler loads itself can be tuned."""
    if port is not None or not (board.emulated or board.is_host):
        raise MicrocompilerError(
            f"tuning loads one firmware per round and loading {board.name} is not supported "
            "yet (a hardware board runs what you flashed); tune on the emulated board with "
            "the same CPU (e.g. mps2_an386 for a Cortex-M4), the log is keyed by CPU"
        )
