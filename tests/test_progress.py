"""microcompiler/progress.py: a bar on a terminal, plain lines otherwise, always on the stream given."""

from __future__ import annotations

import io

from microcompiler.progress import LineLog, Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_when_not_a_terminal():
    out = io.StringIO()
    with Progress(3, "standalone", out) as bar:
        for k in range(3):
            bar.step(f"seed {k}")
    assert out.getvalue().splitlines() == ["standalone: 1/3 seed 0", "standalone: 2/3 seed 1", "standalone: 3/3 seed 2"]


def test_a_bar_redrawn_in_place_on_a_terminal():
    out = Terminal()
    with Progress(4, "host-driven", out) as bar:
        bar.step("a")
        bar.step("b")
    text = out.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n") and text.count("\n") == 1  # one line, ended on exit
    assert "[############------------] 2/4 b" in text


def test_build_steps_become_a_bar_only_on_a_terminal():
    lines = [
        "building firmware",
        "  [1/2] Building C object model.c.obj",
        "  [2/2] Linking C executable firmware.elf",
        "built firmware.elf",
    ]
    plain, tty = io.StringIO(), Terminal()
    for stream in (plain, tty):
        log = LineLog(stream)
        for line in lines:
            log(line)
    assert plain.getvalue().splitlines() == lines
    shown = tty.getvalue()
    assert "building [" in shown and "2/2 Linking C executable firmware.elf" in shown and "[1/2] Building" not in shown
    assert shown.startswith("building firmware\n") and shown.endswith("built firmware.elf\n")
