"""Targets: how a compiled model gets onto a device and runs there (docs/architecture.md).

One module per target (``baremetal``, ``zephyr``, ``host``), each a :class:`Target` subclass
registered by name in ``base``; the functions here are the public, project-directory level API::

    project = create_project("model.tflite", "baremetal", "mps2_an386", "out/p")
    build(project.dir)                    # BuildResult: the ELF and its flash and RAM use
    result = flash(project.dir)           # RunResult: outputs, ticks, timer Hz, stack high-water

Adding a project template is one new module here (a registered Target subclass) plus its
templates in ``project_templates/<name>/`` (docs/porting.md).
"""

from __future__ import annotations

from pathlib import Path

from microcompiler.boards import HOST_BOARD, Board, load_board
from microcompiler.codegen import ModelLibrary
from microcompiler.errors import MicrocompilerError
from microcompiler.targets.base import (
    EXECUTORS,
    HOST_DRIVEN,
    MODES,
    RPC_TIMEOUT,
    STANDALONE,
    Log,
    Project,
    RunResult,
    Target,
    decode_report,
    get_target,
    register,
    run_on_board,
    target_for,
    templates,
)
from microcompiler.targets.files import PROJECT_FILE
from microcompiler.targets.footprint import DEFAULT_STACK_BYTES, MIN_STACK_BYTES, check_fits, estimate_footprint
from microcompiler.targets.toolchain import BuildResult, firmware_size, model_flash


def create_project(
    model: str | Path | ModelLibrary,
    template: str,
    board: str | Board,
    out_dir: str | Path,
    executor: str = "aot",
    input=None,
    stack_bytes: int | None = None,
    mode: str = STANDALONE,
    **options,
) -> Project:
    """Write a firmware project for ``model`` on ``board`` into ``out_dir`` (replaced if a project).

    ``model`` is a .tflite path or an already compiled library (compile it with the board's
    ``cpu.features``). ``input`` is None (a fixed seeded random input), .npy paths, or arrays.
    ``stack_bytes``: the stack (default: the template's, DEFAULT_STACK_BYTES for bare metal, sized
    for the model on Zephyr). ``mode`` "host-driven" makes src/main.c an RPC server (docs/rpc.md).
    ``options``: the template's own (``Target.options``; mlperf: ``benchmark``, docs/mlperf.md).
    """
    board = board if isinstance(board, Board) else load_board(board)
    _check_options(template, executor, stack_bytes, mode)
    target = get_target(template)
    for option in options:  # a template's own options (mlperf: benchmark)
        if option not in target.options:
            raise MicrocompilerError(f"--{option.replace('_', '-')} does not go with --template {template}")
    return target.create(
        model, board, out_dir, executor=executor, mode=mode, input=input, stack_bytes=stack_bytes, **options
    )


def _check_options(template: str, executor: str, stack_bytes: int | None, mode: str) -> None:
    known = templates()
    if template not in known:
        raise MicrocompilerError(f"unknown project template '{template}'; known templates: {', '.join(known)}")
    if executor not in EXECUTORS:
        raise MicrocompilerError(f"unknown executor '{executor}'; use one of {', '.join(EXECUTORS)}")
    if stack_bytes is not None and (stack_bytes < MIN_STACK_BYTES or stack_bytes % 8):
        raise MicrocompilerError(
            f"a stack of {stack_bytes} B is too small or unaligned; give a multiple of 8 "
            f"of at least {MIN_STACK_BYTES} B"
        )
    if mode not in MODES:
        raise MicrocompilerError(f"unknown mode '{mode}'; use one of {', '.join(MODES)}")


def create_models_project(
    models: list,
    template: str,
    board: str | Board,
    out_dir: str | Path,
    *,
    names: list[str] | None = None,
    executor: str = "aot",
    mode: str = STANDALONE,
    stack_bytes: int | None = None,
    share_arena: bool = False,
    concurrent: bool = False,
) -> Project:
    """Write one firmware project that runs several models (docs/multiple_models.md).

    ``names``: each model's C name, in order (default: from the file names); ``share_arena``: one
    arena for all (they run one after the other), refused when ``concurrent`` (they may run at the
    same time), in host-driven mode, or when a model keeps state between inferences."""
    from microcompiler.targets.multi import create_models_project as create

    board = board if isinstance(board, Board) else load_board(board)
    _check_options(template, executor, stack_bytes, mode)
    return create(
        get_target(template),
        list(models),
        board,
        out_dir,
        names=names,
        executor=executor,
        mode=mode,
        stack_bytes=stack_bytes,
        share_arena=share_arena,
        concurrent=concurrent,
    )


def build(project_dir: str | Path, log: Log = print, zephyr_base: str | Path | None = None) -> BuildResult | None:
    """Build the project with its template's tools; returns the firmware sizes. ``zephyr_base``: the
    Zephyr workspace to build with instead of the one the project was created with (Zephyr projects)."""
    project = load_project(project_dir, zephyr_base)
    return project.target.build(project, log=log)


def flash(
    project_dir: str | Path,
    timeout: float = 300.0,
    log: Log = print,
    port: str | None = None,
    zephyr_base: str | Path | None = None,
    runner: str | None = None,
) -> RunResult:
    """Load the built firmware on the board, run the model once and decode what it reports.
    ``runner``: the flash runner instead of the board's (``west flash --runner``, Zephyr projects)."""
    project = load_project(project_dir, zephyr_base)
    project.runner = runner
    return project.target.flash(project, timeout=timeout, log=log, port=port)


def load_project(project_dir: str | Path, zephyr_base: str | Path | None = None) -> Project:
    """The project in ``project_dir``; ``zephyr_base`` (checked to be a Zephyr tree) replaces the
    workspace it records."""
    project = Project.load(project_dir)
    if zephyr_base is not None:
        from microcompiler.zephyr.workspace import zephyr_base as find_base

        project.zephyr_base = str(find_base(zephyr_base))
    return project


def open_project(project_dir: str | Path) -> Project:
    """The project in a directory: a firmware project, or a host RPC project (create_host_project)."""
    from microcompiler.targets.host import open_host_project

    return open_host_project(project_dir, HOST_BOARD) or Project.load(project_dir)


__all__ = [
    "open_project",
    "load_project",
    "Project",
    "BuildResult",
    "RunResult",
    "Target",
    "create_project",
    "create_models_project",
    "build",
    "flash",
    "run_on_board",
    "firmware_size",
    "model_flash",
    "check_fits",
    "estimate_footprint",
    "decode_report",
    "templates",
    "get_target",
    "target_for",
    "register",
    "EXECUTORS",
    "MODES",
    "STANDALONE",
    "HOST_DRIVEN",
    "DEFAULT_STACK_BYTES",
    "PROJECT_FILE",
    "RPC_TIMEOUT",
]
