"""Seed inputs for the RPC server fuzzer (tests/fuzz/rpc_server_fuzz.c): whole sessions.

Run as a script to write them: python tests/fuzz/seeds.py DIR
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from microcompiler.rpc import protocol as P  # noqa: E402
from microcompiler.rpc.framing import encode_frame  # noqa: E402

SESSION = 0x1234


def session_requests() -> list[bytes]:
    """A session that touches every message type (as the harness's fuzz registry numbers functions)."""
    s = SESSION
    tensor = lambda h, off=0: struct.pack("<BHI", P.ARG_TENSOR, h, off)  # noqa: E731
    return [
        P.request(P.PING, 0, 7, b"ping"),
        P.request(P.HELLO, s, 0, P.HELLO_BODY.pack(P.VERSION, 0xCAFEF00D)),
        P.request(P.LOOKUP, s, 1, b"copy_first_byte"),
        P.request(P.FUNCTION_NAME, s, 2, struct.pack("<H", 3)),
        P.request(P.ALLOC, s, 3, struct.pack("<I", 64)),  # handle 0x0001
        P.request(P.ALLOC, s, 4, struct.pack("<I", 16)),  # handle 0x0002
        P.request(P.WRITE, s, 5, P.WRITE_HEADER.pack(1, 4) + b"\x7e\x7d\x00\x01"),
        P.request(P.READ, s, 6, P.READ_BODY.pack(1, 0, 16)),
        P.request(P.CALL, s, 7, struct.pack("<HB", 1, 2) + tensor(1, 4) + tensor(2)),
        P.request(
            P.CALL,
            s,
            8,
            struct.pack("<HB", 2, 3)
            + tensor(1)
            + struct.pack("<Bi", P.ARG_INT32, -5)
            + struct.pack("<Bf", P.ARG_FLOAT32, 1.5),
        ),
        P.request(P.TIME, s, 9, struct.pack("<HIB", 0, 3, 1) + tensor(2, 15)),
        P.request(P.CALL, s, 9, struct.pack("<HB", 0, 0)),  # a retry: answered from the cache
        # the wide function: as many arguments as its registry's max_args (WIDE_ARGS), then one more
        P.request(P.CALL, s, 10, struct.pack("<HB", 3, 9) + b"".join(tensor(1, k) for k in range(9))),
        P.request(P.CALL, s, 11, struct.pack("<HB", 3, 10) + b"".join(tensor(1, k) for k in range(10))),
        P.request(P.FREE, s, 12, struct.pack("<H", 2)),
        P.request(P.READ, s, 13, P.READ_BODY.pack(2, 0, 1)),  # stale handle
        P.request(0x20, s, 14, b""),  # unknown request type
        P.request(P.BYE, s, 15, b""),
        P.request(P.ALLOC, s, 16, struct.pack("<I", 8)),  # after BYE: no session
    ]


def seeds() -> dict[str, bytes]:
    reqs = session_requests()
    framed = b"\x01" + b"".join(struct.pack("<H", len(r)) + r for r in reqs)
    raw = b"\x00" + b"".join(encode_frame(r) for r in reqs)
    noisy = b"\x00" + b"MC-FAULT junk\x7d\x7d\x7e" + encode_frame(reqs[0])[:-3] + b"\x7e" + encode_frame(reqs[1])
    return {"session_framed": framed, "session_raw": raw, "noisy_raw": noisy}


def write_seeds(directory: str | Path) -> Path:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in seeds().items():
        (directory / name).write_bytes(data)
    return directory


if __name__ == "__main__":
    print(write_seeds(sys.argv[1] if len(sys.argv) > 1 else "fuzz-seeds"))
