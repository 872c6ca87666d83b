"""Argument types shared by the subcommands."""

from __future__ import annotations

from microcompiler.boards import HOST
from microcompiler.errors import MicrocompilerError
from microcompiler.targets import RPC_TIMEOUT, templates
from microcompiler.transport.base import check_timeout


def positive_seconds(option: str):
    """An argparse type for ``option``: a finite number of seconds greater than zero.

    It raises MicrocompilerError (not argparse's usage error), so the command line prints one line.
    NaN, infinities, zero and negative numbers would make a wait endless or meaningless."""

    def parse(text: str) -> float:
        try:
            return check_timeout(text)
        except MicrocompilerError:
            raise MicrocompilerError(
                f"{option} {text!r}: give a finite number of seconds greater than 0, e.g. {option} 30"
            ) from None

    parse.__name__ = "seconds"
    return parse


def positive_int(option: str):
    """An argparse type for ``option``: a whole number greater than zero (a one-line error otherwise)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise MicrocompilerError(f"{option} {text!r}: give a whole number greater than 0, e.g. {option} 10")
        return value

    parse.__name__ = "count"
    return parse


def add_tuning_argument(p) -> None:
    """--tuning LOG: apply a tuning log written by 'microcompiler tune' (docs/tuning.md)."""
    p.add_argument(
        "--tuning",
        metavar="LOG",
        help="apply this tuning log (written by 'microcompiler tune') to the "
        "operators it has entries for on this board's CPU",
    )
    p.add_argument(
        "--patches",
        metavar="GRID",
        help="run the leading CNN stage as ROWSxCOLS spatial patches (e.g. "
        "2x2), 'off', or 'auto' (default: patches when they lower the RAM peak; docs/memory.md)",
    )
    add_ram_limit_argument(p)


def add_ram_limit_argument(p) -> None:
    """--ram-limit BYTES: the fastest memory plan whose arena + scratch fits (docs/memory.md)."""
    p.add_argument(
        "--ram-limit",
        type=positive_int("--ram-limit"),
        metavar="BYTES",
        help="the most RAM the model's arena + scratch may use: the fastest plan that fits is chosen "
        "(layer by layer, in-place depthwise layers, patches); default: what the board's RAM "
        "leaves after the runtime, the stack and the model's inputs and outputs (docs/memory.md)",
    )


def ram_budget(args, board, stack_bytes: int | None = None) -> dict:
    """compile_model's ``ram_limit`` and ``ram_available`` for --ram-limit and the board (none for the
    host or portable C: their RAM is not ours to count)."""
    from microcompiler.targets.footprint import ram_for_models

    available = None
    if board is not None and not board.is_host:
        available = ram_for_models(board) if stack_bytes is None else ram_for_models(board, stack_bytes)
    return {"ram_limit": getattr(args, "ram_limit", None), "ram_available": available}


def add_zephyr_base_argument(p) -> None:
    """--zephyr-base DIR: the Zephyr workspace to use (docs/zephyr.md, "Where microcompiler finds Zephyr")."""
    if any("--zephyr-base" in action.option_strings for action in p._actions):
        return  # the board arguments have it already
    p.add_argument(
        "--zephyr-base",
        metavar="DIR",
        default=None,
        help="the zephyr folder of the west workspace: --board may name any of its Cortex-M board targets, "
        "and Zephyr projects build with it (default: the one the project was created with, else "
        "$ZEPHYR_BASE, else the one scripts/setup-debian.sh recorded; docs/zephyr.md)",
    )


def zephyr_base_of(args):
    """The --zephyr-base of ``args`` (None when the command has no such option or it was not given)."""
    return getattr(args, "zephyr_base", None)


def add_board_arguments(p, board_required: bool = False) -> None:
    """The options of the commands that run a model on a board (run, bench, validate): the model,
    where it runs (--board, --template, --port, --rpc-timeout), --json and --tuning."""
    p.add_argument("model", help="the .tflite file")
    if board_required:
        p.add_argument("--board", required=True, help="board name (see 'microcompiler boards'; host: this computer)")
    else:
        p.add_argument("--board", default=HOST, help="board name (default: host; see 'microcompiler boards')")
    add_zephyr_base_argument(p)
    p.add_argument(
        "--template",
        choices=templates(),
        default="baremetal",
        help="boards: the firmware project template (default: baremetal; zephyr: docs/zephyr.md)",
    )
    p.add_argument(
        "--port",
        help="serial port of a real board already running the model's firmware (nothing "
        "is flashed; emulated boards need none); 'auto': the port whose USB VID:PID is the board's "
        "debug probe. Without --port, a Zephyr project on a hardware board is built, flashed "
        "(west flash) and found by its USB id (docs/boards.md)",
    )
    p.add_argument(
        "--rpc-timeout",
        type=positive_seconds("--rpc-timeout"),
        default=RPC_TIMEOUT,
        metavar="SECONDS",
        help=f"host-driven: seconds to wait for each device reply (default: {RPC_TIMEOUT:g})",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_tuning_argument(p)


def tuning_for(args, cpu):
    """compile_model's ``tuning`` for --tuning LOG on ``cpu`` (None without the option)."""
    from microcompiler.tuning.log import load_tuning

    log = load_tuning(getattr(args, "tuning", None))
    return None if log is None else log.for_cpu(cpu)
