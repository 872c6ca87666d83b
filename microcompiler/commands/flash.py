"""``microcompiler flash DIR``: load a built firmware on its board and print its report."""

from __future__ import annotations

from microcompiler.commands.arguments import add_zephyr_base_argument, positive_seconds
from microcompiler.commands.output import print_flash
from microcompiler.targets import load_project
from microcompiler.timing import measured


def add_parser(sub) -> None:
    p = sub.add_parser(
        "flash",
        help="load a built firmware on its board (QEMU for emulated boards) and print what it reports",
        description="Run the firmware built in DIR on its board: emulated boards start QEMU "
        "(-icount shift=0, so times are exact instruction counts); Zephyr projects on a hardware "
        "board are flashed with 'west flash' and read on the board's serial port (found by its USB "
        "id unless --port names it). Prints the outputs and the inference time the firmware reports.",
    )
    p.add_argument("project", metavar="DIR", help="a built project directory")
    p.add_argument(
        "--timeout",
        type=positive_seconds("--timeout"),
        default=300.0,
        help="seconds to wait for the report (default: 300)",
    )
    p.add_argument(
        "--runner",
        metavar="NAME",
        default=None,
        help="Zephyr projects on a hardware board: the west flash runner (default: the board's, e.g. "
        "stm32cubeprogrammer, nrfjprog, openocd, jlink)",
    )
    p.add_argument(
        "--port",
        default=None,
        help="hardware boards: the serial port the firmware reports on (default, or 'auto': the port "
        "whose USB VID:PID is the board's debug probe)",
    )
    add_zephyr_base_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args) -> int:
    project = load_project(args.project, args.zephyr_base)
    project.runner = args.runner
    port = None if args.port == "auto" else args.port
    log = print if not args.json else lambda _: None
    if port is not None and not project.board.emulated and not project.board.is_host:
        project.target.require_elf(project)
        project.target.load(project, log)  # flash it, then read it on the port given
    result = project.target.flash(project, timeout=args.timeout, log=log, port=port)
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
