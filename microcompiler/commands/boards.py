"""``microcompiler boards``: list the boards microcompiler knows; ``--zephyr [FILTER]``: the Cortex-M
board targets of the Zephyr workspace, any of which ``--board`` takes."""

from __future__ import annotations

from collections.abc import Sequence

from microcompiler.boards import list_boards
from microcompiler.commands.arguments import add_zephyr_base_argument


def add_parser(sub) -> None:
    p = sub.add_parser(
        "boards",
        help="list the known boards",
        description="List the boards in boards/*.toml: CPU, flash and RAM, and whether they are "
        "emulated (QEMU) or real hardware. 'host' (this computer) is always there too. With "
        "--zephyr: the Cortex-M board targets of the Zephyr workspace (any of them is a --board).",
    )
    p.add_argument(
        "--zephyr",
        nargs="?",
        const="",
        metavar="FILTER",
        help="list the Zephyr workspace's Cortex-M board targets (those whose name contains FILTER)",
    )
    add_zephyr_base_argument(p)
    p.set_defaults(func=run)


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    return f"{n // (1024 * 1024)} MiB" if n % (1024 * 1024) == 0 else f"{n // 1024} KiB"


def _print(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())


def run(args) -> int:
    if getattr(args, "zephyr", None) is not None:
        return run_zephyr(args.zephyr, getattr(args, "zephyr_base", None))
    rows = [("BOARD", "CPU", "FLASH", "RAM", "KIND")]
    for b in list_boards():
        kind = f"emulated ({b.qemu_machine})" if b.emulated else "hardware"
        if b.platform is None:
            kind += ", zephyr only"
        rows.append((b.name, b.cpu.core, _size(b.flash.size), _size(b.ram.size), kind))
    rows.append(("host", "this computer", "-", "-", "native"))
    _print(rows)
    return 0


def run_zephyr(pattern: str, explicit_base: str | None) -> int:
    from microcompiler.errors import BoardError
    from microcompiler.zephyr import board_facts, catalog, workspace

    base = workspace.zephyr_base(explicit_base)
    entries = catalog.catalog(base, pattern)
    version = board_facts.version_text(base)
    if not entries:
        raise BoardError(
            f"no Cortex-M board target of Zephyr {version} at {base} contains '{pattern}'; "
            "'microcompiler boards --zephyr' lists them all"
        )
    rows = [("TARGET", "CPU", "FPU", "DSP", "MVE", "FLASH", "RAM", "KIND")]
    for e in entries:
        kind = "emulated (QEMU)" if e.emulated else "hardware"
        if e.hal_missing:
            kind += f", needs {e.hal_missing} (west update {e.hal_missing})"
        elif e.note:
            kind += f", {e.note}"
        dsp = "yes" if e.dsp else "-"
        mve = "-" if e.mve == "none" else e.mve
        fpu = "-" if e.fpu == "none" else e.fpu
        rows.append((e.target, e.core, fpu, dsp, mve, _size(e.flash_size), _size(e.ram_size), kind))
    _print(rows)
    print(f"{len(entries)} Cortex-M board targets of Zephyr {version} at {base}; any of them is a --board")
    return 0
