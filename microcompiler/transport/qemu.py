"""QemuTransport: run a firmware in qemu-system-arm and talk to its UART0 through a pty.

QEMU runs with ``-icount shift=0`` (one guest instruction = one virtual nanosecond), so timer
readings are exact and repeatable. It starts paused (``-S``): the pty is opened first and the
guest is then resumed over QMP, so not one byte the firmware prints is lost.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from microcompiler import cleanup
from microcompiler.errors import DeviceError, ToolchainError
from microcompiler.transport.base import Transport
from microcompiler.transport.serial import SerialTransport

QEMU = "qemu-system-arm"
QMP_SOCKET = "qmp.sock"  # QEMU's machine protocol, in the instance's temporary directory
# After the pty fails, how long QEMU may take to be reaped (a loaded machine is slow to deliver a
# kill) before the link's own error is reported instead of QEMU's exit.
EXIT_WAIT_SECONDS = 5.0
_PTY_LINE = re.compile(r"char device redirected to (\S+) \(label serial0\)")


def qemu_run_args(machine: str, kernel: str | Path, machine_args: tuple[str, ...] = ()) -> list[str]:
    """What every QEMU microcompiler starts is told: the machine (and the arguments the board file's
    ``[qemu] args`` adds to it), no display or monitor, UART0 on a pty, ``-icount shift=0``, the ELF."""
    return [
        "-M",
        machine,
        *machine_args,
        "-nographic",
        "-monitor",
        "none",
        "-serial",
        "pty",
        "-icount",
        "shift=0",
        "-kernel",
        str(kernel),
    ]


def qemu_command(
    machine: str,
    kernel: str | Path,
    qmp_socket: str | Path,
    qemu: str = QEMU,
    extra_args: tuple[str, ...] = (),
    machine_args: tuple[str, ...] = (),
) -> list[str]:
    """QemuTransport's command: started paused (-S), resumed over QMP; ``extra_args`` go last."""
    return [
        qemu,
        *qemu_run_args(machine, kernel, machine_args),
        "-S",
        "-qmp",
        f"unix:{qmp_socket},server=on,wait=off",
        *extra_args,
    ]


def _signal_name(signo: int) -> str:
    try:
        return signal.Signals(signo).name
    except ValueError:
        return str(signo)


class QemuTransport(Transport):
    """Start ``qemu -M machine -kernel elf``; the transport is the guest's first UART.

    Closing the transport stops QEMU. ``QemuTransport.for_board(board, elf)`` takes the machine
    and its arguments (``[qemu] machine`` and ``args``) from a board description.
    """

    @classmethod
    def for_board(cls, board, kernel: str | Path, **options) -> QemuTransport:
        if not board.emulated:
            raise DeviceError(f"board {board.name} is not emulated (no [qemu] machine in its board file)")
        return cls(board.qemu_machine, kernel, machine_args=board.qemu_args, **options)

    def __init__(
        self,
        machine: str,
        kernel: str | Path,
        *,
        qemu: str = QEMU,
        extra_args: tuple[str, ...] = (),
        machine_args: tuple[str, ...] = (),
        start_timeout: float = 15.0,
    ):
        if shutil.which(qemu) is None:
            raise ToolchainError(
                f"'{qemu}' is not on PATH; install QEMU's Arm system emulator (Debian: apt-get install qemu-system-arm)"
            )
        if not Path(kernel).is_file():
            raise DeviceError(f"firmware {kernel} does not exist; build the project first")
        self.machine = machine
        self.kernel = Path(kernel)
        self._serial: SerialTransport | None = None
        self._proc: subprocess.Popen | None = None
        self._dir = cleanup.temp_dir("microcompiler-qemu-", socket_name=QMP_SOCKET)
        try:
            self._log_path = self._dir / "qemu.log"
            qmp_path = self._dir / QMP_SOCKET
            with open(self._log_path, "wb") as log:
                self._proc = cleanup.spawn(
                    qemu_command(machine, kernel, qmp_path, qemu, extra_args, machine_args),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
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
            self._raise_if_exited()
            time.sleep(0.02)
        raise DeviceError(f"QEMU ({self.machine}) did not open its serial pty within {timeout:g} s")

    def _resume(self, qmp_path: Path, timeout: float) -> None:
        """Tell the paused guest to start."""
        deadline = time.monotonic() + timeout
        while not qmp_path.exists():
            self._raise_if_exited()
            if time.monotonic() > deadline:
                raise DeviceError(
                    f"QEMU ({self.machine}) has no QMP socket after {timeout:g} s: "
                    f"{' '.join(self._log().split())[-1000:]}"
                )
            time.sleep(0.02)
        self.qmp("cont", timeout=timeout)

    def qmp(self, command: str, timeout: float = 10.0, **arguments) -> dict:
        """Run one QMP command on this QEMU (e.g. "system_reset") and return its answer."""
        message = {"execute": command, **({"arguments": arguments} if arguments else {})}
        deadline = time.monotonic() + timeout
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)  # bounds each connect, read and write
            try:
                sock.connect(str(self._dir / QMP_SOCKET))
                stream = sock.makefile("rwb")
                stream.readline()  # greeting
                for request in ({"execute": "qmp_capabilities"}, message):
                    stream.write(json.dumps(request).encode() + b"\n")
                    stream.flush()
                    while True:  # skip asynchronous events until the command's answer
                        if time.monotonic() > deadline:
                            raise DeviceError(
                                f"QEMU ({self.machine}) did not answer '{request['execute']}' "
                                f"over QMP within {timeout:g} s"
                            )
                        reply = json.loads(stream.readline() or b"{}")
                        if "return" in reply or "error" in reply or not reply:
                            break
                    if "return" not in reply:
                        raise DeviceError(f"QEMU refused '{request['execute']}': {reply}")
            except (OSError, ValueError) as exc:
                self._raise_if_exited(wait=1.0)  # QEMU died (a bad firmware file): say so, with its message
                raise DeviceError(f"cannot talk to QEMU ({self.machine}) over QMP: {exc}") from None
        return reply["return"]

    def reset(self) -> None:
        """Reset the emulated board, as its reset button would; the firmware starts again."""
        self.qmp("system_reset")

    def write(self, data: bytes) -> None:
        try:
            self._link().write(data)
        except DeviceError:
            self._raise_if_exited(wait=EXIT_WAIT_SECONDS)
            raise

    def read(self, n: int, timeout: float) -> bytes:
        try:
            data = self._link().read(n, timeout)
        except DeviceError:
            # a pty whose other end closed: pyserial says "returned no data"; say what happened
            self._raise_if_exited(wait=EXIT_WAIT_SECONDS)
            raise
        if not data:
            self._raise_if_exited()
        return data

    def _raise_if_exited(self, wait: float = 0.0) -> None:
        try:
            code = self._proc.wait(timeout=wait) if wait else self._proc.poll()
        except subprocess.TimeoutExpired:
            return
        if code is not None:
            raise self._exited_error(code)

    def _exited_error(self, code: int) -> DeviceError:
        """One line: how QEMU ended and what it said (its own "qemu..." lines first, not a register dump)."""
        lines = [line.strip() for line in self._log().splitlines() if line.strip() and not _PTY_LINE.search(line)]
        said = [line for line in lines if line.startswith("qemu")] or lines[:3]
        how = f"exited with code {code}" if code >= 0 else f"exited on signal {_signal_name(-code)}"
        return DeviceError(f"QEMU ({self.machine}) {how}: {'; '.join(said)[:600] or 'it printed nothing'}")

    def pending(self) -> int:
        return self._link().pending()

    def silence_hint(self) -> str:
        # microcompiler started QEMU and holds its UART: the link is right, the firmware is the question
        return (
            f"QEMU ({self.machine}) runs {self.kernel.name} and is still up: check that it is host-driven "
            "firmware (create-project --mode host-driven) built for this board, and that it boots"
        )

    def _link(self) -> SerialTransport:
        if self._serial is None:
            raise DeviceError("the QEMU transport is closed")
        return self._serial

    def close(self) -> None:
        """Stop QEMU (its whole process group) and remove its temporary directory; safe to call twice."""
        try:
            if self._serial is not None:
                self._serial.close()
                self._serial = None
        finally:
            if self._proc is not None:
                cleanup.stop(self._proc)
            cleanup.remove_dir(self._dir)


def qemu_system_reset(transport) -> None:
    """Reset the emulated board behind a QemuTransport (QMP system_reset), as a reset button would."""
    inner = getattr(transport, "inner", transport)
    reset = getattr(inner, "reset", None)
    if not callable(reset):
        raise DeviceError("this transport cannot reset its device")
    reset()
