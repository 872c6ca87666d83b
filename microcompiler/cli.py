"""The ``microcompiler`` command line.

Each subcommand lives in ``microcompiler/commands/<name>.py`` with ``add_parser(subparsers)`` and a
``run(args)`` that returns an exit code. User errors (:class:`MicrocompilerError`) are printed as one
line on stderr (then their ``details``, one indented line each: a build's first error) with exit code 2; nothing else is caught, so real bugs keep their tracebacks. SIGINT,
SIGTERM and SIGHUP stop the command cleanly (microcompiler/cleanup.py): exit status 128 + signal.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys

from microcompiler import cleanup
from microcompiler.errors import MicrocompilerError, printable
from microcompiler.report.provenance import record_command
from microcompiler.version import __version__

COMMANDS = [
    "compile",
    "run",
    "analyze",
    "compare",
    "validate",
    "ops",
    "boards",
    "create-project",
    "build",
    "flash",
    "bench",
    "mlperf",
    "tune",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="microcompiler", description="Compile TFLite models to C for microcontrollers, and run them on boards."
    )
    parser.add_argument("--version", action="version", version=f"microcompiler {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"microcompiler.commands.{name.replace('-', '_')}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    previous_handlers = cleanup.install_signal_handlers()
    try:
        args = build_parser().parse_args(argv)
        record_command(sys.argv[1:] if argv is None else argv)
        status = args.func(args) or 0
        sys.stdout.flush()  # here, not at exit: a closed pipe is reported below, not as a traceback
        return status
    except BrokenPipeError:  # `microcompiler run ... | head`: the reader has what it wanted
        _silence_stdout()
        return 128 + signal.SIGPIPE
    except MicrocompilerError as exc:
        print(f"microcompiler: error: {printable(str(exc))}", file=sys.stderr)
        for line in exc.details:  # each its own line, each terminal-safe
            print(f"  {printable(line)}", file=sys.stderr)
        return 2
    except cleanup.Interrupted as exc:  # SIGINT, SIGTERM, SIGHUP: the stack unwound, closing what it opened
        cleanup.sweep()
        _say(f"microcompiler: interrupted by {exc.name}")
        return exc.exit_status
    except KeyboardInterrupt:
        cleanup.sweep()
        _say("microcompiler: interrupted")
        return 130
    finally:
        cleanup.restore_signal_handlers(previous_handlers)  # main() may run inside another program (tests)


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _say(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except OSError:  # SIGHUP: the terminal may be gone
        pass


if __name__ == "__main__":
    sys.exit(main())
