"""The host-driven parts of the command line: ``run --mode host-driven`` and ``bench``."""
from __future__ import annotations

import json
import sys

from microcompiler.boards import HOST, load_board
from microcompiler.commands.arguments import positive_seconds
from microcompiler.commands.run import print_outputs
from microcompiler.compiler import compile_model
from microcompiler.errors import MicrocompilerError
from microcompiler.inputs import load_inputs, random_inputs
from microcompiler.rpc.launch import open_model

DEFAULT_CALL_TIMEOUT = 300.0  # seconds one device function may run (Session.call_timeout)


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _open(args):
    board = None if args.board == HOST else load_board(args.board)  # unknown board: fail before compiling
    if getattr(args, "port", None) and board is None:
        raise MicrocompilerError("--port is for boards; --board host runs the RPC server as a local process")
    library = compile_model(args.model, features=board.cpu.features if board else frozenset())
    meta = library.metadata
    inputs = load_inputs(args.input, meta["inputs"]) if getattr(args, "input", None) else random_inputs(meta["inputs"])
    session = open_model(library, board or HOST, project_dir=getattr(args, "keep", None), port=args.port,
                         log=progress, timeout=args.rpc_timeout,
                         call_timeout=getattr(args, "timeout", None) or DEFAULT_CALL_TIMEOUT)
    return library, inputs, session


def run_host_driven(args) -> int:
    """Run the model once, operator by operator over RPC; print outputs like a standalone run."""
    library, inputs, session = _open(args)
    meta = library.metadata
    with session:
        for line in session.logs:
            progress(f"device: {line}")
        with session.executor() as ex:
            outputs = ex(*inputs)
            op_ticks = list(ex.last_ticks)
        hz = session.device.timer_hz
        stats = dict(session.stats)
    report = {"model": meta["name"], "board": args.board, "mode": "host-driven",
              "outputs": [out.tolist() for out in outputs],
              "output_dtypes": [o["dtype"] for o in meta["outputs"]],
              "device_ticks": sum(op_ticks), "timer_hz": hz, "operator_ticks": op_ticks,
              "arena_bytes": meta["arena_bytes"], "params_bytes": meta["params_bytes"], "rpc": stats}
    if args.json:
        print(json.dumps(report))
    else:
        print_outputs(outputs, meta)
        print(f"time on {args.board} (sum of {len(op_ticks)} operators, host-driven): {sum(op_ticks)} ticks "
              f"at {hz} Hz")
    return 0


def add_bench_parser(sub) -> None:
    p = sub.add_parser("bench", help="time a model and each of its operators on a board",
                       description="Compile MODEL, build host-driven firmware for BOARD, start it, and measure on "
                                   "the device the time of a whole inference (NUMBER runs back to back, REPEAT "
                                   "times) and of each operator. Times are device timer ticks; the timer "
                                   "frequency is reported with them.")
    p.add_argument("model", help="the .tflite file")
    p.add_argument("--board", default=HOST, help="board name (default: host; see 'microcompiler boards')")
    p.add_argument("--port", help="serial port of a real board already running this model's host-driven firmware")
    p.add_argument("--number", type=int, default=10, help="runs per measurement (default: 10)")
    p.add_argument("--repeat", type=int, default=3, help="measurements of the whole model (default: 3)")
    p.add_argument("--input", action="append", default=[], metavar="X.npy",
                   help="an input tensor as .npy (repeat for several inputs; default: seeded random)")
    p.add_argument("--keep", metavar="DIR", help="write the firmware project to DIR and keep it")
    p.add_argument("--rpc-timeout", type=positive_seconds("--rpc-timeout"), default=10.0, metavar="SECONDS",
                   help="seconds to wait for each device reply (default: 10)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=bench)


def bench(args) -> int:
    if args.number < 1 or args.repeat < 1:
        raise MicrocompilerError("--number and --repeat must be at least 1")
    library, inputs, session = _open(args)
    meta = library.metadata
    with session:
        with session.executor() as ex:
            ex(*inputs)  # warm up, and leave real data in every tensor
            progress(f"timing {meta['name']}: {args.repeat} x {args.number} inferences, then each operator")
            whole = ex.time_inference(args.number, args.repeat)
            operators = ex.profile(args.number, 1)
        hz = whole.timer_hz
    op_total = sum(op["ticks"] for op in operators)
    report = {"model": meta["name"], "board": args.board, "timer_hz": hz, "number": args.number,
              "repeat": args.repeat,
              "inference": {"ticks": whole.median_ticks, "seconds": whole.median_ticks / hz,
                            "ticks_per_run_each_repeat": [t // args.number for t in whole.ticks]},
              "operators": operators, "operator_ticks_total": op_total,
              "total_macs": meta.get("total_macs")}
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"{meta['name']} on {args.board}: {whole.median_ticks} ticks per inference "
          f"({whole.median_ticks / hz * 1e3:.3f} ms at {hz} Hz; median of {args.repeat} x {args.number} runs)")
    print(f"{'#':>3}  {'operator':<26} {'ticks':>12} {'ms':>10} {'share':>6}  layer")
    for op in operators:
        share = op["ticks"] / op_total * 100 if op_total else 0.0
        print(f"{op.get('index', ''):>3}  {str(op.get('kind', op['function'])):<26} {op['ticks']:>12} "
              f"{op['seconds'] * 1e3:>10.3f} {share:>5.1f}%  {op.get('layer', '')}")
    print(f"sum of operators: {op_total} ticks")
    return 0
