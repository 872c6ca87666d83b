"""``microcompiler build DIR``: build a firmware project with its template's tools (CMake + Ninja, west)."""

from __future__ import annotations

from microcompiler.targets import build


def add_parser(sub) -> None:
    p = sub.add_parser(
        "build",
        help="build a firmware project (cmake -G Ninja, ninja)",
        description="Configure (once) and build the project in DIR, then print the firmware's flash and RAM use.",
    )
    p.add_argument("project", metavar="DIR", help="a directory made by 'microcompiler create-project'")
    p.set_defaults(func=run)


def run(args) -> int:
    build(args.project)
    return 0
