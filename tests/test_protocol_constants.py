"""The C runtime's protocol constants and their Python twins are one table: every ``#define`` of the
protocol headers (RPC messages and framing, status codes, the graph description) is either checked
against the Python value the host side uses, or named here as the device's own business.

A new #define in those headers fails this test until it is put in TWINS or DEVICE_ONLY, so the two
sides cannot drift apart silently.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from microcompiler.codegen import graph_description
from microcompiler.rpc import framing
from microcompiler.rpc import protocol as P
from microcompiler.targets import multi

CRT = Path(__file__).resolve().parents[1] / "crt"
HEADERS = [
    "include/microcompiler/rpc_server.h",
    "include/microcompiler/rpc_framing.h",
    "include/microcompiler/status.h",
    "include/microcompiler/graph_executor.h",
    "src/graph_executor.c",
]

_MC_STATUS = {name: code for code, name in P.STATUS_NAMES.items() if name.startswith("MC_")}

# C name -> the Python value that must equal it
TWINS: dict[str, int] = {
    "MC_RPC_VERSION": P.VERSION,
    "MC_RPC_REQUEST_HEADER": P.REQUEST_HEADER.size,
    "MC_RPC_REPLY_HEADER": P.REPLY_HEADER.size,
    "MC_RPC_REPLY_BIT": P.REPLY_BIT,
    **{f"MC_RPC_{name}": code for code, name in P.REQUEST_NAMES.items()},
    "MC_RPC_BOOT": P.BOOT,
    "MC_RPC_LOG": P.LOG,
    "MC_RPC_BUSY": P.BUSY,
    "MC_RPC_NAK": P.NAK,
    "MC_RPC_ARG_INT32": P.ARG_INT32,
    "MC_RPC_ARG_FLOAT32": P.ARG_FLOAT32,
    "MC_RPC_ARG_TENSOR": P.ARG_TENSOR,
    "MC_RPC_STATUS_NO_SESSION": P.STATUS_NO_SESSION,
    "MC_RPC_STATUS_VERSION": P.STATUS_VERSION,
    "MC_RPC_FLAG": framing.FLAG,
    "MC_RPC_ESCAPE": framing.ESCAPE,
    "MC_RPC_ESCAPE_XOR": framing.ESCAPE_XOR,
    "MC_RPC_FRAME_OVERHEAD": framing.OVERHEAD,
    **_MC_STATUS,
    "MC_STATUS_COUNT": len(_MC_STATUS),
    "MC_RPC_MAX_REGISTRIES": multi.MAX_HOST_DRIVEN_MODELS + 1,  # one per model + the models' run registry
    "MC_GRAPH_ARG_BYTES": graph_description.ARG_BYTES,
    "HEADER_BYTES": graph_description.HEADER.size,
    "SLOT_BYTES": struct.calcsize("<II"),
    "OP_HEADER_BYTES": graph_description.OP_HEADER.size,
}

# Device limits the host reads at run time (HELLO and BOOT report them) or never needs
DEVICE_ONLY = {
    "MC_RPC_MAX_PAYLOAD",
    "MC_RPC_MAX_ALLOCATIONS",
    "MC_RPC_MAX_ARGS",  # HELLO's reply carries them (max_args: MC_RPC_CALL_ARGS of the registries)
    "MC_RPC_MAX_MODELS",
    "MC_RPC_MAX_TIMED_RUNS",
    "MC_RPC_POOL_ALIGN",
    "MC_RPC_FRAME_CAPACITY",
}


def defines(text: str) -> dict[str, str]:
    """Every object-like ``#define NAME value`` (comments removed), include guards aside."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    found = {}
    for name, value in re.findall(r"^\s*#\s*define\s+([A-Za-z_]\w*)\b(?!\()[ \t]*([^\n]*)$", text, re.M):
        if name.endswith("_H_") and not value.strip():
            continue
        found[name] = value.strip()
    return found


def c_value(expression: str, known: dict[str, int]) -> int:
    """The value of a C integer constant expression over literals (0x.., ..u) and known names."""
    if not re.fullmatch(r"[\w\s+\-*()]+", expression):
        raise ValueError(f"not an integer constant expression: {expression}")
    python = re.sub(r"\b(0[xX][0-9A-Fa-f]+|\d+)[uUlL]*\b", r"\1", expression)
    python = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: str(known[m.group(0)]), python)
    if not re.fullmatch(r"[\d\sxXa-fA-F+\-*()]+", python):
        raise ValueError(f"not an integer constant expression: {expression}")
    return int(eval(python))  # digits, hex, + - * and parentheses only (checked above)


def protocol_defines() -> dict[str, str]:
    found: dict[str, str] = {}
    for header in HEADERS:
        found.update(defines((CRT / header).read_text()))
    return found


def test_every_protocol_define_has_a_python_twin_or_a_reason():
    found = set(protocol_defines())
    assert found - set(TWINS) - DEVICE_ONLY == set(), "put each in TWINS (with its Python value) or DEVICE_ONLY"
    assert set(TWINS) - found == set() and DEVICE_ONLY - found == set(), "names no header defines any more"


def test_the_python_twins_equal_the_c_values():
    found = protocol_defines()
    known: dict[str, int] = {}
    pending = dict(found)
    while pending:  # a define may use one defined later in the file list (MC_RPC_FRAME_CAPACITY)
        progress = False
        for name, expression in list(pending.items()):
            try:
                known[name] = c_value(expression, known)
            except KeyError:
                continue
            del pending[name]
            progress = True
        assert progress, f"cannot evaluate {pending}"
    wrong = {name: (known[name], value) for name, value in TWINS.items() if known[name] != value}
    assert not wrong, f"C value != Python twin: {wrong}"


def test_the_graph_description_magic_is_the_one_the_executor_checks():
    source = (CRT / "src" / "graph_executor.c").read_text()
    assert f'memcmp(description, "{graph_description.MAGIC.decode()}", 4)' in source


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "#define A 0x7Eu /* flag */\n#define B (A + 4u)\n#define G_H_\n#define F(x) x\n",
            {"A": "0x7Eu", "B": "(A + 4u)"},
        ),
        ("  #  define MC_OK 0   // fine\n", {"MC_OK": "0"}),
    ],
)
def test_the_define_reader(text, expected):
    assert defines(text) == expected


def test_a_drifted_twin_is_caught():
    assert (
        c_value(
            "(MC_RPC_MAX_PAYLOAD + MC_RPC_FRAME_OVERHEAD)", {"MC_RPC_MAX_PAYLOAD": 1024, "MC_RPC_FRAME_OVERHEAD": 4}
        )
        == 1028
    )
    assert c_value("0x0Au", {}) == P.CALL
    with pytest.raises(ValueError):
        c_value('"MCG1"', {})
