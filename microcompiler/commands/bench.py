"""``microcompiler bench MODEL --board B``: device time per inference and per operator (over RPC).

It takes the same path to the device as ``run --mode host-driven`` (commands/run.py).
"""
from __future__ import annotations

from microcompiler.analysis.analyze import analyze_library
from microcompiler.commands.output import model_flash_split, print_bench
from microcompiler.commands.run import add_device_arguments, host_driven_session, prepare, progress
from microcompiler.errors import MicrocompilerError, printable
from microcompiler.report import check_report_path, write_report
from microcompiler.targets import HOST_DRIVEN
from microcompiler.timing import measured, relative_error

# The most runs one TIME request may ask of the device: MC_RPC_MAX_TIMED_RUNS in
# crt/include/microcompiler/rpc_server.h (the firmware microcompiler builds uses the default).
DEVICE_MAX_TIMED_RUNS = 1_000_000


def add_parser(sub) -> None:
    p = sub.add_parser("bench", help="time a model and each of its operators on a board",
                       description="Compile MODEL, build host-driven firmware for BOARD, start it, and measure on "
                                   "the device the time of a whole inference (NUMBER runs back to back, REPEAT "
                                   "times) and of each operator. Times are device timer ticks; the timer "
                                   "frequency is reported with them.")
    add_device_arguments(p)
    p.add_argument("--number", type=int, default=10, help="runs per measurement (default: 10)")
    p.add_argument("--repeat", type=int, default=3, help="measurements of the whole model (default: 3)")
    p.add_argument("--html", metavar="FILE", help="also write the HTML report (the measured time per layer)")
    p.set_defaults(func=run)


def bench_report(meta: dict, board, whole, operators: list[dict], analysis: dict, number: int,
                 repeat: int) -> dict:
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
    inference = {"ticks": whole.median_ticks, "seconds": whole.median_ticks / hz,
                 "ticks_per_run_each_repeat": [t // number for t in whole.ticks],
                 "time": measured(whole.median_ticks, hz, board),
                 "estimated_instructions": analysis["totals"]["estimated_instructions"]}
    if inference["time"]["instructions"] is not None:
        inference["estimate_error"] = relative_error(inference["estimated_instructions"],
                                                     inference["time"]["instructions"])
    total = sum(op["ticks"] for op in operators)
    return {"model": meta["name"], "board": board.name, "timer_hz": hz, "number": number, "repeat": repeat,
            "inference": inference, "operators": operators, "operator_ticks_total": total,
            "operator_time": measured(total, hz, board), "total_macs": meta.get("total_macs"),
            "memory_peak": meta["memory_peak"]}


def run(args) -> int:
    if args.number > DEVICE_MAX_TIMED_RUNS:
        raise MicrocompilerError(f"--number {args.number} is more than the device runs in one measurement: its "
                                 f"limit is {DEVICE_MAX_TIMED_RUNS:,} (MC_RPC_MAX_TIMED_RUNS); use --number "
                                 f"{DEVICE_MAX_TIMED_RUNS} or less and raise --repeat instead")
    if args.number < 1 or args.repeat < 1:
        raise MicrocompilerError("--number and --repeat must be at least 1")
    given = [args.model, *args.input, getattr(args, "tuning", None)]
    if args.html:
        check_report_path(args.html, given)
    job = prepare(args, HOST_DRIVEN)
    if len(job.steps) > 1:
        raise MicrocompilerError(f"bench times one input set, but {len(args.input)} --input files make "
                                 f"{len(job.steps)}; pass one .npy file per model input")
    meta = job.meta
    with host_driven_session(job, args) as (built, session):
        with session.executor() as ex:
            ex(*job.inputs)  # warm up, and leave real data in every tensor
            progress(f"timing {meta['name']}: {args.repeat} x {args.number} inferences, then each operator")
            whole = ex.time_inference(args.number, args.repeat)
            operators = ex.profile(args.number, 1)
    analysis = analyze_library(job.library, None if job.board.is_host else job.board)
    report = bench_report(meta, job.board, whole, operators, analysis, args.number, args.repeat)
    if built is not None:  # the flash the model takes, its code and its weights apart
        report.update(flash_bytes=built.flash_bytes, **model_flash_split(built, meta["name"]))
    if args.html:
        write_report(args.html, f"{meta['name']}: bench on {job.board.name}", inputs=given, analysis=analysis,
                     bench=report)
    print_bench(report, args.json)
    if args.html and not args.json:
        print(f"report: {printable(args.html)}")
    return 0
