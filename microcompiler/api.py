"""The Python API's entry points that span floors: open an RPC session to a device (docs/rpc.md).

    import microcompiler
    with microcompiler.connect("out/hello_rpc") as session:     # a host-driven project directory
        ex = session.executor()
        ex.set_input(0, x); ex.run(); y = ex.get_output(0)

``connect`` takes a host-driven project directory (host, bare-metal or Zephyr), or a transport, or a
serial port together with the model plan; ``open_model`` compiles a model, builds host-driven
firmware for a board, starts it and connects. Both sit above the device floor (rpc, targets): the
RPC client knows nothing of projects, the targets start firmware and hand back a session.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from collections.abc import Callable

from microcompiler.boards import HOST, Board, resolve_board
from microcompiler.errors import MicrocompilerError
from microcompiler.rpc.client import Session
from microcompiler.rpc.plan import ModelPlan
from microcompiler.targets import open_project
from microcompiler.targets.base import start_on_board
from microcompiler.transport.base import Transport
from microcompiler.transport.serial import SerialTransport


def connect(target=None, *, port: str | None = None, board: str | None = None, plan=None, model: str | None = None,
            timeout: float = 5.0, **session_options) -> Session:
    """Open an RPC session.

    target: a host-driven project directory (made by ``microcompiler run --mode host-driven``,
    ``create_host_project`` or ``create_project(mode="host-driven")``), or a Transport.
    port: a serial port path of a real board already running host-driven firmware (with plan=).
    model: in a project with several models (docs/multiple_models.md), the one to drive, by name
    (default: the first); the session checks the firmware holds it.
    """
    if isinstance(target, Transport):
        return Session(target, timeout=timeout, plan=_plan(plan), **session_options)
    if port is not None:
        return Session(SerialTransport(port), timeout=timeout, plan=_plan(plan, target), **session_options)
    if target is None:
        raise MicrocompilerError("connect() needs a project directory, a transport, or port=")
    project = open_project(target)
    if board is not None and not project.board.is_host and board != project.board.name:
        raise MicrocompilerError(f"{project.dir} was made for board {project.board.name}, not {board}")
    if model is not None and plan is None:
        project.model_metadata(model)  # a one-line error when the project holds no such model
        plan = project.dir / "models" / model if project.models else project.dir
    return project.target.start(project, load=False, timeout=timeout, plan=_plan(plan, project.dir),
                                **session_options)


def _plan(plan, directory=None):
    if isinstance(plan, ModelPlan):
        return plan
    if plan is not None:
        return ModelPlan.load(plan)
    if directory is not None and (Path(directory) / "host_driven.json").is_file():
        return ModelPlan.load(directory)
    return None


def _quiet(_: str) -> None:
    pass


def open_model(model, board: str | Board = HOST, project_dir: str | Path | None = None, port: str | None = None,
               log: Callable[[str], None] = _quiet, template: str = "baremetal", **session_options) -> Session:
    """Compile ``model`` (a .tflite path or a ModelLibrary), build host-driven firmware for ``board``,
    start it (a host process, QEMU for emulated boards, ``west flash`` for Zephyr on hardware) and
    return an open session.

    With ``port``, nothing is started: the session talks to a board on that serial port that
    already runs host-driven firmware of this model (flash DIR/build/firmware.elf onto it first).
    Without ``project_dir`` the project lives in a temporary directory removed when the session closes.
    """
    board = resolve_board(board)  # an unknown board fails before anything is made
    temp = None
    if project_dir is None:
        temp = tempfile.mkdtemp(prefix="microcompiler-rpc-")
        project_dir = Path(temp) / "project"
    try:
        _, _, session = start_on_board(model, board, project_dir, template=template, port=port, log=log,
                                       **session_options)
    except BaseException:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)
        raise
    if temp:
        session.cleanup.append(lambda: shutil.rmtree(temp, ignore_errors=True))
    return session
