"""``microcompiler bench MODEL --board B``: device time per inference and per operator (over RPC).

It takes the same path to the device as ``run --mode host-driven`` (commands/run.py).
"""

from __future__ import annotations

from microcompiler.analysis.analyze import analyze_library
from microcompiler.analysis.bench import DEVICE_MAX_TIMED_RUNS, bench_report, check_timed_runs
from microcompiler.commands.output import model_flash_split, print_bench
from microcompiler.commands.run import add_device_arguments, host_driven_session, prepare, progress
from microcompiler.errors import MicrocompilerError, printable
from microcompiler.report import check_report_path, write_report
from microcompiler.targets import HOST_DRIVEN

__all__ = ["DEVICE_MAX_TIMED_RUNS", "add_parser", "run"]  # the device's limit, read by the tests


def add_parser(sub) -> None:
    p = sub.add_parser(
        "bench",
        help="time a model and each of its operators on a board",
        description="Compile MODEL, build host-driven firmware for BOARD, start it, and measure on "
        "the device the time of a whole inference (NUMBER runs back to back, REPEAT "
        "times) and of each operator. Times are device timer ticks; the timer "
        "frequency is reported with them.",
    )
    add_device_arguments(p)
    p.add_argument("--number", type=int, default=10, help="runs per measurement (default: 10)")
    p.add_argument("--repeat", type=int, default=3, help="measurements of the whole model (default: 3)")
    p.add_argument("--html", metavar="FILE", help="also write the HTML report (the measured time per layer)")
    p.set_defaults(func=run)


def run(args) -> int:
    check_timed_runs(args.number, args.repeat)
    given = [args.model, *args.input, getattr(args, "tuning", None)]
    if args.html:
        check_report_path(args.html, given)
    job = prepare(args, HOST_DRIVEN)
    if len(job.steps) > 1:
        raise MicrocompilerError(
            f"bench times one input set, but {len(args.input)} --input files make "
            f"{len(job.steps)}; pass one .npy file per model input"
        )
    meta = job.meta
    with host_driven_session(job, args) as (built, session):
        with session.executor() as ex:
            ex(*job.inputs)  # warm up, and leave real data in every tensor
            progress(f"timing {meta.name}: {args.repeat} x {args.number} inferences, then each operator")
            whole = ex.time_inference(args.number, args.repeat)
            operators = ex.profile(args.number, 1)
        # read while the project is there (a temporary one goes with the session)
        split = model_flash_split(built, meta.name)
    analysis = analyze_library(job.library, None if job.board.is_host else job.board)
    report = bench_report(meta, job.board, whole, operators, analysis, args.number, args.repeat)
    if built is not None:  # the firmware's flash and RAM (its ELF); the model's code and weights apart
        report.update(flash_bytes=built.flash_bytes, ram_bytes=built.ram_bytes, **split)
    if args.html:
        write_report(
            args.html, f"{meta.name}: bench on {job.board.name}", inputs=given, analysis=analysis, bench=report
        )
    print_bench(report, args.json)
    if args.html and not args.json:
        print(f"report: {printable(args.html)}")
    return 0
