"""``microcompiler mlperf MODEL --board B --benchmark kws01``: build the MLPerf Tiny firmware and run the
official runner against it (docs/mlperf.md)."""

from __future__ import annotations

from pathlib import Path

from microcompiler.commands.arguments import add_zephyr_base_argument
from microcompiler.errors import MicrocompilerError
from microcompiler.mlperf import BENCHMARKS
from microcompiler.targets import get_target, templates

MODES = {"performance": "p", "accuracy": "a"}


def mlperf_templates() -> list[str]:
    """The project templates whose firmware is the MLPerf Tiny DUT (they take a benchmark)."""
    return [name for name in templates() if "benchmark" in get_target(name).options]


def add_parser(sub) -> None:
    p = sub.add_parser(
        "mlperf",
        help="build MLPerf Tiny firmware and run the official runner against it",
        description="Create and build an mlperf project for MODEL on BOARD (the EEMBC DUT protocol "
        "firmware), then run the official MLPerf Tiny runner against it: in QEMU for an "
        "emulated board, on --port for a real one. Prints the runner's median "
        "throughput (performance mode) or accuracy, and where its session files are.",
    )
    p.add_argument("model", help="the .tflite file")
    p.add_argument("--board", required=True, help="board name (see 'microcompiler boards')")
    add_zephyr_base_argument(p)
    p.add_argument("--benchmark", required=True, choices=tuple(BENCHMARKS), help="the MLPerf Tiny benchmark")
    p.add_argument(
        "--template",
        choices=mlperf_templates(),
        default="mlperf",
        help="mlperf: bare-metal firmware (CMake); mlperf-zephyr: a Zephyr application (west, "
        "docs/zephyr.md) (default: mlperf)",
    )
    p.add_argument(
        "--mode", choices=tuple(MODES), default="performance", help="the runner's mode (default: performance)"
    )
    p.add_argument(
        "--dataset",
        metavar="DIR",
        help="the runner's datasets folder (DIR/<benchmark>/y_labels.csv and files); default: random "
        "stand-in datasets (fine for performance; their accuracy means nothing)",
    )
    p.add_argument("--port", help="serial port of a real board (flash the built firmware first); default: QEMU")
    p.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="project directory (default: mlperf_<model>_<benchmark>_<board>); the runner's sessions "
        "go to DIR/build/mlperf/runner/sessions/",
    )
    p.add_argument(
        "--runner-dir",
        metavar="DIR",
        help="the folder with the official runner (runner/), run_official_runner.py and devices_pty.yaml "
        "(default: $MLPERF_TINY_RUNNER or ../shared/tools/mlperf_tiny_runner)",
    )
    p.add_argument(
        "--tests",
        metavar="YAML",
        help="the runner's test script (default: the runner's own; performance in QEMU: N sized for QEMU's speed)",
    )
    p.add_argument(
        "--timeout", type=float, default=1800.0, metavar="SECONDS", help="longest the runner may take (default: 1800)"
    )
    p.set_defaults(func=run)


def run(args) -> int:
    from microcompiler.boards import load_board
    from microcompiler.commands.arguments import zephyr_base_of
    from microcompiler.mlperf_runner import (
        check_runner_dir,
        check_runner_packages,
        default_runner_dir,
        make_stand_in_datasets,
        run_runner,
    )
    from microcompiler.project import build, create_project

    board = load_board(args.board, zephyr_base_of(args))
    if args.port is None and not board.emulated:
        raise MicrocompilerError(
            f"board {board.name} is not emulated: give --port (the board's serial port, with the firmware flashed)"
        )
    runner_dir = check_runner_dir(args.runner_dir or default_runner_dir())
    check_runner_packages()
    out = Path(args.output or f"mlperf_{Path(args.model).stem}_{args.benchmark}_{board.name}")
    project = create_project(args.model, args.template, board, out, benchmark=args.benchmark)
    built = build(project.dir)
    work_dir = project.dir / "build" / "mlperf"  # beside the build: re-creating the project keeps it
    dataset = Path(args.dataset) if args.dataset else make_stand_in_datasets(runner_dir, work_dir / "stand_in_datasets")
    if not (dataset / args.benchmark / "y_labels.csv").is_file():
        raise MicrocompilerError(f"{dataset} has no {args.benchmark}/y_labels.csv: not a runner datasets folder")
    result = run_runner(
        runner_dir,
        work_dir,
        mode=MODES[args.mode],
        dataset=dataset,
        elf=built.elf,
        qemu_machine=None if args.port else board.qemu_machine,
        qemu_args=board.qemu_args,
        port=args.port,
        tests=args.tests,
        timeout=args.timeout,
    )
    if result.median_throughput is not None:
        print(f"median throughput: {result.median_throughput:.3f} inferences/s")
    if result.top1 is not None:
        print(f"top-1 accuracy: {result.top1:.1f}%  AUC: {result.auc}")
    if result.median_throughput is None and result.top1 is None:
        raise MicrocompilerError(
            "the MLPerf Tiny runner finished without a throughput or accuracy line; see "
            f"{result.session_dir or work_dir}"
        )
    print(f"runner session files: {result.session_dir}")
    if not args.dataset:
        print("(random stand-in datasets: give --dataset for real accuracy numbers)")
    return 0
