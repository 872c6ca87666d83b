"""``microcompiler compile MODEL -o DIR``: write the model library."""

from __future__ import annotations

from pathlib import Path

from microcompiler.analysis.operators import missing, missing_error, needs_lines, operator_needs
from microcompiler.boards import HOST, load_board
from microcompiler.commands.arguments import (
    add_tuning_argument,
    add_zephyr_base_argument,
    ram_budget,
    tuning_for,
    zephyr_base_of,
)
from microcompiler.compiler import KERNEL_CHOICES, MAX_NAME_LENGTH, SHARED_ARENA, compile_model, write_atomically
from microcompiler.errors import MicrocompilerError, printable


def check_operators(model: str, only_if_missing: bool = False) -> bool:
    """Print every operator kind ``model`` uses and why any is not supported (with ``only_if_missing``,
    print nothing when all are); raise the one-line error if any is missing, else return False."""
    needs = operator_needs(model)
    if missing(needs) or not only_if_missing:
        print("\n".join(needs_lines(Path(model).name, needs)))
    if missing(needs):
        raise missing_error(needs)
    return False


def add_parser(sub) -> None:
    p = sub.add_parser(
        "compile",
        help="compile a .tflite model into a C model library",
        description="Compile MODEL into DIR/src/*.c, DIR/include/*.h and DIR/metadata.json.",
    )
    p.add_argument("model", help="the .tflite file")
    p.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="output directory: new, empty, or a model library compiled before (only the files "
        "that compile wrote are replaced; anything else is refused)",
    )
    p.add_argument(
        "--name",
        help=f"C name prefix: a C identifier of at most {MAX_NAME_LENGTH} characters (default: from "
        "the model file name)",
    )
    p.add_argument(
        "--board",
        help="compile for this board's CPU (its fast kernels, e.g. the DSP extension's "
        "SIMD on mps2_an386); default: portable C for any target ('microcompiler boards' lists them; "
        "any Zephyr board target too: 'microcompiler boards --zephyr')",
    )
    add_zephyr_base_argument(p)
    p.add_argument(
        "--kernels",
        choices=KERNEL_CHOICES,
        default="fast",
        help="fast (default): the fastest kernel for the target; reference: every layer as its plain "
        "reference loop nest, to read or diff against the fast version",
    )
    p.add_argument(
        "--shared-arena",
        action="store_true",
        help=f"use the arena {SHARED_ARENA} your firmware defines, shared with other models that never "
        "run at the same time, instead of the library's own (docs/multiple_models.md)",
    )
    p.add_argument(
        "--zephyr-module",
        action="store_true",
        help="also make DIR a Zephyr module (zephyr/module.yml, CMakeLists.txt, Kconfig and the runtime) "
        "for your own Zephyr application (docs/zephyr.md)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="only list every operator the model uses, supported or not, with every reason (nothing "
        "is written; exit status 2 if any is missing)",
    )
    add_tuning_argument(p)
    p.set_defaults(func=run)


def run(args) -> int:
    if args.check:
        check_operators(args.model)
        return 0
    if args.output is None:
        raise MicrocompilerError("compile needs -o DIR (where to write the model library), or --check")
    board = load_board(args.board, zephyr_base_of(args)) if args.board not in (None, HOST) else None
    cpu = board.cpu if board else None
    if args.tuning and cpu is None:
        raise MicrocompilerError("--tuning needs --board: a tuning log holds timings per CPU")
    tuning = tuning_for(args, cpu) if cpu else None
    library = compile_model(
        args.model,
        name=args.name,
        features=cpu.features if cpu else frozenset(),
        kernels=args.kernels,
        tuning=tuning,
        patches=args.patches,
        **ram_budget(args, board),
        shared_arena=SHARED_ARENA if args.shared_arena else None,
    )
    extra = None
    if args.zephyr_module:
        from microcompiler.targets.zephyr_module import write_zephyr_module

        extra = lambda stage: write_zephyr_module(stage, library.info.name)  # noqa: E731
    out = write_atomically(library, args.output, extra)
    meta = library.info
    target = f" for {args.board}" if args.board else ""
    kernels = ", reference kernels" if args.kernels == "reference" else ""
    if tuning is not None:
        kernels += f", {len(tuning.applied)} operators tuned by {printable(args.tuning)}"
    print(
        f"compiled {meta.name}{target}{kernels}: {len(meta.operators)} operators, arena "
        f"{meta.arena_bytes} B, weights {meta.params_bytes} B -> {printable(str(out))}"
    )
    return 0
