"""``microcompiler tune MODEL --board B``: time each operator's candidates on the device, write a tuning log.

docs/tuning.md. The log is applied with ``compile/run/bench/create-project --tuning LOG``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from microcompiler.boards import resolve_board
from microcompiler.codegen.model_info import TensorInfo
from microcompiler.commands.arguments import add_zephyr_base_argument, positive_int, positive_seconds, zephyr_base_of
from microcompiler.errors import MicrocompilerError
from microcompiler.inputs import load_inputs, random_inputs
from microcompiler.progress import Progress, log_line
from microcompiler.report.provenance import with_provenance
from microcompiler.targets import HOST_DRIVEN, RPC_TIMEOUT, target_for
from microcompiler.timing import describe, measured
from microcompiler.tuning.log import TuningLog, TuningLogError, load_tuning
from microcompiler.tuning.runner import JobRunner, LocalRunner
from microcompiler.tuning.tuner import job_count, plan_model, require_tunable, tune

# The firmware each round builds: a host-driven project of one of these templates.
TEMPLATES = ("baremetal", "zephyr")
RUNNERS = ("local", "ray")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "tune",
        help="autotune a model's kernels on a board and write a tuning log",
        description="Build MODEL once per round of candidate kernel variants and knobs, run each "
        "build host-driven on BOARD, check every operator against TFLite Micro and "
        "time it, and write the fastest bit-exact setting per operator signature and "
        "CPU to a tuning log (docs/tuning.md). Apply it with --tuning LOG.",
    )
    p.add_argument("model", help="the .tflite file")
    p.add_argument("--board", required=True, help="board name (emulated boards: 'microcompiler boards')")
    add_zephyr_base_argument(p)
    p.add_argument("--port", help="serial port of a real board (not supported yet: each round loads new firmware)")
    p.add_argument(
        "--template",
        choices=TEMPLATES,
        default="baremetal",
        help="the firmware each round builds: bare metal (default) or Zephyr (docs/zephyr.md; the tuning log is "
        "keyed by CPU, so both give the same knobs where their timings agree)",
    )
    p.add_argument(
        "--jobs",
        type=positive_int("--jobs"),
        default=1,
        help="devices measuring at once (QEMU instances, or Ray jobs in flight; default: 1)",
    )
    p.add_argument(
        "--runner",
        choices=RUNNERS,
        default="local",
        help="where the jobs run: 'local' (this computer) or 'ray' (a Ray cluster whose nodes declare "
        "their boards as resources, docs/tuning.md; needs 'pip install microcompiler[ray]')",
    )
    p.add_argument(
        "--address",
        metavar="ADDR",
        help="with --runner ray: the cluster to join ('auto', or the head "
        "node's HOST:PORT); default: start a local one",
    )
    p.add_argument(
        "--output",
        metavar="LOG",
        help="the tuning log to write (default: MODEL_BOARD.tuning.json here); replaced only if it is a tuning log",
    )
    p.add_argument(
        "--tuning",
        metavar="LOG",
        help="an existing tuning log: its operators are reused, not "
        "measured again, and its entries carried into --output",
    )
    p.add_argument("--number", type=positive_int("--number"), default=10, help="runs per operator timing (default: 10)")
    p.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="X.npy",
        help="the input the operators are checked and timed on (default: seeded random)",
    )
    p.add_argument(
        "--rpc-timeout",
        type=positive_seconds("--rpc-timeout"),
        default=RPC_TIMEOUT,
        metavar="SECONDS",
        help=f"seconds to wait for the device to answer (default: {RPC_TIMEOUT:g})",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _runner(args, board) -> JobRunner:
    if args.runner == "ray":
        from microcompiler.tuning.ray_runner import RayRunner  # Ray is optional: imported only when asked for

        return RayRunner(board.name, args.jobs, address=args.address)
    return LocalRunner(args.jobs)


def _output_path(args) -> Path:
    path = Path(args.output) if args.output else Path(f"{Path(args.model).stem}_{args.board}.tuning.json")
    if path.exists():
        try:
            TuningLog.load(path)
        except TuningLogError:
            raise MicrocompilerError(f"{path} exists and is not a tuning log; give another --output") from None
    return path


def run(args) -> int:
    if args.address is not None and args.runner != "ray":
        raise MicrocompilerError("--address names a Ray cluster; add --runner ray, or leave --address out")
    board = resolve_board(args.board, zephyr_base_of(args))
    require_tunable(board, args.port)
    target = target_for(board, args.template)
    target.check_run(mode=HOST_DRIVEN, keep=None, port=args.port)
    target.check_board(board)
    previous = load_tuning(args.tuning)
    out = _output_path(args)
    started = time.monotonic()
    graph, groups = plan_model(args.model, board, previous)
    meta_inputs = [  # the model's inputs before any library is compiled: what the inputs need of them
        TensorInfo(graph.tensors[t].name, "", graph.tensors[t].shape, graph.tensors[t].dtype, graph.tensors[t].nbytes)
        for t in graph.inputs
    ]
    inputs = load_inputs(args.input, meta_inputs) if args.input else random_inputs(meta_inputs)
    total = job_count(groups)
    with _runner(args, board) as runner:  # a Ray cluster is joined (or refused) before anything is built
        where = "" if args.runner == "local" else " on the Ray cluster"
        log_line(
            f"tuning {Path(args.model).name} on {board.name}: {sum(len(g.indices) for g in groups)} "
            f"operators, {len(groups)} signatures, {total} builds, {args.jobs} at once{where}"
        )
        with Progress(total, "tuning") as bar:
            result = tune(
                args.model,
                board,
                runner,
                inputs,
                previous=previous,
                template=args.template,
                number=args.number,
                step=bar.step,
                plan=(graph, groups),
            )
    result.log.save(out)
    report = _report(args, board, result, out, time.monotonic() - started)
    for note in result.notes:
        log_line(f"note: {note}")
    if args.json:
        print(json.dumps(with_provenance(report), indent=1))
    else:
        _print(report)
    return 0


def _report(args, board, result, out: Path, seconds: float) -> dict:
    rows = [
        {
            "kind": g.kind,
            "operators": g.indices,
            "status": g.status,
            "knobs": g.knobs,
            "candidates": len(g.candidates),
            "heuristic_ticks": g.results[0]["ticks"] if g.results else None,
            "ticks": g.chosen_ticks(),
        }
        for g in result.groups
    ]
    return {
        "model": Path(args.model).name,
        "board": board.name,
        "log": str(out),
        "seconds": round(seconds, 1),
        "timer_hz": result.timer_hz,
        "heuristic_ticks": result.heuristic_ticks,
        "tuned_ticks": result.tuned_ticks,
        "exact": result.exact,
        "tuned": sum(r["status"] == "tuned" for r in rows),
        "reused": sum(r["status"] == "reused" for r in rows),
        "signatures": rows,
        "heuristic_time": _time(result.heuristic_ticks, result.timer_hz, board),
        "tuned_time": _time(result.tuned_ticks, result.timer_hz, board),
    }


def _time(ticks, hz, board) -> dict | None:
    """A whole inference in the shared vocabulary (instructions at the board's clock, microcompiler/timing.py)."""
    return None if ticks is None or not hz else measured(ticks, hz, board)


def _print(report: dict) -> None:
    print(f"  {'operator':<20} {'indices':<12} {'status':<16} {'setting':<20} heuristic -> tuned ticks")
    for r in report["signatures"]:
        ops = ",".join(str(i) for i in r["operators"])
        knobs = json.dumps(r["knobs"]) if r["knobs"] else "heuristic"
        timing = f"  {r['heuristic_ticks']} -> {r['ticks']} ticks" if r["status"] == "tuned" else ""
        print(f"  {r['kind']:<20} op {ops:<12} {r['status']:<16} {knobs}{timing}")
    timing = (
        "nothing measured"
        if report["heuristic_time"] is None
        else f"inference {describe(report['heuristic_time'])} -> {describe(report['tuned_time'])}, bit-exact: "
        f"{'yes' if report['exact'] else 'NO'}"
    )
    print(
        f"tuned {report['tuned']} signatures, reused {report['reused']}; {timing}; {report['seconds']} s -> "
        f"{report['log']}"
    )
