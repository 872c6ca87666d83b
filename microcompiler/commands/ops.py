"""``microcompiler ops``: the operators microcompiler compiles, with types, options and fast kernels."""

from __future__ import annotations

import json

from microcompiler.ops.registry import markdown, operator_table, roadmap


def add_parser(sub) -> None:
    p = sub.add_parser(
        "ops",
        help="list the supported operators",
        description="List every TFLite operator microcompiler compiles, with the tensor types "
        "and options supported and which CPU families have fast kernels.",
    )
    form = p.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print the table as JSON")
    form.add_argument("--markdown", action="store_true", help="print docs/operators.md")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.json:
        print(json.dumps({"operators": operator_table(), "roadmap": roadmap()}, indent=2))
        return 0
    if args.markdown:
        print(markdown(), end="")
        return 0
    rows = [("OPERATOR", "TYPES", "FAST KERNELS")]
    for r in operator_table():
        rows.append((r["operator"], ", ".join(r["types"]), ", ".join(r["fast_kernels"]) or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    print(f"\n{len(rows) - 1} operators; 'microcompiler ops --json' has the options and notes of each.")
    return 0
