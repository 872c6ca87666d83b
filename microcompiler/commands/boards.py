"""``microcompiler boards``: list the boards microcompiler knows."""

from __future__ import annotations

from microcompiler.boards import list_boards


def add_parser(sub) -> None:
    p = sub.add_parser(
        "boards",
        help="list the known boards",
        description="List the boards in boards/*.toml: CPU, flash and RAM, and whether they are "
        "emulated (QEMU) or real hardware. 'host' (this computer) is always there too.",
    )
    p.set_defaults(func=run)


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n % (1024 * 1024) == 0 else f"{n // 1024} KiB"


def run(args) -> int:
    rows = [("BOARD", "CPU", "FLASH", "RAM", "KIND")]
    for b in list_boards():
        kind = f"emulated ({b.qemu_machine})" if b.emulated else "hardware"
        if b.platform is None:
            kind += ", zephyr only"
        rows.append((b.name, b.cpu.core, _size(b.flash.size), _size(b.ram.size), kind))
    rows.append(("host", "this computer", "-", "-", "native"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    return 0
