"""Transports that misbehave on purpose, for testing how RPC copes with a bad link or a dead device."""

from __future__ import annotations

import random
import time

from microcompiler.transport.base import Transport


class FaultyTransport(Transport):
    """Wraps a transport and, per byte, flips a bit, drops it or sends it twice, with given probabilities.

    directions: "both", "to_device" (writes) or "from_device" (reads). Seeded, so failures reproduce.
    ``counts`` says how many faults of each kind were injected.
    """

    def __init__(
        self,
        inner: Transport,
        *,
        flip: float = 0.0,
        drop: float = 0.0,
        duplicate: float = 0.0,
        seed: int = 0,
        directions: str = "both",
    ):
        if directions not in ("both", "to_device", "from_device"):
            raise ValueError(f"directions must be both, to_device or from_device, not {directions!r}")
        self.inner = inner
        self.flip, self.drop, self.duplicate = flip, drop, duplicate
        self.directions = directions
        self.rng = random.Random(seed)
        self.counts = {"flip": 0, "drop": 0, "duplicate": 0}
        self.enabled = True

    def _mangle(self, data: bytes) -> bytes:
        if not self.enabled:
            return data
        out = bytearray()
        for byte in data:
            r = self.rng.random()
            if r < self.drop:
                self.counts["drop"] += 1
                continue
            if r < self.drop + self.flip:
                self.counts["flip"] += 1
                out.append(byte ^ (1 << self.rng.randrange(8)))
                continue
            out.append(byte)
            if r < self.drop + self.flip + self.duplicate:
                self.counts["duplicate"] += 1
                out.append(byte)
        return bytes(out)

    def write(self, data: bytes) -> None:
        self.inner.write(self._mangle(data) if self.directions in ("both", "to_device") else data)

    def read(self, n: int, timeout: float) -> bytes:
        data = self.inner.read(n, timeout)
        return self._mangle(data) if self.directions in ("both", "from_device") else data

    def pending(self) -> int:
        return self.inner.pending()

    def close(self) -> None:
        self.inner.close()

    def silence_hint(self) -> str:
        return self.inner.silence_hint()

    def __getattr__(self, name):  # restart() and the like of the wrapped transport
        return getattr(self.inner, name)


class SilentTransport(Transport):
    """A device that never answers: writes vanish, reads time out."""

    def __init__(self):
        self.written = 0

    def write(self, data: bytes) -> None:
        self.written += len(data)

    def read(self, n: int, timeout: float) -> bytes:
        time.sleep(max(0.0, timeout))
        return b""

    def close(self) -> None:
        pass
