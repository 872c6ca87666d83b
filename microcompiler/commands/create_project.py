"""``microcompiler create-project MODEL --template T --board B -o DIR``: write a firmware project."""
from __future__ import annotations

import shlex

from microcompiler.boards import load_board
from microcompiler.commands.arguments import add_tuning_argument, tuning_for
from microcompiler.compiler import compile_model
from microcompiler.targets import DEFAULT_STACK_BYTES, EXECUTORS, MODES, create_project, templates


def add_parser(sub) -> None:
    p = sub.add_parser("create-project", help="write a firmware project (CMake + Ninja) for a board",
                       description="Compile MODEL for BOARD and write a self-contained firmware project to DIR: "
                                   "the model library, the runtime, a standalone main() that runs the model on "
                                   "a fixed input and prints its outputs and time, a linker script and a CMake "
                                   "build. Refuses models that do not fit the board.")
    p.add_argument("model", help="the .tflite file")
    p.add_argument("--template", default="baremetal",
                   help=f"project template: {', '.join(templates())} (default: baremetal)")
    p.add_argument("--board", required=True, help="board name (see 'microcompiler boards')")
    p.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="project directory: new, empty, or a project created before (only the files "
                        "microcompiler wrote there are replaced; anything else is refused)")
    p.add_argument("--executor", choices=EXECUTORS, default="aot",
                   help="aot: the generated <model>_run(); graph: the on-device graph executor (default: aot)")
    p.add_argument("--input", action="append", default=None, metavar="X.npy",
                   help="the input compiled into the firmware, one .npy per model input "
                        "(default: a fixed seeded random input)")
    p.add_argument("--mode", choices=MODES, default="standalone",
                   help="standalone: main() runs the model on the fixed input and prints a report (default); "
                        "host-driven: main() is the RPC server (docs/rpc.md)")
    p.add_argument("--stack-bytes", type=int, default=None, metavar="N",
                   help=f"size of the stack (default: {DEFAULT_STACK_BYTES} for baremetal; sized for the model "
                        "on zephyr)")
    p.add_argument("--benchmark", choices=("kws01", "ic01", "vww01", "ad01"), default=None,
                   help="with --template mlperf or mlperf-zephyr: the MLPerf Tiny benchmark the firmware serves (docs/mlperf.md)")
    add_tuning_argument(p)
    p.set_defaults(func=run)


def run(args) -> int:
    options = {"benchmark": args.benchmark} if args.benchmark is not None else {}
    board = load_board(args.board)
    model = args.model
    if args.tuning:
        model = compile_model(args.model, features=board.cpu.features, tuning=tuning_for(args, board.cpu))
    project = create_project(model, args.template, board, args.output, executor=args.executor,
                             input=args.input, stack_bytes=args.stack_bytes, mode=args.mode, **options)
    meta = project.metadata
    print(f"created {project.dir}: {meta['name']} on {project.board.name} ({project.executor} executor, "
          f"weights {meta['params_bytes']:,} B, arena {meta['arena_bytes']:,} B); "
          f"build it with: microcompiler build {shlex.quote(args.output)}")
    return 0
