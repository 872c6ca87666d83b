"""The transport interface: a bidirectional byte stream to a device."""

from __future__ import annotations

import math
import re
import time
from abc import ABC, abstractmethod

from microcompiler.errors import DeviceError, MicrocompilerError


def check_timeout(seconds, what: str = "timeout") -> float:
    """seconds as a float if it is a finite number greater than zero; else MicrocompilerError.

    NaN compares false with everything, so a NaN deadline is never reached: refuse it at the door."""
    try:
        value = float(seconds)
    except (TypeError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise MicrocompilerError(f"{what} must be a finite number of seconds greater than 0, not {seconds!r}")
    return value


class Transport(ABC):
    """A byte link to a device. Implementations: SerialTransport, QemuTransport.

    ``read(n, timeout)`` returns as soon as n bytes arrived, or when timeout seconds passed with
    whatever arrived by then (possibly b""). ``pending()`` is how many bytes can be read at once
    without waiting (0 if unknown). Use as a context manager to close the link.
    """

    @abstractmethod
    def write(self, data: bytes) -> None: ...

    @abstractmethod
    def read(self, n: int, timeout: float) -> bytes: ...

    @abstractmethod
    def close(self) -> None: ...

    def pending(self) -> int:
        return 0

    def silence_hint(self) -> str:
        """What to check when the device answers nothing (the end of the RPC client's timeout error)."""
        return "check that it runs the microcompiler RPC server (host-driven firmware) and that the port is right"

    def read_until(self, terminator: bytes | re.Pattern, timeout: float) -> bytes:
        """Read until ``terminator`` (bytes, or a compiled bytes regex) is in the data; returns all of it.

        Raises DeviceError with what arrived so far when timeout seconds pass first.
        """
        timeout = check_timeout(timeout)
        deadline = time.monotonic() + timeout
        buf = bytearray()

        def found() -> bool:
            if isinstance(terminator, bytes):
                return terminator in buf
            return terminator.search(buf) is not None

        while not found():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                tail = bytes(buf[-300:]).decode(errors="replace")
                raise DeviceError(
                    f"no answer from the device within {timeout:g} s; it sent {len(buf)} bytes"
                    + (f", ending with: {tail!r}" if buf else "")
                )
            buf += self.read(max(1, self.pending()), min(remaining, 0.5))
        return bytes(buf)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
