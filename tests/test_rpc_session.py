"""The RPC session against the C server with a hand-written registry (built with ASan and UBSan)."""

from __future__ import annotations

import dataclasses
import os
import re
import struct
import threading
import time

import numpy as np
import pytest
from rpc_support import RawLink, build_test_server, start_server

from microcompiler.errors import DeviceError
from microcompiler.rpc import RemoteError, RequestError, Session
from microcompiler.rpc import protocol as P
from microcompiler.rpc.framing import encode_frame


@pytest.fixture(scope="module")
def server_exe(tmp_path_factory):
    return build_test_server(tmp_path_factory.mktemp("rpc_server"))


@pytest.fixture
def session(server_exe):
    with Session(start_server(server_exe), timeout=3.0) as s:
        yield s


def test_handshake_advertises_the_device(session):
    d = session.device
    assert d.version == P.VERSION and d.max_payload == 1024 and d.pool_bytes == 16384
    assert d.timer_hz == 1_000_000_000 and d.function_count == 6 and d.boot_nonce != 0
    assert session.function_names() == ["add_scale", "increment", "spin", "sleep_ms", "say_hello", "crash"]
    assert session.ping(b"abc" * 100) == b"abc" * 100


def test_typed_arguments_reach_the_function(session):
    x = np.arange(-5, 300, dtype=np.int32)
    src = session.upload(x)
    dst = session.alloc(x.size * 4)
    session.call("add_scale", src, 7, 0.5, dst, int(x.size))
    np.testing.assert_array_equal(dst.read_array(np.float32, x.shape), ((x + 7) * np.float32(0.5)).astype(np.float32))
    # a tensor argument may point inside a buffer
    dst2 = session.alloc(8)
    session.call("add_scale", src.at(4 * 10), -1, 2.0, dst2, 2)
    np.testing.assert_array_equal(dst2.read_array(np.float32, (2,)), [(x[10] - 1) * 2.0, (x[11] - 1) * 2.0])


def test_a_call_the_device_cannot_take_is_refused_before_sending(session):
    """HELLO's max_args: MC_RPC_MAX_ARGS for a registry that does not say (max_args 0); a wider
    call, or one whose frame exceeds MC_RPC_MAX_PAYLOAD, is refused on the host in one line."""
    assert session.device.max_args == 16
    buf = session.alloc(64)
    buf.write(bytes(64))
    session.call("increment", *([buf] * 16))
    assert buf.read(1) == bytes([16])
    sent = session.stats["requests"]
    with pytest.raises(RequestError, match=r"^CALL increment passes 17 arguments; .* at most 16 per call"):
        session.call("increment", *([buf] * 17))
    # a device that took 200 arguments still could not receive 150 of them in one 1024-byte message
    session.device = dataclasses.replace(session.device, max_args=200)
    with pytest.raises(RequestError, match=r"1062-byte message, more than the device's MC_RPC_MAX_PAYLOAD \(1024\)"):
        session.time("increment", 1, *([buf] * 150))
    assert session.stats["requests"] == sent


def test_memory_copies_are_chunked_to_the_packet_size(session):
    data = os.urandom(5000)  # about five packets each way
    buf = session.alloc(6000)
    buf.write(data, offset=123)
    assert buf.read(5000, offset=123) == data
    assert session.stats["requests"] >= 1 + 5 + 5


def test_memory_errors_are_clear(session):
    with pytest.raises(RemoteError, match="out of RPC memory: 999999 bytes requested, pool 16384"):
        session.alloc(999_999)
    buf = session.alloc(16)
    with pytest.raises(ValueError, match="overflows"):
        buf.write(b"x" * 17)
    with pytest.raises(RemoteError, match="MC_ERR_INVALID_ARGUMENT"):
        session.read_memory(buf.handle, 10, 7)  # past the end, checked by the device
    buf.free()
    with pytest.raises(RemoteError, match="MC_ERR_INVALID_ARGUMENT"):
        session.read_memory(buf.handle, 0, 1)  # a stale handle
    with pytest.raises(RemoteError, match="no function 'nope'"):
        session.lookup("nope")
    # freed memory is reused; the pool really is a fixed size
    bufs = [session.alloc(4096) for _ in range(4)]
    with pytest.raises(RemoteError):
        session.alloc(8)
    bufs[1].free()
    session.alloc(4000)


def test_time_evaluator_measures_on_the_device(session):
    small = session.time_evaluator("spin", number=5, repeat=3)(1000)
    big = session.time_evaluator("spin", number=5, repeat=3)(1_000_000)
    assert small.number == 5 and len(small.ticks) == 3 and small.timer_hz == 1_000_000_000
    assert big.mean > 10 * small.mean > 0
    assert session.call("spin", 10) >= 0  # a single call reports its ticks too


def test_long_calls_are_waited_for_and_logs_are_forwarded(server_exe):
    with Session(start_server(server_exe), timeout=0.5, call_timeout=10) as s:
        t0 = time.monotonic()
        s.call("sleep_ms", 1500)  # longer than timeout: the device said BUSY
        assert time.monotonic() - t0 >= 1.5
        s.call("say_hello")
        assert "hello from the device" in s.logs
    with Session(start_server(server_exe), timeout=0.5, call_timeout=0.5) as s:
        with pytest.raises(DeviceError, match="started CALL but did not finish"):
            s.call("sleep_ms", 3000)


def test_a_crashing_device_is_reported(server_exe):
    with Session(start_server(server_exe), timeout=2.0) as s:
        with pytest.raises(DeviceError, match="exited"):
            s.call("crash")


def test_a_repeated_request_is_answered_but_not_executed_twice(server_exe):
    with start_server(server_exe) as transport:
        link = RawLink(transport)
        sid = 0x4242
        link.send(encode_frame(P.request(P.HELLO, sid, 0, P.HELLO_BODY.pack(P.VERSION, 1))))
        assert link.next_frame()[5] == P.OK
        link.send(encode_frame(P.request(P.ALLOC, sid, 1, struct.pack("<I", 4))))
        handle = struct.unpack_from("<H", link.next_frame(), 6)[0]
        call = encode_frame(P.request(P.CALL, sid, 2, struct.pack("<HB", 1, 1) + struct.pack("<BHI", 3, handle, 0)))
        for _ in range(3):  # the host "retries" twice
            link.send(call)
        replies = [link.next_frame(skip_types=(0x40, 0x41, 0x42)) for _ in range(3)]
        assert all(r[:6] == replies[0][:6] for r in replies)
        link.send(encode_frame(P.request(P.CALL, sid, 1, struct.pack("<HB", 1, 1) + struct.pack("<BHI", 3, handle, 0))))
        link.send(encode_frame(P.request(P.READ, sid, 3, P.READ_BODY.pack(handle, 0, 1))))
        reply = link.next_frame(skip_types=(0x40, 0x41, 0x42))  # the stale seq-1 CALL got no answer
        assert reply[0] == P.READ | P.REPLY_BIT and reply[6:] == b"\x01"  # incremented exactly once
        # a request in no session is refused with the device's boot nonce
        link.send(encode_frame(P.request(P.ALLOC, 0x999, 1, struct.pack("<I", 4))))
        reply = link.next_frame()
        assert reply[5] == P.STATUS_NO_SESSION and reply[10:12] == struct.pack("<H", sid)  # the open session


def test_a_version_mismatch_is_refused_clearly(server_exe):
    with start_server(server_exe) as transport:
        link = RawLink(transport)
        link.send(encode_frame(P.request(P.HELLO, 7, 0, P.HELLO_BODY.pack(9, 1))))
        reply = link.next_frame()
        assert reply[5] == P.STATUS_VERSION and reply[6] == P.VERSION
    original = P.VERSION
    try:
        P.VERSION = 9
        with pytest.raises(DeviceError, match=f"speaks RPC protocol version {original}, this microcompiler speaks 9"):
            Session(start_server(server_exe), timeout=2.0)
    finally:
        P.VERSION = original


def test_the_server_survives_garbage_and_serves_a_new_session(server_exe):
    rng = np.random.default_rng(1)
    with start_server(server_exe) as transport:
        link = RawLink(transport)
        link.send(rng.integers(0, 256, 50_000, dtype=np.uint8).tobytes())
        # garbage made of real message types and flags, framed validly with random bodies
        for _ in range(300):
            body = rng.integers(0, 256, int(rng.integers(0, 40)), dtype=np.uint8).tobytes()
            link.send(encode_frame(bytes([int(rng.integers(0, 16))]) + body))
        link.read_raw(0.3)
        with Session(transport, timeout=3.0, owns_transport=False) as s:
            assert s.ping(b"still alive") == b"still alive"
            buf = s.upload(np.arange(10, dtype=np.int32))
            assert buf.read_array(np.int32, (10,)).tolist() == list(range(10))


def test_another_program_taking_over_the_device_is_named(server_exe):
    transport = start_server(server_exe)
    with Session(transport, timeout=2.0) as first:
        first.alloc(8)
        with Session(transport, timeout=2.0, owns_transport=False) as second:
            with pytest.raises(DeviceError, match="now serves another session .* another program connected"):
                first.alloc(8)
            assert second.ping(b"x") == b"x"


# ---- issue 35 item 4: requests the protocol cannot carry, and a session shared between threads ----


@pytest.mark.parametrize("length", [3_000, 70_000])
def test_a_name_too_long_for_a_packet_is_refused_locally_and_the_session_stays_in_step(session, length):
    start = time.monotonic()
    with pytest.raises(RequestError) as caught:
        session.lookup("f" * length)
    message = str(caught.value)
    assert "\n" not in message and f"{length:,} bytes" in message and "nothing was sent" in message, message
    assert time.monotonic() - start < 1.0  # refused here, not after the reply timeout
    assert session.is_open and session.stats["requests"] == 1 + 0  # HELLO only: nothing went out
    assert session.lookup("increment").name == "increment"  # the next request is answered: in step
    x = session.upload(np.arange(4, dtype=np.int32))
    session.call("add_scale", x, 1, 1.0, x, 4)  # in place: x + 1 as float32 bits
    assert np.array_equal(x.read_array(np.float32, (4,)), [1, 2, 3, 4])


def test_other_requests_past_the_protocol_are_refused_before_sending(session):
    buf = session.alloc(16)
    for call, fragment in [
        (lambda: session.ping(b"x" * 5000), "a PING request of 5,009 bytes does not fit"),
        (lambda: session.time("increment", 10**12, buf), "TIME runs a function 1 to 1,000,000 times"),
        (lambda: session.time("increment", 0, buf), "TIME runs a function 1 to 1,000,000 times"),
        (
            lambda: session.call("increment", *([1] * 300)),
            "passes 300 arguments; the device's firmware takes at most 16 per call",
        ),
        (lambda: session.call("increment", 2**40), "integer argument 1099511627776 does not fit int32"),
        (lambda: session.model_fingerprint("m" * 2000), "a MODEL request of 2,005 bytes does not fit"),
    ]:
        with pytest.raises(RequestError, match=re.escape(fragment)):
            call()
        assert session.is_open
    session.call("increment", buf)  # still in step
    assert session.is_open


def test_a_request_that_fails_before_its_frame_leaves_uses_no_number(session, monkeypatch):
    """A frame that could not be written (here: the transport raises before writing) leaves the
    request number unused: the device, which executes only the next number, still answers."""
    real_write = session.transport.write
    calls = {"n": 0}

    def failing_write(data):
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyboardInterrupt  # e.g. Ctrl-C as the request was about to go out
        return real_write(data)

    monkeypatch.setattr(session.transport, "write", failing_write)
    with pytest.raises(KeyboardInterrupt):
        session.lookup("increment")
    assert session.lookup("increment").name == "increment" and session.is_open


def test_one_session_shared_by_four_threads_gives_every_result(session):
    """Each thread works on its own buffers through the one session; the lock keeps the requests of
    an operation together and the stream in step: every result is exact."""
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            rng = np.random.default_rng(t)
            for _ in range(25):
                x = rng.integers(-1000, 1000, size=64, dtype=np.int32)
                src, dst = session.upload(x), session.alloc(x.nbytes)
                session.call("add_scale", src, t, 0.5, dst, x.size)
                want = ((x + t) * np.float32(0.5)).astype(np.float32)
                assert np.array_equal(dst.read_array(np.float32, x.shape), want)
                src.free()
                dst.free()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not any(th.is_alive() for th in threads) and errors == [], errors
    assert session.is_open


def test_four_threads_share_one_model_session_and_every_output_is_tflms():
    """4 threads x 100 inferences through one executor of one host-driven session (issue 35's
    acceptance): every output equals the TFLite Micro interpreter's for that thread's input."""
    from oracle import tflm_run

    from microcompiler import api

    model = "examples/tiny_cnn/tiny_cnn_int8.tflite"
    rng = np.random.default_rng(35)
    xs = [rng.integers(-128, 128, size=(1, 16, 16, 1), dtype=np.int8) for _ in range(4)]
    want = [tflm_run(open(model, "rb").read(), [x])[0] for x in xs]
    assert len({w.tobytes() for w in want}) == 4  # a mix-up between threads would show
    errors: list[BaseException] = []
    with api.open_model(model) as session, session.executor() as ex:

        def work(t: int) -> None:
            try:
                for _ in range(100):
                    (y,) = ex(xs[t])
                    assert np.array_equal(y.reshape(want[t].shape), want[t])
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=300)
        assert not any(th.is_alive() for th in threads) and errors == [], errors[:1]
        assert session.is_open
