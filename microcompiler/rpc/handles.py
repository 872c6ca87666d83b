"""What a session hands out: a device function found by name, a block of device memory, a timing.

They hold their :class:`~microcompiler.rpc.client.Session` and go through it for every request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from microcompiler.rpc import protocol as P

Session = Any  # microcompiler.rpc.client.Session, which imports this module


@dataclass(frozen=True)
class TimeResult:
    """Device time of ``number`` back-to-back runs, measured ``repeat`` times."""

    ticks: tuple[int, ...]  # total timer ticks of each repeat
    number: int
    timer_hz: int

    @property
    def results(self) -> list[float]:
        """Seconds per run, one value per repeat."""
        return [t / self.number / self.timer_hz for t in self.ticks]

    @property
    def mean(self) -> float:
        return sum(self.results) / len(self.results)

    @property
    def ticks_per_run(self) -> float:
        """Ticks per run, median over the repeats, with its fraction: ``number`` runs of a short
        function resolve it to 1/number of a tick."""
        per_run = sorted(t / self.number for t in self.ticks)
        return per_run[len(per_run) // 2]

    @property
    def median_ticks(self) -> int:
        """Ticks per run, median over the repeats."""
        per_run = sorted(t // self.number for t in self.ticks)
        return per_run[len(per_run) // 2]


class RemoteFunction:
    """A device function found by name; calling it runs it once on the device."""

    def __init__(self, session: Session, function_id: int, name: str):
        self.session, self.id, self.name = session, function_id, name

    def __call__(self, *args) -> int:
        """Run once; returns the device timer ticks the call took."""
        return self.session.call(self, *args)

    def __repr__(self) -> str:
        return f"RemoteFunction({self.name!r}, id={self.id})"


class DeviceBuffer:
    """A block of device memory from the server's static pool."""

    def __init__(self, session: Session, handle: int, nbytes: int):
        self.session, self.handle, self.nbytes = session, handle, nbytes
        self.freed = False

    def write(self, data, offset: int = 0) -> None:
        raw = np.ascontiguousarray(data).tobytes() if isinstance(data, np.ndarray) else bytes(data)
        if offset < 0 or offset + len(raw) > self.nbytes:
            raise ValueError(f"writing {len(raw)} bytes at offset {offset} overflows a {self.nbytes}-byte buffer")
        self.session.write_memory(self.handle, offset, raw)

    def read(self, nbytes: int | None = None, offset: int = 0) -> bytes:
        nbytes = self.nbytes - offset if nbytes is None else nbytes
        if offset < 0 or nbytes < 0 or offset + nbytes > self.nbytes:
            raise ValueError(f"reading {nbytes} bytes at offset {offset} overflows a {self.nbytes}-byte buffer")
        return self.session.read_memory(self.handle, offset, nbytes)

    def read_array(self, dtype, shape, offset: int = 0) -> np.ndarray:
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        return np.frombuffer(self.read(count * dtype.itemsize, offset), dtype=dtype).reshape(shape).copy()

    def at(self, offset: int) -> P.TensorArg:
        """A pointer argument to byte ``offset`` of this buffer."""
        return P.TensorArg(self.handle, offset)

    def tensor_arg(self) -> P.TensorArg:
        return P.TensorArg(self.handle, 0)

    def free(self) -> None:
        if not self.freed:
            self.freed = True
            self.session.free(self.handle)

    def __repr__(self) -> str:
        return f"DeviceBuffer(handle=0x{self.handle:04x}, {self.nbytes} bytes)"
