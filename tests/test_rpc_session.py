"""The RPC session against the C server with a hand-written registry (built with ASan and UBSan)."""

from __future__ import annotations

import dataclasses
import os
import struct
import time

import numpy as np
import pytest
from rpc_support import RawLink, build_test_server, start_server

from microcompiler.errors import DeviceError
from microcompiler.rpc import RemoteError, Session
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
    with pytest.raises(DeviceError, match=r"^CALL increment passes 17 arguments; .* at most 16 per call"):
        session.call("increment", *([buf] * 17))
    # a device that took 200 arguments still could not receive 150 of them in one 1024-byte message
    session.device = dataclasses.replace(session.device, max_args=200)
    with pytest.raises(DeviceError, match=r"1062-byte message, more than the device's MC_RPC_MAX_PAYLOAD \(1024\)"):
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
