"""``microcompiler run MODEL --board B``: compile, build, run once and print the outputs.

This is the one path from the command line to a device, for ``run`` and ``bench``: the board is
resolved here (``host`` is this computer) and the target that serves it picked once; from then on
everything is the target's (microcompiler/targets): create the project (in a temporary directory,
or ``--keep DIR``), build it, then either run the standalone firmware and decode its report, or
start host-driven firmware and run the graph over RPC.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from microcompiler.boards import Board, resolve_board
from microcompiler.codegen import ModelLibrary
from microcompiler.codegen.model_info import ModelInfo
from microcompiler.commands.arguments import (
    add_board_arguments,
    positive_int,
    positive_seconds,
    ram_budget,
    tuning_for,
    zephyr_base_of,
)
from microcompiler.commands.output import add_steps, print_run, run_report
from microcompiler.compiler import compile_model
from microcompiler.inputs import load_input_steps, random_input_steps
from microcompiler.progress import log_line as progress
from microcompiler.targets import EXECUTORS, HOST_DRIVEN, MODES, STANDALONE, Target, target_for
from microcompiler.targets.base import create_options, start_on_board


def add_device_arguments(p) -> None:
    """The options run and bench share: the board options (add_board_arguments, as validate), the input
    and the project directory."""
    add_board_arguments(p)
    p.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="X.npy",
        help="an input tensor as .npy (repeat for several inputs; default: seeded random)",
    )
    p.add_argument(
        "--name",
        help="the model's C name (default: from the file name); host-driven with --port on "
        "firmware that holds several models: the model the device is asked for by name "
        "(docs/multiple_models.md)",
    )
    p.add_argument("--keep", metavar="DIR", help="write the firmware project to DIR and keep it")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "run",
        help="compile a model, run it on a board and print its outputs",
        description="Compile MODEL, build it for BOARD, run it once and print the outputs. "
        "Without --input, a fixed seeded random input is used.",
    )
    add_device_arguments(p)
    p.add_argument(
        "--mode",
        choices=MODES,
        default=STANDALONE,
        help="standalone: the firmware runs the model on an input compiled into it (default); "
        "host-driven: the host runs the graph, each operator runs on the device over RPC",
    )
    p.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="aot",
        help="aot: the generated <model>_run(); graph: the graph executor (default: aot)",
    )
    p.add_argument(
        "--steps",
        type=positive_int("--steps"),
        metavar="N",
        help="run N inferences in order, keeping the model's state (docs/state.md); with --input, "
        "each file holds the N steps along its first axis (default: 1, or one inference per "
        "repeated set of --input files)",
    )
    p.add_argument(
        "--timeout",
        type=positive_seconds("--timeout"),
        default=300.0,
        help="seconds the run may take, on the host or a board (default: 300)",
    )
    p.set_defaults(func=run)


@dataclass
class Job:
    """What the command line asks for, resolved once: the board, its target, the model and its input
    (``steps``: the input sets of every inference, in order; usually one)."""

    board: Board
    target: Target
    library: ModelLibrary
    steps: list[list[np.ndarray]]

    @property
    def meta(self) -> ModelInfo:
        """The model's metadata, typed (codegen/model_info.py)."""
        return self.library.info

    @property
    def inputs(self) -> list[np.ndarray]:
        """The first (usually the only) input set."""
        return self.steps[0]


def prepare(args, mode: str) -> Job:
    """Resolve the board and its target, refuse what cannot work, then compile and load the inputs."""
    board = resolve_board(args.board, zephyr_base_of(args))  # an unknown board fails before compiling
    target = target_for(board, args.template)
    target.check_run(mode=mode, keep=args.keep, port=args.port)
    target.check_board(board)
    library = compile_model(
        args.model,
        features=board.cpu.features,
        name=args.name,
        tuning=tuning_for(args, board.cpu),
        patches=args.patches,
        **ram_budget(args, board),
    )
    meta = library.info
    count = getattr(args, "steps", None)
    if args.input:
        steps = load_input_steps(args.input, meta.inputs, count)
    else:
        steps = random_input_steps(meta.inputs, count or 1)
        warn_if_random_inputs_drive_a_loop(library, steps[0])
    return Job(board, target, library, steps)


def warn_if_random_inputs_drive_a_loop(library: ModelLibrary, inputs: list[np.ndarray]) -> None:
    """A WHILE loop whose trip count comes from an input runs as often as a random integer says
    (up to 2^31 turns): say so before the wait, and how to give a real input."""
    graph = library.graph
    loops = [op for g in [graph, *graph.subgraphs.values()] for op in g.operators if op.kind == "WHILE"]
    if not loops:
        return
    for k, (tensor, x) in enumerate(zip(graph.inputs, inputs)):
        if x.dtype.kind in "iu" and x.size <= 4 and np.max(np.abs(x.astype(np.int64))) > 1000:
            name = graph.tensors[tensor].name
            progress(
                f"note: the model loops (WHILE) and its input {k} ('{name}') is a seeded random "
                f"{x.dtype} of {np.array2string(x.ravel(), separator=', ')}; if that is a trip count the run "
                f"takes that many turns: pass your own input with --input X.npy"
            )


@contextmanager
def project_directory(keep: str | None) -> Iterator[Path]:
    """--keep DIR, or a temporary directory removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="microcompiler-") as tmp:
        yield Path(keep) if keep else Path(tmp) / "project"


@contextmanager
def host_driven_session(job: Job, args, call_timeout: float | None = None):
    """(BuildResult or None, an open Session) to host-driven firmware of the job's model."""
    options = {"call_timeout": call_timeout} if call_timeout else {}
    with project_directory(args.keep) as project_dir:
        _, built, session = start_on_board(
            job.library,
            job.board,
            project_dir,
            template=job.target.name,
            port=args.port,
            log=progress,
            timeout=args.rpc_timeout,
            zephyr_base=zephyr_base_of(args),
            **options,
        )
        with session:
            for line in session.logs:
                progress(f"device: {line}")
            yield built, session


def run(args) -> int:
    job = prepare(args, args.mode)
    meta, target = job.meta, job.target
    sequence = len(job.steps) > 1
    if args.mode == HOST_DRIVEN:
        with host_driven_session(job, args, call_timeout=args.timeout) as (built, session):
            step_outputs, step_ticks = [], []
            with session.executor() as ex:
                if meta.keeps_state:
                    ex.reset()  # a board that was already running may hold an earlier run's state
                for inputs in job.steps:  # the state stays on the device from one step to the next
                    step_outputs.append(ex(*inputs))
                    operator_ticks = list(ex.last_ticks)
                    step_ticks.append(sum(operator_ticks))
            hz = session.device.timer_hz
            stats = dict(session.stats)
        outputs = step_outputs[-1]
        report = run_report(
            meta,
            job.board,
            target.name,
            args.mode,
            args.executor,
            outputs,
            step_ticks[-1],
            hz,
            built=built,
            operator_ticks=operator_ticks,
            rpc=stats,
        )
    else:
        with project_directory(args.keep) as project_dir:
            given = dict(input_steps=job.steps) if sequence else dict(input=job.inputs)
            given.update(create_options(target, zephyr_base_of(args)))
            project = target.create(job.library, job.board, project_dir, executor=args.executor, log=progress, **given)
            built = target.build(project, log=progress)
            result = target.flash(project, timeout=args.timeout, log=progress, port=args.port)
        report = run_report(
            meta,
            job.board,
            target.name,
            args.mode,
            args.executor,
            result.outputs,
            result.ticks,
            result.hz,
            built=built,
            stack_bytes=result.stack_bytes,
        )
        outputs = result.outputs
        step_outputs, step_ticks = result.step_outputs or [outputs], result.step_ticks or [result.ticks]
    if sequence:
        add_steps(report, step_outputs, step_ticks)
    print_run(report, outputs, target.label, args.json, step_outputs if sequence else None)
    return 0
