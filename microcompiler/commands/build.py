"""``microcompiler build DIR``: build a firmware project with its template's tools (CMake + Ninja, west)."""

from __future__ import annotations

from microcompiler.commands.arguments import add_zephyr_base_argument
from microcompiler.targets import build


def add_parser(sub) -> None:
    p = sub.add_parser(
        "build",
        help="build a firmware project (cmake -G Ninja, ninja; west build for Zephyr)",
        description="Configure (once) and build the project in DIR, then print the firmware's flash and RAM use. "
        "The whole output of the build tools is saved in DIR/build/microcompiler-build.log.",
    )
    p.add_argument("project", metavar="DIR", help="a directory made by 'microcompiler create-project'")
    add_zephyr_base_argument(p)
    p.set_defaults(func=run)


def run(args) -> int:
    build(args.project, zephyr_base=args.zephyr_base)
    return 0
