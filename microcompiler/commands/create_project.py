"""``microcompiler create-project MODEL --template T --board B -o DIR``: write a firmware project."""

from __future__ import annotations

import shlex

from microcompiler.boards import load_board
from microcompiler.commands.arguments import (
    add_tuning_argument,
    add_zephyr_base_argument,
    ram_budget,
    tuning_for,
    zephyr_base_of,
)
from microcompiler.compiler import compile_model
from microcompiler.errors import MicrocompilerError
from microcompiler.targets import (
    DEFAULT_STACK_BYTES,
    EXECUTORS,
    MODES,
    create_models_project,
    create_project,
    templates,
)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "create-project",
        help="write a firmware project (CMake + Ninja) for a board",
        description="Compile MODEL for BOARD and write a self-contained firmware project to DIR: "
        "the model library, the runtime, a standalone main() that runs the model on "
        "a fixed input and prints its outputs and time, a linker script and a CMake "
        "build. Refuses models that do not fit the board.",
    )
    p.add_argument("model", nargs="?", help="the .tflite file (or give several with --model)")
    p.add_argument(
        "--model",
        dest="models",
        action="append",
        default=[],
        metavar="MODEL",
        help="a .tflite file; repeat for a firmware that runs several models (docs/multiple_models.md)",
    )
    p.add_argument(
        "--name",
        dest="names",
        action="append",
        default=[],
        metavar="NAME",
        help="the C name prefix of each model, once per model in the same order (default: from the "
        "file name); names must differ and none may be a prefix of another followed by '_'",
    )
    p.add_argument(
        "--share-arena",
        action="store_true",
        help="several models: one activation arena as large as the largest model's instead of one each "
        "(the models run one after the other; refused with --concurrent, host-driven mode or "
        "models that keep state)",
    )
    p.add_argument(
        "--concurrent",
        action="store_true",
        help="several models: they may run at the same time (e.g. from two threads), so each keeps "
        "its own arena; --share-arena is then refused",
    )
    p.add_argument(
        "--template", default="baremetal", help=f"project template: {', '.join(templates())} (default: baremetal)"
    )
    p.add_argument("--board", required=True, help="board name (see 'microcompiler boards')")
    add_zephyr_base_argument(p)
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="DIR",
        help="project directory: new, empty, or a project created before (only the files "
        "microcompiler wrote there are replaced; anything else is refused)",
    )
    p.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="aot",
        help="aot: the generated <model>_run(); graph: the on-device graph executor (default: aot)",
    )
    p.add_argument(
        "--input",
        action="append",
        default=None,
        metavar="X.npy",
        help="the input compiled into the firmware, one .npy per model input (default: a fixed seeded random input)",
    )
    p.add_argument(
        "--mode",
        choices=MODES,
        default="standalone",
        help="standalone: main() runs the model on the fixed input and prints a report (default); "
        "host-driven: main() is the RPC server (docs/rpc.md)",
    )
    p.add_argument(
        "--stack-bytes",
        type=int,
        default=None,
        metavar="N",
        help=f"size of the stack (default: {DEFAULT_STACK_BYTES} for baremetal; sized for the model on zephyr)",
    )
    p.add_argument(
        "--benchmark",
        choices=("kws01", "ic01", "vww01", "ad01"),
        default=None,
        help="with --template mlperf or mlperf-zephyr: the MLPerf Tiny benchmark the firmware serves (docs/mlperf.md)",
    )
    add_tuning_argument(p)
    add_zephyr_base_argument(p)
    p.set_defaults(func=run)


def run(args) -> int:
    models = ([args.model] if args.model else []) + args.models
    if not models:
        raise MicrocompilerError(
            "give the model: microcompiler create-project MODEL.tflite ... (or --model A --model B for several)"
        )
    if len(models) > 1 or args.share_arena or args.concurrent:
        return _run_models(args, models)
    if args.names and len(args.names) > 1:
        raise MicrocompilerError(f"one model but {len(args.names)} --name options; give one --name per model")
    options = {"benchmark": args.benchmark} if args.benchmark is not None else {}
    if args.zephyr_base is not None:  # recorded in the project: build and flash use it
        options["zephyr_base"] = args.zephyr_base
    board = load_board(args.board, zephyr_base_of(args))
    model = models[0]
    # compiled here: under its given C name, with the tuning log, the patch grid and the board's RAM budget
    model = compile_model(
        model,
        features=board.cpu.features,
        name=args.names[0] if args.names else None,
        tuning=tuning_for(args, board.cpu),
        patches=args.patches,
        **ram_budget(args, board, args.stack_bytes),
    )
    project = create_project(
        model,
        args.template,
        board,
        args.output,
        executor=args.executor,
        input=args.input,
        stack_bytes=args.stack_bytes,
        mode=args.mode,
        **options,
    )
    meta = project.info
    print(
        f"created {project.dir}: {meta.name} on {project.board.name} ({project.executor} executor, "
        f"weights {meta.params_bytes:,} B, arena {meta.arena_bytes:,} B); "
        f"build it with: microcompiler build {shlex.quote(args.output)}"
    )
    return 0


def _run_models(args, models: list[str]) -> int:
    """Several models in one firmware (microcompiler/targets/multi.py)."""
    if len(models) < 2:
        raise MicrocompilerError(
            "--share-arena and --concurrent are for several models: give at least two (--model A --model B)"
        )
    if args.ram_limit:
        raise MicrocompilerError(
            "--ram-limit with several models is not supported yet; create the project of one "
            "model with --ram-limit, or drop the option"
        )
    if args.tuning:
        raise MicrocompilerError(
            "--tuning with several models is not supported yet; create the project of one "
            "model with --tuning, or drop the option"
        )
    if args.input or args.benchmark:
        raise MicrocompilerError(
            f"--{'input' if args.input else 'benchmark'} takes one model; with several, each "
            "runs on a fixed seeded random input (drop the option)"
        )
    project = create_models_project(
        models,
        args.template,
        load_board(args.board, zephyr_base_of(args)),
        args.output,
        names=args.names or None,
        executor=args.executor,
        mode=args.mode,
        stack_bytes=args.stack_bytes,
        share_arena=args.share_arena,
        concurrent=args.concurrent,
    )
    arenas = ", ".join(f"{m.name} {m.arena_bytes:,} B" for m in project.model_infos)
    shared = "one shared arena" if project.share_arena else "one arena each"
    print(
        f"created {project.dir}: models {', '.join(m.name for m in project.model_infos)} on {project.board.name} "
        f"({project.executor} executor, {shared}: {arenas}); build it with: "
        f"microcompiler build {shlex.quote(args.output)}"
    )
    return 0
