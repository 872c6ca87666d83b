"""Talk to a device running the microcompiler RPC server (docs/rpc.md).

    import microcompiler
    with microcompiler.connect("out/hello_rpc") as session:     # a host-driven project directory
        ex = session.executor()
        ex.set_input(0, x); ex.run(); y = ex.get_output(0)

``connect`` takes a host-driven project directory (host, bare-metal or Zephyr), or a transport, or a
serial port together with the model plan.
"""
from __future__ import annotations

from pathlib import Path

from microcompiler.errors import MicrocompilerError
from microcompiler.rpc.client import (DeviceBuffer, DeviceResetError, RemoteError, RemoteFunction, Session,
                                      SessionClosedError, TimeResult)
from microcompiler.rpc.launch import open_model
from microcompiler.rpc.plan import ModelPlan


def connect(target=None, *, port: str | None = None, board: str | None = None, plan=None, model: str | None = None,
            timeout: float = 5.0, **session_options) -> Session:
    """Open an RPC session.

    target: a host-driven project directory (made by ``microcompiler run --mode host-driven``,
    ``create_host_project`` or ``create_project(mode="host-driven")``), or a Transport.
    port: a serial port path of a real board already running host-driven firmware (with plan=).
    model: in a project with several models (docs/multiple_models.md), the one to drive, by name
    (default: the first); the session checks the firmware holds it.
    """
    from microcompiler.transport.base import Transport
    if isinstance(target, Transport):
        return Session(target, timeout=timeout, plan=_plan(plan), **session_options)
    if port is not None:
        from microcompiler.transport.serial import SerialTransport
        return Session(SerialTransport(port), timeout=timeout, plan=_plan(plan, target), **session_options)
    if target is None:
        raise MicrocompilerError("connect() needs a project directory, a transport, or port=")
    from microcompiler.targets import open_project
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


__all__ = ["connect", "open_model", "Session", "DeviceBuffer", "RemoteFunction", "TimeResult", "ModelPlan", "DeviceResetError",
           "RemoteError", "SessionClosedError"]
