#!/usr/bin/env python3
"""Flash and RAM now against the 2026-11-26 tables (issue 34: "flash and RAM no worse than now").

    python scripts/footprint_before_after.py          # rewrite the block in docs/benchmarks.md
    python scripts/footprint_before_after.py --check  # exit 1 when the block is not what the tables give

Reads docs/benchmarks.md only: the "Flash and RAM (bytes; 2026-11-26)" table (the last full run
before the side-by-side harness) and each board's "Our flash and RAM on `BOARD`" table inside its
BENCHMARK-TABLES block (written by scripts/benchmarks.py), pairs the rows of the same model, board
and variant, and writes one row per pair between the FOOTPRINT-BEFORE-AFTER markers: flash and RAM
before, now, the change, and whether it is worse. Both tables count flash as code + weights + data +
the test input and RAM as arena + scratch + stack high-water + runtime data (without the output
buffers), so the two are the same measure.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- FOOTPRINT-BEFORE-AFTER:BEGIN -->", "<!-- FOOTPRINT-BEFORE-AFTER:END -->"
BEFORE_HEADING = "### Flash and RAM (bytes; 2026-11-26)"
OURS = re.compile(r"^Our flash and RAM on `([a-z0-9_]+)` \(bytes\):$")


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def number(text: str) -> int:
    return int(text.replace(",", ""))


def table_after(lines: list[str], start: int) -> list[dict[str, str]]:
    """The markdown table that begins at or after line ``start``: its rows as {header: cell}."""
    k = start
    while k < len(lines) and not lines[k].startswith("|"):
        k += 1
    header = cells(lines[k])
    rows = []
    for line in lines[k + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(header, cells(line))))
    return rows


def before_rows(lines: list[str]) -> dict[tuple[str, str, str], tuple[int, int]]:
    """(model, board, variant) -> (flash, RAM) of the 2026-11-26 table."""
    start = lines.index(BEFORE_HEADING)
    return {
        (r["model"], r["board"], r["variant"]): (number(r["flash"]), number(r["RAM"]))
        for r in table_after(lines, start + 1)
    }


def current_rows(lines: list[str]) -> dict[tuple[str, str, str], tuple[int, int]]:
    """(model, board, variant) -> (flash, RAM) of every board's side-by-side block."""
    out = {}
    for k, line in enumerate(lines):
        m = OURS.match(line)
        if m:
            for r in table_after(lines, k + 1):
                out[(r["model"], m.group(1), r["variant"])] = (number(r["flash"]), number(r["RAM"]))
    return out


def compare(text: str) -> list[dict]:
    """One row per (model, board, variant) in both tables, in the 2026-11-26 table's order."""
    lines = text.splitlines()
    now = current_rows(lines)
    rows = []
    for key, (flash0, ram0) in before_rows(lines).items():
        if key not in now:
            continue
        flash1, ram1 = now[key]
        rows.append(dict(model=key[0], board=key[1], variant=key[2], flash=(flash0, flash1), ram=(ram0, ram1)))
    return rows


def render(rows: list[dict]) -> str:
    worse = [r for r in rows if r["flash"][1] > r["flash"][0] or r["ram"][1] > r["ram"][0]]
    out = [
        BEGIN,
        f"Written by `python scripts/footprint_before_after.py` from the tables of this page: {len(rows)} "
        "(model, board, variant) rows of the 2026-11-26 table that the side-by-side blocks also measure; "
        + (
            "flash and RAM are no larger on every one."
            if not worse
            else f"flash or RAM is larger on {len(worse)}: "
            + "; ".join(f"{r['model']} on {r['board']} ({r['variant']})" for r in worse)
            + "."
        ),
        "",
        "| model | board | variant | flash before | flash now | change | RAM before | RAM now | change | no larger |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        (f0, f1), (r0, r1) = r["flash"], r["ram"]
        ok = "yes" if f1 <= f0 and r1 <= r0 else "**no**"
        out.append(
            f"| {r['model']} | {r['board']} | {r['variant']} | {f0:,} | {f1:,} | {f1 - f0:+,} "
            f"| {r0:,} | {r1:,} | {r1 - r0:+,} | {ok} |"
        )
    out.append(END)
    return "\n".join(out)


def rewrite(text: str) -> str:
    """``text`` with the block between the markers regenerated from its own tables."""
    block = render(compare(text))
    return text[: text.index(BEGIN)] + block + text[text.index(END) + len(END) :]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the block is out of date")
    args = parser.parse_args(argv)
    text = DOC.read_text()
    new = rewrite(text)
    if args.check:
        if new != text:
            print(
                "docs/benchmarks.md: the flash and RAM comparison is out of date; run scripts/footprint_before_after.py"
            )
            return 1
        return 0
    DOC.write_text(new)
    print(f"wrote the flash and RAM comparison of {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
