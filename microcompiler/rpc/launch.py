"""Build host-driven firmware for a model and open an RPC session to it, in one call."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Callable

from microcompiler.boards import HOST, Board, load_board
from microcompiler.rpc.client import Session
from microcompiler.rpc.plan import ModelPlan


def _quiet(_: str) -> None:
    pass


def open_model(model, board: str | Board = HOST, project_dir: str | Path | None = None, port: str | None = None,
               log: Callable[[str], None] = _quiet, **session_options) -> Session:
    """Compile ``model`` (a .tflite path or a ModelLibrary), build host-driven firmware for ``board``,
    start it (a host process, or QEMU for emulated boards) and return an open session.

    With ``port``, nothing is started: the session talks to a board on that serial port that
    already runs host-driven firmware of this model (flash DIR/build/firmware.elf onto it first).
    Without ``project_dir`` the project lives in a temporary directory removed when the session closes.
    """
    from microcompiler.codegen import ModelLibrary
    from microcompiler.compiler import compile_model
    board_obj = None if board == HOST else board if isinstance(board, Board) else load_board(board)
    features = board_obj.cpu.features if board_obj is not None else frozenset()
    library = model if isinstance(model, ModelLibrary) else compile_model(model, features=features)
    temp = None
    if project_dir is None:
        temp = tempfile.mkdtemp(prefix="microcompiler-rpc-")
        project_dir = Path(temp) / "project"
    try:
        session = _build_and_connect(library, board_obj, Path(project_dir), port, log, session_options)
    except BaseException:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)
        raise
    if temp:
        session.cleanup.append(lambda: shutil.rmtree(temp, ignore_errors=True))
    return session


def _build_and_connect(library, board: Board | None, project_dir: Path, port, log, options) -> Session:
    name = library.metadata["name"]
    if board is None:
        from microcompiler.rpc.host_project import SERVER_EXE, create_host_project
        from microcompiler.transport.subprocess import SubprocessTransport
        create_host_project(library, project_dir, log=log)
        log(f"starting the host RPC server for {name}")
        transport = SubprocessTransport([str(project_dir / SERVER_EXE)])
        return Session(transport, plan=ModelPlan.load(project_dir), name="host RPC server", **options)
    from microcompiler.project import build, create_project
    from microcompiler.rpc.boards import open_project_transport
    log(f"creating the host-driven project for {name} on {board.name} in {project_dir}")
    create_project(library, "baremetal", board, project_dir, mode="host-driven")
    build(project_dir, log=log)
    if port is None and board.emulated:
        log(f"starting QEMU ({board.qemu_machine}) with the RPC server firmware")
    transport, device_name = open_project_transport(project_dir, port=port)
    log(f"connecting to {device_name}")
    return Session(transport, plan=ModelPlan.load(project_dir), name=device_name, **options)
