"""RPC message formats: the Python twin of the constants in crt/include/microcompiler/rpc_server.h.

Every payload starts with a header; all integers are little-endian (docs/rpc.md)::

    request  type:u8 session:u16 seq:u16 body
    reply    type:u8 session:u16 seq:u16 status:u8 body      (type = request type | 0x80)
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

VERSION = 3  # 2: HELLO's reply ends with the model fingerprint; 3: MODEL (a model's fingerprint by name)
REQUEST_HEADER = struct.Struct("<BHH")
REPLY_HEADER = struct.Struct("<BHHB")
REPLY_BIT = 0x80

# Requests (host to device)
HELLO = 0x01
BYE = 0x02
PING = 0x03
LOOKUP = 0x04
FUNCTION_NAME = 0x05
ALLOC = 0x06
FREE = 0x07
WRITE = 0x08
READ = 0x09
CALL = 0x0A
TIME = 0x0B
MODEL = 0x0C
# Unsolicited device messages
BOOT = 0x40
LOG = 0x41
BUSY = 0x42
NAK = 0x43

REQUEST_NAMES = {
    HELLO: "HELLO",
    BYE: "BYE",
    PING: "PING",
    LOOKUP: "LOOKUP",
    FUNCTION_NAME: "FUNCTION_NAME",
    ALLOC: "ALLOC",
    FREE: "FREE",
    WRITE: "WRITE",
    READ: "READ",
    CALL: "CALL",
    TIME: "TIME",
    MODEL: "MODEL",
}

# Argument tags of CALL and TIME
ARG_INT32 = 0x01
ARG_FLOAT32 = 0x02
ARG_TENSOR = 0x03

# Reply statuses: 0..9 are mc_status_t (crt/include/microcompiler/status.h)
STATUS_NAMES = {
    0: "MC_OK",
    1: "MC_ERR_INVALID_ARGUMENT",
    2: "MC_ERR_NOT_FOUND",
    3: "MC_ERR_OUT_OF_MEMORY",
    4: "MC_ERR_BAD_GRAPH",
    5: "MC_ERR_UNSUPPORTED",
    6: "MC_ERR_TIMER",
    7: "MC_ERR_IO",
    8: "MC_ERR_PROTOCOL",
    9: "MC_ERR_INTERNAL",
    0x40: "NO_SESSION",
    0x41: "VERSION_MISMATCH",
}
OK = 0
STATUS_NO_SESSION = 0x40
STATUS_VERSION = 0x41

HELLO_BODY = struct.Struct("<BI")  # version, host nonce
HELLO_REPLY = struct.Struct("<BIIHIIHBBQ")  # see HelloReply
BOOT_BODY = struct.Struct("<BIH")  # version, boot nonce, max payload
CALL_REPLY = struct.Struct("<Q")  # ticks of the call
MODEL_REPLY = struct.Struct("<Q")  # the named model's fingerprint
TIME_REPLY = struct.Struct("<QI")  # ticks of all runs, timer hz
WRITE_HEADER = struct.Struct("<HI")  # handle, offset (data follows)
READ_BODY = struct.Struct("<HIH")  # handle, offset, length
NO_SESSION_BODY = struct.Struct("<IH")  # boot nonce, the open session (0: none)


@dataclass(frozen=True)
class HelloReply:
    version: int
    host_nonce: int
    boot_nonce: int
    max_payload: int
    pool_bytes: int
    timer_hz: int
    function_count: int
    max_args: int
    max_allocations: int
    model_fingerprint: int  # <NAME>_FINGERPRINT of the firmware's model (metadata.json "fingerprint"); 0: none

    @classmethod
    def unpack(cls, body: bytes) -> HelloReply:
        return cls(*HELLO_REPLY.unpack(body))


def status_name(status: int) -> str:
    return STATUS_NAMES.get(status, f"status {status}")


def request(type_: int, session: int, seq: int, body: bytes = b"") -> bytes:
    return REQUEST_HEADER.pack(type_, session, seq) + body


@dataclass(frozen=True)
class Reply:
    type: int
    session: int
    seq: int
    status: int
    body: bytes

    @classmethod
    def parse(cls, payload: bytes) -> Reply | None:
        """A device message, or None for a payload too short to be one."""
        if len(payload) < REPLY_HEADER.size:
            return None
        type_, session, seq, status = REPLY_HEADER.unpack_from(payload)
        return cls(type_, session, seq, status, payload[REPLY_HEADER.size :])


@dataclass(frozen=True)
class TensorArg:
    """A pointer into device memory: allocation handle + byte offset."""

    handle: int
    offset: int = 0


def encode_args(args) -> bytes:
    """argc:u8 then tag:u8 value per argument: int -> INT32, float -> FLOAT32, TensorArg/DeviceBuffer -> TENSOR."""
    out = bytearray([len(args)])
    for arg in args:
        ref = getattr(arg, "tensor_arg", None)
        if ref is not None:
            arg = ref()
        if isinstance(arg, TensorArg):
            out += struct.pack("<BHI", ARG_TENSOR, arg.handle, arg.offset)
        elif isinstance(arg, bool) or not isinstance(arg, (int, float)):
            raise TypeError(f"an RPC argument must be an int, a float or a device buffer, not {type(arg).__name__}")
        elif isinstance(arg, int):
            if not -(2**31) <= arg < 2**31:
                raise ValueError(f"integer argument {arg} does not fit int32")
            out += struct.pack("<Bi", ARG_INT32, arg)
        else:
            out += struct.pack("<Bf", ARG_FLOAT32, arg)
    if len(args) > 255:
        raise ValueError(f"{len(args)} arguments: at most 255")
    return bytes(out)
