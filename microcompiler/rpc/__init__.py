"""Talk to a device running the microcompiler RPC server (docs/rpc.md): the client side.

A :class:`Session` speaks the protocol over a transport; ``session.executor()`` runs a model's
operators one by one on the device. Opening a session on a project directory, or compiling and
starting firmware first, is the Python API's job: ``microcompiler.connect`` and
``microcompiler.open_model`` (microcompiler/api.py), which sit above the targets.
"""

from __future__ import annotations

from microcompiler.rpc.client import (
    DeviceBuffer,
    DeviceResetError,
    RemoteError,
    RemoteFunction,
    RequestError,
    Session,
    SessionClosedError,
    TimeResult,
)
from microcompiler.rpc.plan import ModelPlan

__all__ = [
    "Session",
    "DeviceBuffer",
    "RemoteFunction",
    "TimeResult",
    "ModelPlan",
    "DeviceResetError",
    "RemoteError",
    "SessionClosedError",
    "RequestError",
]
