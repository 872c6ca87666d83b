"""QemuTransport: run a firmware in qemu-system-arm and talk to its UART0 through a pty.

QEMU runs with ``-icount shift=0`` (one guest instruction = one virtual nanosecond), so timer
readings are exact and repeatable. It starts paused (``-S``): the pty is opened first and the
guest is then resumed over QMP, so not one byte the firmware prints is lost.
"""
from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from microcompiler.errors import DeviceError, ToolchainError
from microcompiler.transport.base import Transport
from microcompiler.transport.serial import SerialTransport

QEMU = "qemu-system-arm"
_PTY_LINE = re.compile(r"char device redirected to (\S+) \(label serial0\)")


def qemu_command(machine: str, kernel: str | Path, qmp_socket: str | Path, qemu: str = QEMU,
                 extra_args: tuple[str, ...] = ()) -> list[str]:
    return [qemu, "-M", machine, "-nographic", "-monitor", "none", "-serial", "pty",
            "-icount", "shift=0", "-kernel", str(kernel), "-S",
            "-qmp", f"unix:{qmp_socket},server=on,wait=off", *extra_args]


class QemuTransport(Transport):
    """Start ``qemu -M machine -kernel elf``; the transport is the guest's first UART.

    Closing the transport stops QEMU. ``QemuTransport.for_board(board, elf)`` takes the machine
    from a board description.
    """

    @classmethod
    def for_board(cls, board, kernel: str | Path, **options) -> "QemuTransport":
        if not board.emulated:
            raise DeviceError(f"board {board.name} is not emulated (no [qemu] machine in its board file)")
        return cls(board.qemu_machine, kernel, **options)

    def __init__(self, machine: str, kernel: str | Path, *, qemu: str = QEMU,
                 extra_args: tuple[str, ...] = (), start_timeout: float = 15.0):
        if shutil.which(qemu) is None:
            raise ToolchainError(f"'{qemu}' is not on PATH; install QEMU's Arm system emulator "
                                 "(Debian: apt-get install qemu-system-arm)")
        if not Path(kernel).is_file():
            raise DeviceError(f"firmware {kernel} does not exist; build the project first")
        self.machine = machine
        self._dir = Path(tempfile.mkdtemp(prefix="microcompiler-qemu-"))
        self._log_path = self._dir / "qemu.log"
        qmp_path = self._dir / "qmp.sock"
        self._serial: SerialTransport | None = None
        with open(self._log_path, "wb") as log:
            self._proc = subprocess.Popen(qemu_command(machine, kernel, qmp_path, qemu, extra_args),
                                          stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        try:
            pty = self._wait_for_pty(start_timeout)
            self._serial = SerialTransport(pty)
            self._resume(qmp_path, start_timeout)
        except BaseException:
            self.close()
            raise

    def _log(self) -> str:
        try:
            return self._log_path.read_text(errors="replace").strip()
        except OSError:
            return ""

    def _wait_for_pty(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = _PTY_LINE.search(self._log())
            if match:
                return match.group(1)
            if self._proc.poll() is not None:
                raise DeviceError(f"QEMU ({self.machine}) exited with code {self._proc.returncode}: "
                                  f"{self._log()[-1000:]}")
            time.sleep(0.02)
        raise DeviceError(f"QEMU ({self.machine}) did not open its serial pty within {timeout:g} s")

    def _resume(self, qmp_path: Path, timeout: float) -> None:
        """Tell the paused guest to start."""
        deadline = time.monotonic() + timeout
        while not qmp_path.exists():
            if time.monotonic() > deadline or self._proc.poll() is not None:
                raise DeviceError(f"QEMU ({self.machine}) has no QMP socket: {self._log()[-1000:]}")
            time.sleep(0.02)
        self.qmp("cont", timeout=timeout)

    def qmp(self, command: str, timeout: float = 10.0, **arguments) -> dict:
        """Run one QMP command on this QEMU (e.g. "system_reset") and return its answer."""
        message = {"execute": command, **({"arguments": arguments} if arguments else {})}
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            try:
                sock.connect(str(self._dir / "qmp.sock"))
                stream = sock.makefile("rwb")
                stream.readline()  # greeting
                for request in ({"execute": "qmp_capabilities"}, message):
                    stream.write(json.dumps(request).encode() + b"\n")
                    stream.flush()
                    while True:  # skip asynchronous events until the command's answer
                        reply = json.loads(stream.readline() or b"{}")
                        if "return" in reply or "error" in reply or not reply:
                            break
                    if "return" not in reply:
                        raise DeviceError(f"QEMU refused '{request['execute']}': {reply}")
            except OSError as exc:
                raise DeviceError(f"cannot talk to QEMU ({self.machine}) over QMP: {exc}") from None
        return reply["return"]

    def reset(self) -> None:
        """Reset the emulated board, as its reset button would; the firmware starts again."""
        self.qmp("system_reset")

    def write(self, data: bytes) -> None:
        self._link().write(data)

    def read(self, n: int, timeout: float) -> bytes:
        data = self._link().read(n, timeout)
        if not data and self._proc.poll() is not None:
            raise DeviceError(f"QEMU ({self.machine}) exited with code {self._proc.returncode}: "
                              f"{self._log()[-1000:]}")
        return data

    def pending(self) -> int:
        return self._link().pending()

    def _link(self) -> SerialTransport:
        if self._serial is None:
            raise DeviceError("the QEMU transport is closed")
        return self._serial

    def close(self) -> None:
        if self._serial is not None:
            self._serial.close()
            self._serial = None
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        shutil.rmtree(self._dir, ignore_errors=True)


def qemu_system_reset(transport) -> None:
    """Reset the emulated board behind a QemuTransport (QMP system_reset), as a reset button would."""
    inner = getattr(transport, "inner", transport)
    reset = getattr(inner, "reset", None)
    if not callable(reset):
        raise DeviceError("this transport cannot reset its device")
    reset()
