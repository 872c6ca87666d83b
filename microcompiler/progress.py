"""Progress of long work (building, flashing, validating many inputs), always on stderr.

On a terminal a :class:`Progress` redraws one bar line in place; otherwise (a pipe, a log file, a
test) it prints one plain line per step, so nothing is lost and nothing is mixed into the JSON a
command prints on stdout. :func:`log_line` is the line logger commands hand to targets: it shows a
build tool's ``[k/n] ...`` lines as a bar on a terminal and passes every other line through.
"""

from __future__ import annotations

import re
import sys
from typing import TextIO

from microcompiler.errors import printable

BAR_WIDTH = 24
_STEP = re.compile(r"^\s*\[(\d+)/(\d+)\]\s*(.*)$")  # ninja's "[3/12] Building C object ..."


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def _write(stream: TextIO, text: str) -> None:
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):  # the terminal went away (SIGHUP) or the stream was closed
        pass


class Progress:
    """``total`` steps of one piece of work called ``label``; ``step(note)`` after each one."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None):
        self.total = max(1, int(total))
        self.label = label
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.tty = _is_tty(self.stream)
        self._drawn = False

    def step(self, note: str = "") -> None:
        self.done = min(self.total, self.done + 1)
        self.show(note)

    def show(self, note: str = "") -> None:
        if self.tty:
            filled = BAR_WIDTH * self.done // self.total
            bar = "#" * filled + "-" * (BAR_WIDTH - filled)
            _write(self.stream, f"\r\033[K{self.label} [{bar}] {self.done}/{self.total} {printable(note[:60])}")
            self._drawn = True
            if self.done == self.total:
                self.finish()
        else:
            _write(
                self.stream, f"{self.label}: {self.done}/{self.total}" + (f" {printable(note)}" if note else "") + "\n"
            )

    def finish(self) -> None:
        """End the bar's line (a terminal), so the next message starts on its own line."""
        if self.tty and self._drawn:
            _write(self.stream, "\n")
            self._drawn = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.finish()


class LineLog:
    """A line logger for targets: ``[k/n]`` build steps become a bar on a terminal, other lines pass."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream
        self._bar: Progress | None = None

    def __call__(self, line: str) -> None:
        stream = self.stream if self.stream is not None else sys.stderr
        step = _STEP.match(line)
        if step and _is_tty(stream):
            done, total, what = int(step.group(1)), int(step.group(2)), step.group(3)
            if self._bar is None or self._bar.total != total:
                self._bar = Progress(total, "building", stream)
            self._bar.done = min(done, total)
            self._bar.show(what.rsplit("/", 1)[-1])
            if done >= total:
                self._bar = None
            return
        if self._bar is not None:
            self._bar.finish()
            self._bar = None
        _write(stream, printable(line) + "\n")  # a tool's or a device's line: its control characters as text


def log_line(line: str) -> None:
    """One progress line on stderr (a build step redraws a bar on a terminal)."""
    _LOG(line)


_LOG = LineLog()
