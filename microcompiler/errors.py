"""Errors the toolchain reports to users.

Every error a user can cause (a bad model, an unsupported operator, a board that is too small,
a silent serial port) is a subclass of :class:`MicrocompilerError`. The CLI prints its message as
one line and exits non-zero; anything else escaping is a bug in microcompiler. An error may carry
``details``: a few lines that show the problem (a build's first error and its context), printed
after the message one per line.
"""

from __future__ import annotations

from collections.abc import Iterable


class MicrocompilerError(Exception):
    """A problem with the user's input or environment, with a message that says how to fix it.

    ``details``: lines shown after the message (each its own line, made terminal-safe by the CLI),
    e.g. the first error of a build log; the message itself stays one line."""

    def __init__(self, *args: object, details: Iterable[str] = ()) -> None:
        super().__init__(*args)
        self.details: list[str] = list(details)


class ModelFormatError(MicrocompilerError):
    """The model file is not a valid TFLite flatbuffer (truncated, corrupted, or another format)."""


class UnsupportedModelError(MicrocompilerError):
    """The model is valid TFLite but uses something microcompiler does not implement."""


class BoardError(MicrocompilerError):
    """Unknown board, or a model that does not fit the board."""


class ToolchainError(MicrocompilerError):
    """A compiler, QEMU, west or another external tool is missing or failed."""


class DeviceError(MicrocompilerError):
    """The device did not answer, answered garbage, or reset."""


def printable(text: str) -> str:
    """``text`` with every control character (escape sequences, carriage returns, newlines, DEL, C1)
    shown as ``\\xNN``: what a model, a path or a device says reaches the terminal only as text."""
    return "".join(
        ch if ch.isprintable() or ch == " " else (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        for ch in text
    )
