"""``microcompiler run MODEL --board B``: compile, build, run once and print the outputs.

``--board host`` (the default) builds for this computer. Any other board runs the whole firmware
flow: create a project (in a temporary directory, or ``--keep DIR``), build it, run it on the board
(QEMU for emulated boards) and decode the report.
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from microcompiler.boards import HOST, load_board
from microcompiler.commands.arguments import positive_seconds
from microcompiler.compiler import compile_model
from microcompiler.errors import MicrocompilerError
from microcompiler.inputs import load_inputs, random_inputs
from microcompiler.project import EXECUTORS, run_on_board

MODES = ["standalone", "host-driven"]


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="compile a model, run it on a board and print its outputs",
                       description="Compile MODEL, build it for BOARD, run it once and print the outputs. "
                                   "Without --input, a fixed seeded random input is used.")
    p.add_argument("model", help="the .tflite file")
    p.add_argument("--board", default=HOST, help="board name (default: host; see 'microcompiler boards')")
    p.add_argument("--mode", choices=MODES, default="standalone",
                   help="standalone: the firmware runs the model on an input compiled into it (default); "
                        "host-driven: the host runs the graph, each operator runs on the device over RPC")
    p.add_argument("--port", help="host-driven: serial port of a real board already running the model's "
                                  "host-driven firmware (emulated boards need none)")
    p.add_argument("--rpc-timeout", type=positive_seconds("--rpc-timeout"), default=10.0, metavar="SECONDS",
                   help="host-driven: seconds to wait for each device reply (default: 10)")
    p.add_argument("--template", choices=["baremetal", "zephyr"], default="baremetal",
                   help="boards: the firmware project template (default: baremetal; zephyr: docs/zephyr.md)")
    p.add_argument("--executor", choices=EXECUTORS, default="aot",
                   help="aot: the generated <model>_run(); graph: the graph executor (default: aot)")
    p.add_argument("--input", action="append", default=[], metavar="X.npy",
                   help="an input tensor as .npy (repeat for several inputs)")
    p.add_argument("--keep", metavar="DIR", help="write the firmware project to DIR and keep it (boards only)")
    p.add_argument("--timeout", type=positive_seconds("--timeout"), default=300.0,
                   help="seconds the run may take, on the host or a board (default: 300)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def print_outputs(outputs: list[np.ndarray], meta: dict) -> None:
    """The model's outputs, one block per output tensor, for people (not --json)."""
    for k, out in enumerate(outputs):
        print(f"output{k} {meta['outputs'][k]['dtype']}{list(out.shape)}:")
        print(np.array2string(out, threshold=64))


def _progress(line: str) -> None:
    print(line, file=sys.stderr)


def run(args) -> int:
    if args.template == "zephyr" and args.board != HOST:
        from microcompiler.zephyr import run_command
        return run_command(args)
    if args.mode == "host-driven":
        from microcompiler.rpc.cli import run_host_driven
        return run_host_driven(args)
    board = None if args.board == HOST else load_board(args.board)  # unknown board: fail before compiling
    if board is None and args.keep:
        raise MicrocompilerError("--keep writes a firmware project, for boards (or --mode host-driven); "
                                 "--board host builds in a temporary directory: use 'microcompiler compile' "
                                 "to keep the model library")
    library = compile_model(args.model, features=board.cpu.features if board else frozenset())
    meta = library.metadata
    inputs = load_inputs(args.input, meta["inputs"]) if args.input else random_inputs(meta["inputs"])
    report = {"model": meta["name"], "board": args.board, "mode": args.mode, "executor": args.executor}
    if board is None:
        from microcompiler.host import HostProgram
        with tempfile.TemporaryDirectory(prefix="microcompiler-") as tmp:
            result = HostProgram(library, Path(tmp), executor=args.executor).run([inputs], timeout=args.timeout)[0]
        outputs, ticks, hz = result.outputs, result.ticks, result.hz
    else:
        with tempfile.TemporaryDirectory(prefix="microcompiler-") as tmp:
            project_dir = Path(args.keep) if args.keep else Path(tmp) / "project"
            _, built, result = run_on_board(library, board, project_dir, executor=args.executor, input=inputs,
                                            log=_progress, timeout=args.timeout)
        outputs, ticks, hz = result.outputs, result.ticks, result.hz
        report.update(flash_bytes=built.flash_bytes, ram_bytes=built.ram_bytes, stack_bytes=result.stack_bytes)
    report.update({
        "outputs": [out.tolist() for out in outputs],
        "output_dtypes": [o["dtype"] for o in meta["outputs"]],
        "device_ticks": ticks, "timer_hz": hz,
        "arena_bytes": meta["arena_bytes"], "params_bytes": meta["params_bytes"],
    })
    if args.json:
        print(json.dumps(report))
    else:
        print_outputs(outputs, meta)
        print(f"time on {args.board}: {ticks} ticks at {hz} Hz")
        if board is not None:
            print(f"firmware: flash {report['flash_bytes']:,} B, RAM {report['ram_bytes']:,} B "
                  f"(stack high-water {report['stack_bytes']:,} B)")
    return 0
