"""SubprocessTransport: a device that is a program on this computer, talking over its stdin/stdout.

The host build of the RPC server (project_templates/host/rpc_main.c.j2) is such a device; it lets
host-driven execution, the protocol and fault handling be tested without QEMU or hardware.
"""

from __future__ import annotations

import collections
import fcntl
import os
import select
import struct
import subprocess
import termios
import threading
import time

from microcompiler import cleanup
from microcompiler.errors import DeviceError
from microcompiler.transport.base import Transport


class SubprocessTransport(Transport):
    """Runs ``argv`` and links to it through pipes. ``restart()`` is a device reset (a new process)."""

    WRITE_TIMEOUT = 10.0

    def __init__(self, argv: list[str], cwd: str | None = None):
        self.argv = [str(a) for a in argv]
        self.cwd = cwd
        self._proc: subprocess.Popen | None = None
        self._stderr: collections.deque[bytes] = collections.deque(maxlen=64)
        self._start()

    def _start(self) -> None:
        try:
            self._proc = cleanup.spawn(
                self.argv,
                cwd=self.cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
            )
        except OSError as exc:
            raise DeviceError(f"cannot start the device program {self.argv[0]}: {exc}") from None
        self._stderr.clear()
        threading.Thread(target=_keep_lines, args=(self._proc.stderr, self._stderr), daemon=True).start()

    def _exited_error(self) -> DeviceError:
        try:
            code = self._proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            code = None
        time.sleep(0.05)  # let the stderr reader catch up
        tail = " ".join(b"".join(self._stderr).decode(errors="replace").split())[-1000:]
        return DeviceError(
            f"the device program {os.path.basename(self.argv[0])} exited"
            + (f" with status {code}" if code is not None else "")
            + (f": {tail}" if tail else "")
        )

    def write(self, data: bytes) -> None:
        """Write all of data; a program that stops reading its input fails after WRITE_TIMEOUT seconds."""
        try:
            fd = self._proc.stdin.fileno()
            view = memoryview(data)
            deadline = time.monotonic() + self.WRITE_TIMEOUT
            while view:
                _, ready, _ = select.select([], [fd], [], max(0.0, deadline - time.monotonic()))
                if not ready:
                    raise DeviceError(
                        f"the device program {os.path.basename(self.argv[0])} has not read its "
                        f"input for {self.WRITE_TIMEOUT:g} s"
                    )
                view = view[os.write(fd, view[: select.PIPE_BUF]) :]
        except (BrokenPipeError, ValueError, OSError):
            raise self._exited_error() from None

    def read(self, n: int, timeout: float) -> bytes:
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + max(0.0, timeout)
        buf = bytearray()
        while len(buf) < n:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(0.0, remaining))
            if not ready:
                break
            chunk = os.read(fd, n - len(buf))
            if not chunk:
                if buf:
                    break
                raise self._exited_error()
            buf += chunk
            if remaining <= 0:
                break
        return bytes(buf)

    def silence_hint(self) -> str:
        return (
            f"the program {os.path.basename(self.argv[0])} was started by microcompiler and still runs: check that "
            "it is host-driven firmware (create-project --mode host-driven)"
        )

    def pending(self) -> int:
        try:
            raw = fcntl.ioctl(self._proc.stdout.fileno(), termios.FIONREAD, b"\0\0\0\0")
            return struct.unpack("i", raw)[0]
        except (OSError, ValueError):
            return 0

    def restart(self) -> None:
        """Kill the device program and start it again: what a reset button does to a board."""
        self._stop(graceful=False)
        self._start()

    def _stop(self, graceful: bool) -> None:
        proc = self._proc
        if proc is None:
            return
        try:
            if graceful:
                proc.stdin.close()  # the server sees end of file and exits
                proc.wait(timeout=2.0)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        cleanup.stop(proc, grace=2.0)  # its process group too; unregisters it
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except (OSError, ValueError):
                pass

    def close(self) -> None:
        self._stop(graceful=True)


def _keep_lines(stream, sink: collections.deque[bytes]) -> None:
    """Read a child's stream to its end, keeping its last lines in ``sink`` (a bounded deque)."""
    for line in iter(stream.readline, b""):
        sink.append(line)
