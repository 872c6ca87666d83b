"""Shared helpers for tests/test_rpc_*.py: golden frames, the hand-written test server, raw links."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from microcompiler import resources
from microcompiler.host import compiler
from microcompiler.rpc.framing import Damaged, FrameDecoder
from microcompiler.transport.subprocess import SubprocessTransport

TESTS = Path(__file__).resolve().parent

# Golden frames: (payload hex, frame hex). Computed independently of microcompiler's code (a bitwise
# CRC-16/CCITT-FALSE, escaping by hand) and printed in docs/rpc.md; tests/test_rpc_docs.py checks both agree.
GOLDEN_FRAMES = [
    ("", "7e 00 00 0f 1d 7e"),
    ("31 32 33 34 35 36 37 38 39", "7e 09 00 31 32 33 34 35 36 37 38 39 0b 9f 7e"),
    ("7e 7d 00", "7e 03 00 7d 5e 7d 5d 00 d2 42 7e"),
    ("2a", "7e 01 00 2a 84 7d 5e 7e"),
    ("03 00 00 01 00 68 69", "7e 07 00 03 00 00 01 00 68 69 e3 78 7e"),
    ("83 00 00 01 00 00 68 69", "7e 08 00 83 00 00 01 00 00 68 69 db 4b 7e"),
    ("01 34 12 00 00 03 0d f0 fe ca", "7e 0a 00 01 34 12 00 00 03 0d f0 fe ca cf 50 7e"),
]
GOLDEN_PING_REQUEST = bytes.fromhex(GOLDEN_FRAMES[4][1])
GOLDEN_PING_REPLY = bytes.fromhex(GOLDEN_FRAMES[5][1])

SANITIZE = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]


def build_test_server(out: Path) -> Path:
    """tests/rpc/test_server.c (hand-written registry) + the RPC server + POSIX platform, with sanitizers."""
    crt = resources.crt_dir()
    exe = Path(out) / "rpc_test_server"
    sources = [
        TESTS / "rpc" / "test_server.c",
        crt / "src/rpc_server.c",
        crt / "src/rpc_framing.c",
        crt / "src/status.c",
        crt / "platform/posix/platform.c",
    ]
    cmd = [*compiler(), *STRICT, *SANITIZE, f"-I{crt / 'include'}", *map(str, sources), "-o", str(exe)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return exe


class RawLink:
    """Frames in and out of a transport without a session: for golden and protocol-level tests."""

    def __init__(self, transport):
        self.transport = transport
        self.decoder = FrameDecoder()
        self.frames: list[bytes] = []

    def send(self, data: bytes) -> None:
        self.transport.write(data)

    def read_raw(self, seconds: float) -> bytes:
        out = bytearray()
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            out += self.transport.read(max(1, self.transport.pending()), left)
        return bytes(out)

    def next_frame(self, timeout: float = 5.0, skip_types: tuple[int, ...] = (0x40, 0x41)) -> bytes:
        """The next valid payload that is not a BOOT/LOG message."""
        deadline = time.monotonic() + timeout
        while True:
            while self.frames:
                frame = self.frames.pop(0)
                if frame and frame[0] not in skip_types:
                    return frame
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no frame from the device")
            data = self.transport.read(max(1, self.transport.pending()), left)
            self.frames += [f for f in self.decoder.feed(data) if not isinstance(f, Damaged)]


def start_server(exe: Path) -> SubprocessTransport:
    return SubprocessTransport([str(exe)])
