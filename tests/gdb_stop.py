"""Stop a QEMU guest at a function of its firmware, through QEMU's gdb stub (the GDB remote serial
protocol: $packet#checksum, each acknowledged with '+'). For tests that need the guest held at an
exact point, such as tests/test_zephyr.py's start-up race."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path


def function_address(elf: Path, name: str) -> int:
    """The address of a function in an Arm ELF (the Thumb bit cleared), from arm-none-eabi-nm."""
    out = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, timeout=60, check=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[2] == name:
            return int(fields[0], 16) & ~1
    raise AssertionError(f"{elf.name} has no symbol {name}")


class GdbStub:
    """A client of QEMU's gdb stub on a unix socket (QEMU stops the guest when it connects)."""

    def __init__(self, path: Path, timeout: float = 30.0):
        deadline = time.monotonic() + timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        while True:
            try:
                self.sock.connect(str(path))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self._buffer = b""
        self.request("?")  # why it stopped; QEMU may add stop replies of its own: drop them all
        self._drain(0.3)

    def _drain(self, quiet: float) -> None:
        timeout = self.sock.gettimeout()
        self.sock.settimeout(quiet)
        try:
            while self.sock.recv(4096):
                pass
        except (TimeoutError, BlockingIOError):
            pass
        finally:
            self.sock.settimeout(timeout)
            self._buffer = b""

    def request(self, command: str) -> str:
        """Send one packet and return the reply packet's data."""
        checksum = sum(command.encode()) % 256
        self.sock.sendall(f"${command}#{checksum:02x}".encode())
        return self.reply()

    def reply(self) -> str:
        while True:
            start = self._buffer.find(b"$")
            end = self._buffer.find(b"#", start + 1) if start >= 0 else -1
            if start >= 0 and end >= 0 and len(self._buffer) >= end + 3:
                data = self._buffer[start + 1 : end].decode()
                self._buffer = self._buffer[end + 3 :]
                self.sock.sendall(b"+")
                return data
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("QEMU's gdb stub closed the connection")
            self._buffer += chunk

    def close(self) -> None:
        self.sock.close()
