"""``microcompiler flash DIR``: load a built firmware on its board and print its report."""

from __future__ import annotations

from microcompiler.commands.arguments import positive_seconds
from microcompiler.commands.output import print_flash
from microcompiler.targets import Project
from microcompiler.timing import measured


def add_parser(sub) -> None:
    p = sub.add_parser(
        "flash",
        help="load a built firmware on its board (QEMU for emulated boards) and print what it reports",
        description="Run the firmware built in DIR on its board: emulated boards start QEMU "
        "(-icount shift=0, so times are exact instruction counts). Prints the "
        "outputs and the inference time the firmware reports.",
    )
    p.add_argument("project", metavar="DIR", help="a built project directory")
    p.add_argument(
        "--timeout",
        type=positive_seconds("--timeout"),
        default=300.0,
        help="seconds to wait for the report (default: 300)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args) -> int:
    project = Project.load(args.project)
    result = project.target.flash(project, timeout=args.timeout, log=print if not args.json else lambda _: None)
    each = result.models or {project.model: result}
    reports = {
        name: {
            "model": name,
            "board": project.board.name,
            "executor": project.executor,
            "outputs": [o.tolist() for o in r.outputs],
            "device_ticks": r.ticks,
            "timer_hz": r.hz,
            "time": measured(r.ticks, r.hz, project.board),
            "stack_bytes": r.stack_bytes,
        }
        for name, r in each.items()
    }
    if not result.models:
        print_flash(reports[project.model], result.outputs, args.json)
    elif args.json:  # several models: one object, each model's report by name
        print_flash({"models": reports}, [], True)
    else:
        for name, r in each.items():
            print(f"model {name}:")
            print_flash(reports[name], r.outputs, False)
    return 0
