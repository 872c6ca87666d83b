"""RPC framing: CRC catalogue values, golden frames (Python and C agree), and damage detection."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rpc_support import GOLDEN_FRAMES, GOLDEN_PING_REPLY, GOLDEN_PING_REQUEST, RawLink, build_test_server, start_server

from microcompiler.rpc import protocol as P
from microcompiler.rpc.framing import Damaged, FrameDecoder, crc16, encode_frame


def crc16_bitwise(data: bytes) -> int:
    """CRC-16/CCITT-FALSE straight from its definition: an independent check of the table version."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def test_crc_matches_the_catalogue():
    # reveng's CRC catalogue: CRC-16/IBM-3740 (alias CCITT-FALSE): check=0x29b1 for "123456789".
    assert crc16(b"123456789") == 0x29B1
    assert crc16(b"") == 0xFFFF
    # Two zero bytes from 0xFFFF give 0x1D0F, the initial value of CRC-16/SPI-FUJITSU (AUG-CCITT).
    assert crc16(b"\0\0") == 0x1D0F
    for data in (b"\x7e", bytes(range(256)), b"microcompiler" * 50):
        assert crc16(data) == crc16_bitwise(data)


@pytest.mark.parametrize("payload_hex,frame_hex", GOLDEN_FRAMES)
def test_golden_frames(payload_hex, frame_hex):
    payload, frame = bytes.fromhex(payload_hex), bytes.fromhex(frame_hex)
    assert encode_frame(payload) == frame
    assert FrameDecoder().feed(frame) == [payload]
    # the CRC inside the golden frame is the independent one
    body = len(payload).to_bytes(2, "little") + payload
    assert (
        crc16_bitwise(body).to_bytes(2, "little")
        == frame[1:-1].replace(b"\x7d\x5e", b"\x7e").replace(b"\x7d\x5d", b"\x7d")[-2:]
    )


def test_decoder_resynchronises_after_noise_and_split_input():
    frames = [bytes.fromhex(f) for _, f in GOLDEN_FRAMES]
    stream = b"boot banner\r\n" + frames[1] + b"\x7d\x7d junk" + b"".join(frames[2:])
    decoder = FrameDecoder()
    out = []
    for byte in stream:  # one byte at a time
        out += decoder.feed(bytes([byte]))
    valid = [f for f in out if not isinstance(f, Damaged)]
    assert valid == [bytes.fromhex(p) for p, _ in GOLDEN_FRAMES[1:]]
    assert sum(isinstance(f, Damaged) for f in out) == 2  # the banner and the junk


def test_oversized_frames_are_damaged():
    decoder = FrameDecoder(max_payload=8)
    assert isinstance(decoder.feed(encode_frame(bytes(9)))[0], Damaged)
    assert decoder.feed(encode_frame(bytes(8))) == [bytes(8)]


def _single_faults(frame: bytes):
    """Every frame made from ``frame`` by flipping one bit, dropping, or duplicating one byte."""
    for i in range(len(frame)):
        for bit in range(8):
            yield frame[:i] + bytes([frame[i] ^ (1 << bit)]) + frame[i + 1 :]
        yield frame[:i] + frame[i + 1 :]
        yield frame[:i] + frame[i : i + 1] + frame[i:]


@pytest.mark.parametrize("payload_hex,frame_hex", GOLDEN_FRAMES)
def test_every_single_fault_is_detected(payload_hex, frame_hex):
    payload, frame = bytes.fromhex(payload_hex), bytes.fromhex(frame_hex)
    for damaged in _single_faults(frame):
        for item in FrameDecoder().feed(damaged + b"\x7e"):
            # a fault may hit only the flags (then the frame is intact), never yield other data
            assert isinstance(item, Damaged) or item == payload, damaged.hex(" ")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.data())
def test_random_payloads_round_trip_and_single_faults_never_pass(payload, data):
    frame = encode_frame(payload)
    assert FrameDecoder().feed(frame) == [payload]
    i = data.draw(st.integers(0, len(frame) - 1))
    kind = data.draw(st.sampled_from(["flip", "drop", "dup"]))
    if kind == "flip":
        bad = frame[:i] + bytes([frame[i] ^ (1 << data.draw(st.integers(0, 7)))]) + frame[i + 1 :]
    elif kind == "drop":
        bad = frame[:i] + frame[i + 1 :]
    else:
        bad = frame[:i] + frame[i : i + 1] + frame[i:]
    for item in FrameDecoder().feed(bad + b"\x7e"):
        assert isinstance(item, Damaged) or item == payload


@pytest.fixture(scope="module")
def test_server(tmp_path_factory):
    return build_test_server(tmp_path_factory.mktemp("rpc_server"))


def test_c_server_answers_the_golden_ping_with_the_golden_reply(test_server):
    with start_server(test_server) as transport:
        link = RawLink(transport)
        link.send(b"line noise \x7d\x00\x7e")  # a damaged frame first: the server must shrug it off
        assert link.next_frame()[0] == 0x43  # (and say so: NAK)
        for byte in GOLDEN_PING_REQUEST:  # then the golden request, one byte per write
            link.send(bytes([byte]))
        assert link.next_frame() == bytes.fromhex(GOLDEN_FRAMES[5][0])
        # and the raw bytes on the wire are exactly the golden reply frame
        link.send(GOLDEN_PING_REQUEST)
        raw = link.read_raw(0.3)
        assert raw == GOLDEN_PING_REPLY


def test_c_server_sends_a_boot_frame_first(test_server):
    with start_server(test_server) as transport:
        link = RawLink(transport)
        boot = link.next_frame(skip_types=())
        assert boot[0] == 0x40 and boot[6] == P.VERSION  # BOOT, the protocol version
