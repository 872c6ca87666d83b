"""``microcompiler analyze MODEL [--board B]``: per-layer costs, totals, fit and memory plan, no build."""

from __future__ import annotations

import json

from microcompiler.analysis import analyze_model
from microcompiler.boards import HOST, load_board
from microcompiler.commands.arguments import add_ram_limit_argument, add_zephyr_base_argument, zephyr_base_of
from microcompiler.commands.compile import check_operators
from microcompiler.commands.output import peak_line
from microcompiler.errors import UnsupportedModelError, printable
from microcompiler.report import check_report_path, write_report
from microcompiler.report.provenance import with_provenance
from microcompiler.timing import describe


def add_parser(sub) -> None:
    p = sub.add_parser(
        "analyze",
        help="per-layer MACs, weights, kernels, estimated time and memory, no build",
        description="Compile MODEL for the board's CPU (nothing is built or written) and report each "
        "layer's operator, shapes, MACs, weight bytes, kernel variant and estimated "
        "instructions (a cost model fitted to measured 'bench' runs), the flash and RAM "
        "totals against the board's memories, and the memory plan.",
    )
    p.add_argument("model", help="the .tflite file")
    p.add_argument("--board", help="board to analyze for (default: portable C, no fit check)")
    add_zephyr_base_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with charts")
    add_ram_limit_argument(p)
    p.set_defaults(func=run)


def run(args) -> int:
    if args.html:
        check_report_path(args.html, [args.model])
    board = load_board(args.board, zephyr_base_of(args)) if args.board not in (None, HOST) else None
    try:
        result = analyze_model(args.model, board, ram_limit=args.ram_limit)
    except UnsupportedModelError:
        check_operators(args.model, only_if_missing=True)  # every operator the model lacks, not only the first
        raise  # nothing lacks a kernel: the model's own error
    if args.html:
        write_report(
            args.html,
            f"{result['model']}: analysis" + (f" for {board.name}" if board else ""),
            inputs=[args.model],
            analysis=result,
        )
    if args.json:
        print(json.dumps(with_provenance(result)))
        return 0
    print_analysis(result)
    if args.html:
        print(f"report: {printable(args.html)}")
    return 0


def print_analysis(result: dict) -> None:
    t = result["totals"]
    where = f" on {result['board']} ({result['core']})" if result["board"] else ""
    print(
        f"{result['model']}{where}: {len(result['layers'])} layers, {t['macs']:,} MACs, "
        f"estimated {describe(result['estimated_time'])}"
    )
    kernels = [_kernel_name(layer["kernel"]) for layer in result["layers"]]
    names = [layer["name"] for layer in result["layers"]]
    name_width = max([5, *map(len, names)])  # whole names and kernels: a cut one ('gemmlowp-fixed-p') reads wrong
    kernel_width = max([6, *map(len, kernels)])
    print(
        f"{'#':>3}  {'layer':<{name_width}} {'operator':<20} {'output':<14} {'MACs':>11} {'weights B':>10} "
        f"{'kernel':<{kernel_width}} {'est. instr.':>12}"
    )
    for layer, kernel in zip(result["layers"], kernels):
        out = "x".join(map(str, layer["outputs"][0])) if layer["outputs"] else "-"
        print(
            f"{layer['index']:>3}  {layer['name']:<{name_width}} {layer['kind']:<20} {out:<14} "
            f"{layer['macs']:>11,} {layer['weights_bytes']:>10,} {kernel:<{kernel_width}} "
            f"{layer['estimated_instructions']:>12,}"
        )
    print(
        f"flash: weights {t['weights_bytes']:,} B + code about {t['code_bytes_estimate']:,} B = {t['flash_bytes']:,} B"
    )
    print(
        f"RAM: arena {t['arena_bytes']:,} B + scratch {t['scratch_bytes']:,} B + state {t['state_bytes']:,} B + "
        f"{'stack' if t.get('stack_includes', 'stack') == 'stack' else 'Zephyr stack, kernel and buffers'} "
        f"{t['stack_bytes_estimate']:,} B + runtime = {t['ram_bytes']:,} B"
    )
    plan = result["memory_plan"]
    print(
        f"memory plan: arena {plan['arena_bytes']:,} B for {len(plan['buffers'])} tensors; layer-by-layer lower "
        f"bound {plan['lower_bound_bytes']:,} B"
    )
    print(peak_line(result["memory_peak"]))
    print_ram_budget(result["ram_budget"])
    if result["fit"]:
        for what, f in result["fit"].items():
            verdict = "fits" if f["fits"] else "DOES NOT FIT"
            print(
                f"{what}: {verdict}: {f['needed']:,} of {f['available']:,} B in {f['region']} "
                f"({f['used_percent']}%, margin {f['margin']:,} B)"
            )


def _kernel_name(kernel: dict) -> str:
    """The variant and the instruction set it uses: ``im2col/dsp``, ``mve-dot/mve``, ``reference``."""
    isa = kernel.get("isa")
    return kernel.get("variant", "") + (f"/{isa}" if isa else "")


def print_ram_budget(budget: dict) -> None:
    """The plans the RAM-budget planner tried (passes/ram_budget.py) and the one it chose."""
    if not budget:
        return
    print(
        f"RAM budget: {budget['limit']:,} B of arena + scratch ({budget['limit_source']}); "
        f"{len(budget['plans'])} plans tried, chosen: {budget['chosen']}"
    )
    print(f"    {'plan':<62} {'arena + scratch B':>18} {'extra MACs':>11} {'est. instr.':>12}  peak at")
    for p in budget["plans"]:
        mark = "->" if p["chosen"] else ("  " if p["fits"] else " x")
        ram = f"{p['arena_bytes']:,} + {p['scratch_bytes']:,}"
        print(
            f" {mark} {p['plan'][:62]:<62} {ram:>18} {p['extra_macs']:>11,} {p['estimated_instructions']:>12,}  "
            f"{p['peak_layer']}"
        )
