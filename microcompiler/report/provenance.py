"""Where a report came from: the tool, its version, the date and the command line (every page and JSON).

The command line records the command being run (``record_command``, called by the CLI); a report made
through the Python API says so instead. Paths and arguments are quoted as a shell would read them back.
"""

from __future__ import annotations

import shlex
from datetime import UTC, datetime

from microcompiler.version import __version__

_command: str | None = None


def record_command(argv: list[str]) -> None:
    """The command line this process runs (``microcompiler ARGS``), for :func:`provenance`."""
    global _command
    _command = shlex.join(["microcompiler", *argv])


def provenance() -> dict:
    return {
        "tool": "microcompiler",
        "version": __version__,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "command": _command if _command is not None else "(Python API)",
    }


def with_provenance(report: dict) -> dict:
    """``report`` with a "generated_by" entry (the report itself is not changed)."""
    return {**report, "generated_by": provenance()}
