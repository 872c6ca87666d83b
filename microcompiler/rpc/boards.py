"""Reaching host-driven firmware on a board: QEMU for emulated boards, a serial port for real ones."""
from __future__ import annotations

from pathlib import Path

from microcompiler.errors import DeviceError, MicrocompilerError


def open_project_transport(project_dir: str | Path, board: str | None = None, port: str | None = None):
    """(transport, device name) for a built host-driven bare-metal project.

    Emulated boards start the firmware in QEMU (the pty is opened with pyserial); real boards are
    reached on ``port`` or on the board's USB VID:PID (the firmware must already be flashed).
    """
    from microcompiler.project import Project
    project = Project.load(project_dir)
    if getattr(project, "mode", "standalone") != "host-driven":
        raise MicrocompilerError(f"{project.dir} is a standalone project; create it with mode 'host-driven' "
                                 "(microcompiler run --mode host-driven) to talk RPC to it")
    if board is not None and board != project.board.name:
        raise MicrocompilerError(f"{project.dir} was made for board {project.board.name}, not {board}")
    if port is not None or not project.board.emulated:
        from microcompiler.transport.serial import SerialTransport
        if port is None and not project.board.usb_ids:
            raise MicrocompilerError(f"board {project.board.name} has no USB id; pass the serial port (--port)")
        return SerialTransport(port, usb_ids=project.board.usb_ids), f"{project.board.name} ({port or 'USB'})"
    if not project.elf.is_file():
        raise MicrocompilerError(f"{project.elf} does not exist; build the project first (microcompiler build)")
    from microcompiler.transport.qemu import QemuTransport
    return QemuTransport(project.board.qemu_machine, project.elf), f"{project.board.name} (QEMU)"


def qemu_system_reset(transport) -> None:
    """Reset the emulated board behind a QemuTransport (QMP system_reset), as a reset button would."""
    inner = getattr(transport, "inner", transport)
    reset = getattr(inner, "reset", None)
    if not callable(reset):
        raise DeviceError("this transport cannot reset its device")
    reset()
