"""``microcompiler compare A B``: two models, two builds or two saved reports side by side (docs/report.md)."""

from __future__ import annotations

import json
from pathlib import Path

from microcompiler.analysis import analyze_model
from microcompiler.analysis.compare import compare, comparison_lines, load_report, side_from_report
from microcompiler.boards import HOST, load_board
from microcompiler.commands.arguments import positive_int
from microcompiler.errors import MicrocompilerError
from microcompiler.report import check_report_path, write_report
from microcompiler.report.provenance import with_provenance
from microcompiler.tuning.log import load_tuning

# the options that build a side; each has a --NAME-b twin that overrides it for B only
SIDE_OPTIONS = ("board", "tuning", "patches", "ram_limit")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "compare",
        help="compare two models, two builds or two saved reports, layer by layer",
        description="Put A and B side by side: each layer's time and kernel, and the totals (time, "
        "arena, RAM, weights, flash), with B relative to A. A and B are each a .tflite "
        "model (analyzed for --board with the options given) or a report saved from "
        "'analyze --json' or 'bench --json'. To compare two builds of one model, give the "
        "model twice and B's options with the -b options (e.g. --tuning-b LOG, "
        "--board-b mps3_an547, --patches-b 2x2).",
    )
    p.add_argument("a", metavar="A", help="a .tflite model or a saved analyze/bench JSON report")
    p.add_argument("b", metavar="B", help="the same for the other side")
    for name, helptext in (
        ("board", "board to analyze the models for (default: portable C)"),
        ("tuning", "a tuning log to apply (docs/tuning.md)"),
        ("patches", "the patch grid: ROWSxCOLS, off or auto (docs/memory.md)"),
    ):
        p.add_argument(f"--{name}", help=helptext)
        p.add_argument(f"--{name}-b", help=f"for B only: {helptext.split(' (')[0]} (default: as --{name})")
    p.add_argument(
        "--ram-limit",
        type=positive_int("--ram-limit"),
        metavar="BYTES",
        help="the RAM budget for arena + scratch (docs/memory.md)",
    )
    p.add_argument("--ram-limit-b", type=positive_int("--ram-limit-b"), metavar="BYTES", help="for B only")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--html", metavar="FILE", help="also write the comparison as an HTML page")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.html:
        check_report_path(args.html, [args.a, args.b, args.tuning, args.tuning_b])
    a = _side(args.a, "A", {name: getattr(args, name) for name in SIDE_OPTIONS})
    b_options = {
        name: getattr(args, f"{name}_b") if getattr(args, f"{name}_b") is not None else getattr(args, name)
        for name in SIDE_OPTIONS
    }
    b = _side(args.b, "B", b_options)
    result = compare(a, b)
    if args.html:
        write_report(args.html, f"{a.model} vs {b.model}", inputs=[args.a, args.b], comparison=result)
    if args.json:
        print(json.dumps(with_provenance(result)))
        return 0
    print("\n".join(comparison_lines(result)))
    if args.html:
        print(f"report: {args.html}")
    return 0


def _side(path: str, which: str, options: dict):
    if Path(path).suffix.lower() == ".tflite":
        board = load_board(options["board"]) if options["board"] not in (None, HOST) else None
        if options["tuning"] and board is None:
            raise MicrocompilerError(f"--tuning for {which} needs a board: a tuning log holds timings per CPU")
        log = load_tuning(options["tuning"])
        tuning = log.for_cpu(board.cpu) if log is not None and board is not None else None
        analysis = analyze_model(path, board, ram_limit=options["ram_limit"], tuning=tuning, patches=options["patches"])
        return side_from_report(analysis, _label(path, options))
    return side_from_report(load_report(path), f"{which} {Path(path).name}")


def _label(path: str, options: dict) -> str:
    given = [f"{name.replace('_', '-')} {value}" for name, value in options.items() if value is not None]
    return Path(path).name + (f" ({', '.join(given)})" if given else "")
