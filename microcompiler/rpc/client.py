"""The host side of the RPC protocol: a session with a device running the RPC server.

A :class:`Session` does the handshake, numbers its requests, retries them when a reply is lost or
damaged (the device answers a repeated request from its reply cache and never executes it twice),
notices a device reset, and forwards the device's log lines. Protocol: docs/rpc.md.
"""

from __future__ import annotations

import logging
import random
import struct
import threading
import time

import numpy as np

from microcompiler.errors import DeviceError, MicrocompilerError
from microcompiler.rpc import protocol as P
from microcompiler.rpc.executor import GraphExecutor
from microcompiler.rpc.framing import Damaged, FrameDecoder, encode_frame
from microcompiler.rpc.handles import DeviceBuffer, RemoteFunction, TimeResult
from microcompiler.transport.base import Transport, check_timeout

DEVICE_LOG = logging.getLogger("microcompiler.device")
__all__ = ["DeviceBuffer", "RemoteFunction", "TimeResult", "Session", "RequestError"]


class DeviceResetError(DeviceError):
    """The device rebooted (or lost the session) while a session was open."""


class RemoteError(DeviceError):
    """The device executed a request and reported a failure status."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class SessionClosedError(DeviceError):
    """A request on a session that was closed or broken by an earlier error."""


class RequestError(MicrocompilerError):
    """A request the protocol cannot carry (too large, too many arguments, a count past the device's
    limit): refused before anything is sent, so the session stays open and in step."""


# The most runs one TIME request may ask: MC_RPC_MAX_TIMED_RUNS in crt/include/microcompiler/rpc_server.h
MAX_TIMED_RUNS = 1_000_000


class Session:
    """An open RPC session over a transport (write/read/close).

    timeout: seconds to wait for each reply, retries included (a silent device fails after this).
    call_timeout: once the device says a CALL/TIME is running (BUSY), seconds to wait for its end.
    retry_interval: seconds without a reply before the request is sent again; None (default) adapts it
    to the measured round-trip time (4 x smoothed RTT, 0.05 to 2 s), doubling after each resend.
    """

    def __init__(
        self,
        transport,
        *,
        timeout: float = 5.0,
        call_timeout: float = 300.0,
        retry_interval: float | None = None,
        owns_transport: bool = True,
        plan=None,
        name: str = "device",
    ):
        self.transport = transport
        try:
            timeout, call_timeout = check_timeout(timeout, "timeout"), check_timeout(call_timeout, "call_timeout")
            if retry_interval is not None:
                retry_interval = check_timeout(retry_interval, "retry_interval")
        except BaseException:
            if owns_transport:
                transport.close()
            raise
        self.timeout, self.call_timeout, self.retry_interval = timeout, call_timeout, retry_interval
        self._chunk_limit = 0  # adaptive WRITE/READ size; 0: the device's max payload
        self.last_resends = 0
        self._srtt = 0.1  # smoothed round-trip time, seconds (a cautious guess until measured)
        self.owns_transport = owns_transport
        self.plan = plan  # a ModelPlan, when the session knows which model the device holds
        self.name = name
        self.logs: list[str] = []
        self.cleanup: list = []  # called after close (e.g. removing a temporary project)
        self.stats = {"requests": 0, "resends": 0, "damaged_frames": 0, "stale_replies": 0}
        self._decoder = FrameDecoder()
        self._rng = random.Random()
        self._session_id = 0
        self._seq = 0
        self._functions: dict[str, RemoteFunction] = {}
        self._broken: str | None = None
        self._sent = False  # whether the frame of the request under way went out
        self.lock = threading.RLock()  # one request (or one multi-request operation) at a time
        self.device: P.HelloReply | None = None
        try:
            self.start()
        except BaseException:
            if owns_transport:
                transport.close()
            raise

    # ---- session layer ----

    def start(self) -> P.HelloReply:
        """Open a (new) session: the device frees everything the previous session allocated."""
        with self.lock:
            return self._start()

    def _start(self) -> P.HelloReply:
        previous = self._session_id
        while self._session_id in (0, previous):
            self._session_id = self._rng.randrange(1, 0x10000)
        self._seq = 0
        self._functions.clear()
        self._broken = None
        nonce = self._rng.getrandbits(32)
        reply = self._exchange(P.HELLO, 0, P.HELLO_BODY.pack(P.VERSION, nonce), handshake_nonce=nonce)
        if reply.status == P.STATUS_VERSION:
            theirs = reply.body[0] if reply.body else "?"
            raise DeviceError(
                f"the device speaks RPC protocol version {theirs}, this microcompiler speaks "
                f"{P.VERSION}; rebuild the firmware with this microcompiler"
            )
        self._check(reply, "HELLO")
        if len(reply.body) != P.HELLO_REPLY.size:
            raise DeviceError(
                f"malformed handshake reply ({len(reply.body)} bytes); is this a microcompiler "
                "RPC server of the same version?"
            )
        self.device = P.HelloReply.unpack(reply.body)
        self._check_model()
        return self.device

    def _check_model(self) -> None:
        self.check_model(self.plan)

    def check_model(self, plan) -> None:
        """Refuse a device whose firmware does not hold the plan's compiled model: HELLO names the
        firmware's (first) model; a firmware with several answers MODEL with each one's fingerprint."""
        expected = plan.info.fingerprint or None if plan is not None else None
        if expected is None or self.device.model_fingerprint == int(expected, 16):
            return
        found = self.model_fingerprint(plan.name)
        if found == int(expected, 16):
            return
        self._broken = "the device holds another model"
        if found is None:
            found = self.device.model_fingerprint
        what = f"fingerprint {found:016x}" if found else "no model fingerprint"
        raise DeviceError(
            f"the {self.name} runs firmware of another model ({what}; {plan.name} as compiled "
            f"now has {expected}): build and flash this model's host-driven firmware, or use "
            "the model that firmware was built from"
        )

    def model_fingerprint(self, name: str) -> int | None:
        """The fingerprint of the device's model called ``name`` (None: the firmware has none by that name)."""
        reply = self._request(P.MODEL, name.encode())
        if reply.status == 2:  # MC_ERR_NOT_FOUND
            return None
        self._check(reply, f"MODEL {name}")
        if len(reply.body) != P.MODEL_REPLY.size:
            raise DeviceError(f"malformed MODEL reply ({len(reply.body)} bytes)")
        return P.MODEL_REPLY.unpack(reply.body)[0]

    reconnect = start

    def close(self) -> None:
        """End the session (the device frees its memory) and close the transport if we own it."""
        with self.lock:
            self._close()

    def _close(self) -> None:
        try:
            if self._broken is None and self.device is not None:
                try:
                    self._request(P.BYE)
                except DeviceError:
                    pass
                self._broken = "the session was closed"
        finally:
            if self.owns_transport:
                self.transport.close()
            while self.cleanup:
                self.cleanup.pop()()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _check_size(self, type_: int, body: bytes) -> None:
        """Refuse, before sending, a request larger than the device takes (its max payload, HELLO)."""
        most = self.device.max_payload if self.device is not None else 0xFFFF
        size = P.REQUEST_HEADER.size + len(body)
        if size > most:
            name = P.REQUEST_NAMES.get(type_, f"0x{type_:02x}")
            raise RequestError(
                f"a {name} request of {size:,} bytes does not fit the {self.name}'s packets ({most:,} bytes, "
                f"MC_RPC_MAX_PAYLOAD); nothing was sent and the session stays open"
            )

    def _request(self, type_: int, body: bytes = b"") -> P.Reply:
        with self.lock:
            if self._broken is not None:
                raise SessionClosedError(f"{self._broken}; open a new session (session.reconnect())")
            self._check_size(type_, body)
            seq = (self._seq + 1) & 0xFFFF
            self._sent = False
            try:
                return self._exchange(type_, seq, body)
            except DeviceError as exc:  # the device may or may not have executed it: out of step
                if self._broken is None:
                    self._broken = f"the session broke on an earlier error ({exc})"
                raise
            finally:
                if self._sent:  # the device saw this number: the next request takes the one after it
                    self._seq = seq

    def _exchange(self, type_: int, seq: int, body: bytes, handshake_nonce: int | None = None) -> P.Reply:
        frame = encode_frame(P.request(type_, self._session_id, seq, body))
        name = P.REQUEST_NAMES.get(type_, f"0x{type_:02x}")
        self.stats["requests"] += 1
        start = time.monotonic()
        deadline = start + self.timeout
        busy = False
        damaged_here = 0
        self.transport.write(frame)
        self._sent = True
        last_send = start
        interval = base_interval = self._initial_retry_interval()
        resends = 0
        early_ok = True  # one immediate resend per send, on a sign that it (or its reply) was damaged
        noisy = False  # a NAK or damaged frame since the last send: the device is alive, the link noisy
        self.last_resends = 0
        while True:
            now = time.monotonic()
            if now >= deadline:
                raise self._timeout_error(name, now - start, damaged_here, busy)
            resend_at = last_send + (max(1.0, interval) if busy else interval)
            if now >= resend_at:
                self._resend(frame)
                self.last_resends = resends = resends + 1
                # silence may mean a slow device: back off; noise means a live device: keep the pace
                interval = base_interval if noisy else min(2.0, interval * 2)
                last_send, early_ok, noisy = now, True, False
                continue
            data = self.transport.read(max(1, self.transport.pending()), min(deadline, resend_at) - now)
            items = self._decoder.feed(data)
            if data:
                self._check_crash(self._decoder.pending)
            for item in items:
                msg = None if isinstance(item, Damaged) else P.Reply.parse(item)
                if msg is None or msg.type == P.NAK:
                    if msg is None:  # maybe our reply
                        self.stats["damaged_frames"] += 1
                        damaged_here += 1
                        self._check_crash(item.raw if isinstance(item, Damaged) else b"")
                    noisy = True
                    if early_ok and not busy:  # (NAK: the device got a damaged frame, maybe our request)
                        self._resend(frame)
                        self.last_resends = resends = resends + 1
                        last_send, early_ok, noisy = time.monotonic(), False, False
                        interval = base_interval
                    continue
                if msg.type == P.LOG:
                    self._on_log(msg.body)
                elif msg.type == P.BOOT:
                    if handshake_nonce is None:
                        raise self._reset_error("it announced a new boot")
                    self._resend(frame)  # it (re)started: our HELLO may have come too early
                    resends += 1
                    last_send = time.monotonic()
                elif msg.type == P.BUSY:
                    if msg.session == self._session_id and msg.seq == seq and not busy:
                        busy = True
                        deadline = max(deadline, time.monotonic() + self.call_timeout)
                elif msg.type == type_ | P.REPLY_BIT and msg.session == self._session_id and msg.seq == seq:
                    if (
                        handshake_nonce is not None
                        and msg.status == P.OK
                        and (len(msg.body) < 5 or struct.unpack_from("<I", msg.body, 1)[0] != handshake_nonce)
                    ):
                        self.stats["stale_replies"] += 1
                        continue
                    if resends == 0 and not busy and type_ not in (P.CALL, P.TIME):  # Karn: clean samples only
                        self._srtt += (time.monotonic() - start - self._srtt) / 8
                    if msg.status == P.STATUS_NO_SESSION:
                        raise self._no_session_error(msg.body)
                    return msg
                else:
                    self.stats["stale_replies"] += 1

    def _check_crash(self, raw: bytes) -> None:
        """Bare-metal firmware prints an MC-FAULT/MC-ABORT line when it crashes: not a frame, but telling."""
        for marker in (b"MC-FAULT", b"MC-ABORT"):
            at = raw.find(marker)
            if at >= 0 and b"\n" in raw[at:]:
                line = raw[at:].split(b"\n")[0].decode(errors="replace").strip()
                raise DeviceError(f"the {self.name} crashed: {line}")

    def _resend(self, frame: bytes) -> None:
        self.transport.write(frame)
        self.stats["resends"] += 1

    def _initial_retry_interval(self) -> float:
        if self.retry_interval is not None:
            return self.retry_interval
        return min(2.0, max(0.05, 4 * self._srtt))

    def _timeout_error(self, name: str, waited: float, damaged: int, busy: bool) -> DeviceError:
        if busy:
            return DeviceError(
                f"the {self.name} started {name} but did not finish within {waited:.1f} s "
                f"(call_timeout={self.call_timeout:g} s); the function may hang"
            )
        if damaged:
            return DeviceError(
                f"no valid reply to {name} from the {self.name} within {waited:.1f} s: "
                f"{damaged} damaged frame(s) arrived; the serial link corrupts data (check "
                "the cable and the baud rate)"
            )
        hint = getattr(self.transport, "silence_hint", Transport.silence_hint.__get__(self.transport))
        return DeviceError(f"the {self.name} did not answer {name} within {waited:.1f} s; {hint()}")

    def _no_session_error(self, body: bytes) -> DeviceError:
        """The device does not know our session: it reset, or another program opened a session."""
        nonce, open_session = P.NO_SESSION_BODY.unpack(body) if len(body) == P.NO_SESSION_BODY.size else (None, 0)
        if self.device is not None and nonce is not None and nonce != self.device.boot_nonce:
            return self._reset_error(f"its boot nonce changed from 0x{self.device.boot_nonce:08x} to 0x{nonce:08x}")
        if open_session:
            self._broken = "another program opened a session on the device"
            return DeviceError(
                f"the {self.name} now serves another session (0x{open_session:04x}): another "
                "program connected to it; open a new session (session.reconnect())"
            )
        return self._reset_error("it has no session open: it restarted")

    def _reset_error(self, why: str) -> DeviceResetError:
        self._broken = f"the {self.name} reset during the session"
        return DeviceResetError(
            f"device reset: the {self.name} reset during the session ({why}); "
            "open a new session (session.reconnect()) and set up its memory again"
        )

    def _on_log(self, body: bytes) -> None:
        line = body.decode("utf-8", errors="replace").rstrip("\n")
        self.logs.append(line)
        DEVICE_LOG.info("%s", line)

    def _check(self, reply: P.Reply, what: str) -> P.Reply:
        if reply.status != P.OK:
            raise RemoteError(f"the {self.name} refused {what}: {P.status_name(reply.status)}", reply.status)
        return reply

    def poll_logs(self, seconds: float = 0.05) -> list[str]:
        """Read whatever the device sent (log lines) for a moment; returns the new log lines."""
        before = len(self.logs)
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            for item in self._decoder.feed(self.transport.read(max(1, self.transport.pending()), left)):
                msg = None if isinstance(item, Damaged) else P.Reply.parse(item)
                if msg is not None and msg.type == P.LOG:
                    self._on_log(msg.body)
                elif msg is not None and msg.type == P.BOOT and self.device is not None:
                    raise self._reset_error("it announced a new boot")
        return self.logs[before:]

    # ---- messages ----

    @property
    def max_payload(self) -> int:
        return self.device.max_payload

    def ping(self, data: bytes = b"") -> bytes:
        """Echo data through the device (no session state changes; data up to max_payload - 10 bytes)."""
        with self.lock:
            if self._broken is not None:
                raise SessionClosedError(self._broken)
            tag = struct.pack("<I", self._rng.getrandbits(32))  # PING is not sequenced: match by tag
            self._check_size(P.PING, tag + bytes(data))
            while True:
                reply = self._check(self._exchange(P.PING, self._seq, tag + bytes(data)), "PING")
                if reply.body[:4] == tag:
                    return reply.body[4:]
                self.stats["stale_replies"] += 1

    @property
    def is_open(self) -> bool:
        """False once the session was closed or broke on an earlier error (then ``reconnect()``)."""
        return self._broken is None

    def lookup(self, name: str) -> RemoteFunction:
        """The device function called ``name`` (DeviceError if it has none)."""
        with self.lock:
            return self._lookup(name)

    def _lookup(self, name: str) -> RemoteFunction:
        if not isinstance(name, str) or not name:
            raise RequestError(f"a device function's name is a non-empty string, not {name!r}"[:200])
        if name not in self._functions:
            encoded = name.encode()
            if self.device is not None and P.REQUEST_HEADER.size + len(encoded) > self.device.max_payload:
                raise RequestError(
                    f"no device function has a name of {len(encoded):,} bytes ('{name[:30]}...'): the {self.name}'s "
                    f"packets hold {self.device.max_payload:,} bytes; nothing was sent and the session stays open"
                )
            reply = self._request(P.LOOKUP, encoded)
            if reply.status == 2:
                raise RemoteError(
                    f"the {self.name} has no function '{name}'; was the firmware built from this model?", reply.status
                )
            self._check(reply, f"LOOKUP {name}")
            self._functions[name] = RemoteFunction(self, struct.unpack("<H", reply.body)[0], name)
        return self._functions[name]

    __getitem__ = lookup

    def function_names(self) -> list[str]:
        with self.lock:
            return [
                self._check(self._request(P.FUNCTION_NAME, struct.pack("<H", k)), "FUNCTION_NAME").body.decode(
                    errors="replace"
                )
                for k in range(self.device.function_count)
            ]

    def alloc(self, nbytes: int) -> DeviceBuffer:
        if not 0 < nbytes < 2**32:
            raise ValueError(f"cannot allocate {nbytes} bytes")
        reply = self._request(P.ALLOC, struct.pack("<I", nbytes))
        if reply.status == 3:
            raise RemoteError(
                f"the {self.name} is out of RPC memory: {nbytes} bytes requested, pool "
                f"{self.device.pool_bytes} bytes (free some buffers or rebuild with a bigger "
                "MC_RPC_POOL_BYTES)",
                reply.status,
            )
        self._check(reply, f"ALLOC {nbytes}")
        return DeviceBuffer(self, struct.unpack("<H", reply.body)[0], nbytes)

    def upload(self, array: np.ndarray) -> DeviceBuffer:
        """A new device buffer holding a copy of array."""
        raw = np.ascontiguousarray(array).tobytes()
        buf = self.alloc(max(1, len(raw)))
        buf.write(raw)
        return buf

    def free(self, handle: int) -> None:
        self._check(self._request(P.FREE, struct.pack("<H", handle)), "FREE")

    def _chunk(self, most: int) -> int:
        """Bytes per WRITE/READ: the packet size, smaller while the link damages frames."""
        return max(1, min(most, self._chunk_limit or most))

    def _adapt_chunk(self, most: int) -> None:
        # Big frames are the likeliest to be hit on a noisy link: halve after trouble, regrow slowly.
        current = self._chunk_limit or most
        self._chunk_limit = max(64, current // 2) if self.last_resends else min(most, current + 64)

    def write_memory(self, handle: int, offset: int, data: bytes) -> None:
        with self.lock:  # the chunks in a row, and the chunk size, are this copy's
            self._write_memory(handle, offset, data)

    def _write_memory(self, handle: int, offset: int, data: bytes) -> None:
        most = self.max_payload - P.REQUEST_HEADER.size - P.WRITE_HEADER.size
        start = 0
        while start < len(data):
            part = data[start : start + self._chunk(most)]
            self._check(
                self._request(P.WRITE, P.WRITE_HEADER.pack(handle, offset + start) + part),
                f"WRITE of {len(part)} bytes at offset {offset + start}",
            )
            self._adapt_chunk(most)
            start += len(part)

    def read_memory(self, handle: int, offset: int, nbytes: int) -> bytes:
        with self.lock:
            return self._read_memory(handle, offset, nbytes)

    def _read_memory(self, handle: int, offset: int, nbytes: int) -> bytes:
        most = self.max_payload - P.REPLY_HEADER.size
        out = bytearray()
        while len(out) < nbytes:
            n = min(self._chunk(most), nbytes - len(out))
            reply = self._check(
                self._request(P.READ, P.READ_BODY.pack(handle, offset + len(out), n)),
                f"READ of {n} bytes at offset {offset + len(out)}",
            )
            if len(reply.body) != n:
                raise DeviceError(f"READ returned {len(reply.body)} bytes instead of {n}")
            self._adapt_chunk(most)
            out += reply.body
        return bytes(out)

    def _function(self, function) -> RemoteFunction:
        return function if isinstance(function, RemoteFunction) else self.lookup(function)

    def _call_body(self, head: bytes, args, what: str) -> bytes:
        """A CALL or TIME body, refused here (one line, nothing sent) when the device cannot take it."""
        if self.device is not None and len(args) > self.device.max_args:
            raise RequestError(
                f"{what} passes {len(args)} arguments; the device's firmware takes at most "
                f"{self.device.max_args} per call: rebuild it from this model (create the project again)"
            )
        try:
            body = head + P.encode_args(args)
        except (TypeError, ValueError, struct.error) as exc:
            raise RequestError(f"{what}: {exc}; nothing was sent") from None
        size = P.REQUEST_HEADER.size + len(body)
        if size > self.max_payload:
            raise RequestError(
                f"{what} with {len(args)} arguments is a {size}-byte message, more than the device's "
                f"MC_RPC_MAX_PAYLOAD ({self.max_payload}): build the firmware with -DMC_RPC_MAX_PAYLOAD={size} "
                "or more (at most 4000)"
            )
        return body

    def call(self, function, *args) -> int:
        """Run a device function once with args; returns the timer ticks it took on the device."""
        fn = self._function(function)
        what = f"CALL {fn.name}"
        reply = self._check(self._request(P.CALL, self._call_body(struct.pack("<H", fn.id), args, what)), what)
        return P.CALL_REPLY.unpack(reply.body)[0]

    def time(self, function, number: int, *args) -> tuple[int, int]:
        """Run a function number times back to back on the device: (total ticks, timer hz)."""
        if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= MAX_TIMED_RUNS:
            raise RequestError(
                f"TIME runs a function 1 to {MAX_TIMED_RUNS:,} times (MC_RPC_MAX_TIMED_RUNS), not {number!r}; "
                "nothing was sent"
            )
        fn = self._function(function)
        what = f"TIME {fn.name} x{number}"
        body = self._call_body(struct.pack("<HI", fn.id, number), args, what)
        return P.TIME_REPLY.unpack(self._check(self._request(P.TIME, body), what).body)

    def time_evaluator(self, function, number: int = 10, repeat: int = 3):
        """A callable f(*args) -> TimeResult: ``repeat`` measurements of ``number`` runs each, on device."""
        if number < 1 or repeat < 1:
            raise ValueError("number and repeat must be at least 1")
        fn = self._function(function)

        def evaluate(*args) -> TimeResult:
            ticks, hz = [], 0
            with self.lock:  # the repeats in a row
                for _ in range(repeat):
                    total, hz = self.time(fn, number, *args)
                    ticks.append(total)
            return TimeResult(tuple(ticks), number, hz)

        return evaluate

    def executor(self, plan=None) -> GraphExecutor:
        """A host-driven executor of the model on the device (plan: a ModelPlan; default: the session's)."""
        if plan is not None and plan is not self.plan:
            self.check_model(plan)
        plan = plan if plan is not None else self.plan
        if plan is None:
            raise DeviceError(
                "this session does not know the device's model: connect to a project directory "
                "or pass session.executor(ModelPlan.load(...))"
            )
        return GraphExecutor(self, plan)
