"""Build host-driven firmware for a model and open an RPC session to it, in one call."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from microcompiler.boards import HOST, Board, resolve_board

if TYPE_CHECKING:
    from microcompiler.rpc.client import Session


def _quiet(_: str) -> None:
    pass


def open_model(model, board: str | Board = HOST, project_dir: str | Path | None = None, port: str | None = None,
               log: Callable[[str], None] = _quiet, template: str = "baremetal", **session_options) -> "Session":
    """Compile ``model`` (a .tflite path or a ModelLibrary), build host-driven firmware for ``board``,
    start it (a host process, QEMU for emulated boards, ``west flash`` for Zephyr on hardware) and
    return an open session.

    With ``port``, nothing is started: the session talks to a board on that serial port that
    already runs host-driven firmware of this model (flash DIR/build/firmware.elf onto it first).
    Without ``project_dir`` the project lives in a temporary directory removed when the session closes.
    """
    from microcompiler.targets.base import start_on_board  # targets use rpc: imported when called
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
