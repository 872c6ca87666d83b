"""The ``microcompiler`` command line.

Each subcommand lives in ``microcompiler/commands/<name>.py`` with ``add_parser(subparsers)`` and a
``run(args)`` that returns an exit code. User errors (:class:`MicrocompilerError`) are printed as one
line on stderr with exit code 2; nothing else is caught, so real bugs keep their tracebacks.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from microcompiler.errors import MicrocompilerError

COMMANDS = ["compile", "run", "analyze", "ops", "boards", "create-project", "build", "flash", "bench"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="microcompiler",
        description="Compile TFLite models to C for microcontrollers, and run them on boards.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"microcompiler.commands.{name.replace('-', '_')}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except MicrocompilerError as exc:
        print(f"microcompiler: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("microcompiler: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
