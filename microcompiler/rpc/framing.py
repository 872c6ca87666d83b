"""RPC framing: CRC-16/CCITT-FALSE, byte stuffing, and a streaming frame decoder.

The Python twin of crt/src/rpc_framing.c. A frame on the wire (see docs/rpc.md)::

    0x7E | escaped( length:u16 LE | payload | crc:u16 LE ) | 0x7E

crc is CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no final XOR) over the length
and payload bytes. Inside the frame 0x7E and 0x7D are sent as 0x7D, byte ^ 0x20.
"""

from __future__ import annotations

import struct

FLAG = 0x7E
ESCAPE = 0x7D
ESCAPE_XOR = 0x20
OVERHEAD = 4  # length + crc


def _crc_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
        table.append(crc & 0xFFFF)
    return table


_CRC_TABLE = _crc_table()


def crc16(data: bytes, crc: int = 0xFFFF) -> int:
    """CRC-16/CCITT-FALSE: crc16(b"123456789") == 0x29B1."""
    for byte in data:
        crc = ((crc << 8) & 0xFFFF) ^ _CRC_TABLE[(crc >> 8) ^ byte]
    return crc


def _escape(data: bytes) -> bytes:
    return data.replace(b"\x7d", b"\x7d\x5d").replace(b"\x7e", b"\x7d\x5e")


def encode_frame(payload: bytes) -> bytes:
    """The bytes on the wire for one frame carrying payload."""
    if len(payload) > 0xFFFF:
        raise ValueError(f"payload of {len(payload)} bytes does not fit a frame (max 65535)")
    body = struct.pack("<H", len(payload)) + bytes(payload)
    body += struct.pack("<H", crc16(body))
    return bytes([FLAG]) + _escape(body) + bytes([FLAG])


class Damaged:
    """What the decoder yields for a frame that failed the escaping, length or CRC checks.

    raw: the first bytes received for it, as on the wire (text a crashing device printed shows here).
    """

    RAW_KEPT = 512

    def __init__(self, raw: bytes):
        self.raw = raw

    def __repr__(self) -> str:
        return f"Damaged({self.raw[:40]!r})"


class FrameDecoder:
    """Feed received bytes; get back payloads (bytes) of valid frames and Damaged markers.

    Mirrors mc_rpc_decoder_feed(): a flag ends a frame (empty frames are ignored); a frame that is
    longer than max_payload, escapes anything but a flag or an escape byte, or fails its length or
    CRC check is Damaged.
    """

    def __init__(self, max_payload: int = 0xFFFF):
        self.capacity = max_payload + OVERHEAD
        self._buffer = bytearray()
        self._escaped = False
        self._damaged = False
        self._raw = bytearray()

    def feed(self, data: bytes) -> list[bytes | Damaged]:
        out: list[bytes | Damaged] = []
        for byte in data:
            if byte == FLAG:
                result = self._finish()
                if result is not None:
                    out.append(result)
                continue
            if len(self._raw) < Damaged.RAW_KEPT:
                self._raw.append(byte)
            if self._damaged:
                continue
            if byte == ESCAPE:
                if self._escaped:
                    self._damaged = True
                self._escaped = True
                continue
            if self._escaped:
                byte ^= ESCAPE_XOR
                self._escaped = False
                if byte not in (FLAG, ESCAPE):
                    self._damaged = True
                    continue
            if len(self._buffer) >= self.capacity:
                self._damaged = True
                continue
            self._buffer.append(byte)
        return out

    @property
    def pending(self) -> bytes:
        """The first bytes of the frame being received (raw, as on the wire)."""
        return bytes(self._raw)

    def _finish(self) -> bytes | Damaged | None:
        frame, raw = bytes(self._buffer), bytes(self._raw)
        damaged = self._damaged or self._escaped
        self._buffer.clear()
        self._escaped = self._damaged = False
        self._raw.clear()
        if not frame and not damaged:
            return None
        if damaged or len(frame) < OVERHEAD:
            return Damaged(raw)
        (declared,) = struct.unpack_from("<H", frame)
        if declared != len(frame) - OVERHEAD or crc16(frame[:-2]) != struct.unpack_from("<H", frame, len(frame) - 2)[0]:
            return Damaged(raw)
        return frame[2:-2]
