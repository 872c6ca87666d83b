"""``microcompiler validate MODEL --board B``: the model on the device against TFLite Micro.

Runs N seeded inputs (or the .npy files of a directory) standalone and host-driven, compares every
output with the TFLite Micro interpreter (and with the float model, --reference), and on any mismatch
names the first layer that diverges. Exit status 1 when an output is not exact (docs/validate.md).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from microcompiler.analysis.analyze import analyze_library
from microcompiler.boards import resolve_board
from microcompiler.commands.arguments import add_board_arguments, positive_seconds, ram_budget, tuning_for
from microcompiler.compiler import compile_model
from microcompiler.errors import MicrocompilerError, printable
from microcompiler.frontend.tflite import load_tflite
from microcompiler.inputs import DEFAULT_SEED, check_input, load_array, random_inputs
from microcompiler.progress import log_line
from microcompiler.report import check_report_path, write_report
from microcompiler.targets import MODES, STANDALONE, target_for
from microcompiler.validation import DeviceOptions, Sample, validate
from microcompiler.user_files import MAX_MODEL_BYTES, read_user_file

DEFAULT_SAMPLES = 10
MAX_SAMPLES = 100_000


def add_parser(sub) -> None:
    p = sub.add_parser("validate", help="run inputs on a board and compare every output with TFLite Micro",
                       description="Compile MODEL for BOARD, run N seeded inputs (or the .npy files in DIR) on the "
                                   "device, standalone and host-driven, and compare every output with the TFLite "
                                   "Micro interpreter (and the float model with --reference): exact-match rate, "
                                   "max and mean absolute error, cosine similarity, top-1 agreement. On a "
                                   "mismatch, every layer is compared host-driven and the first that diverges "
                                   "is named. Exit status 1 when an output is not exact.")
    add_board_arguments(p, board_required=True)
    p.add_argument("--inputs", default=str(DEFAULT_SAMPLES), metavar="DIR|N",
                   help=f"N seeded random inputs (default: {DEFAULT_SAMPLES}), or a directory of .npy files, "
                        "one per sample (one-input models)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="the first seed of --inputs N (sample k uses "
                                                                    f"seed + k; default: {DEFAULT_SEED})")
    p.add_argument("--reference", metavar="FLOAT.tflite", help="also compare with this float model (our outputs "
                                                               "dequantized)")
    p.add_argument("--mode", choices=MODES, help="run only standalone or only host-driven (default: both)")
    p.add_argument("--timeout", type=positive_seconds("--timeout"), default=300.0,
                   help="seconds one inference may take (default: 300)")
    p.add_argument("--keep", metavar="DIR", help="keep the firmware projects in DIR/standalone and DIR/host-driven")
    p.add_argument("--html", metavar="FILE", help="also write the HTML report with the validation metrics")
    p.set_defaults(func=run)


def samples_from(spec: str, seed: int, inputs_meta: list[dict]) -> list[Sample]:
    """--inputs N (seeded) or --inputs DIR (its .npy files, sorted by name)."""
    if re.fullmatch(r"[+-]?\d+", spec.strip()):
        n = int(spec)
        if not 1 <= n <= MAX_SAMPLES:
            raise MicrocompilerError(f"--inputs {spec}: give between 1 and {MAX_SAMPLES:,} inputs, e.g. --inputs 10")
        return [Sample(random_inputs(inputs_meta, seed + k), f"seed {seed + k}") for k in range(n)]
    directory = Path(spec)
    if not spec.strip() or not directory.is_dir():
        raise MicrocompilerError(f"--inputs {spec}: no such directory (and not a number); give a number of seeded "
                                 "inputs (--inputs 10) or a directory of .npy files")
    files = sorted(directory.glob("*.npy"))
    if not files:
        raise MicrocompilerError(f"--inputs {spec}: the directory has no .npy files; save one array per sample "
                                 "with numpy.save('DIR/x0.npy', array)")
    if len(inputs_meta) != 1:
        raise MicrocompilerError(f"--inputs DIR is not supported yet for models with {len(inputs_meta)} inputs; "
                                 "use --inputs N (seeded random inputs)")
    return [Sample([check_input(load_array(str(f)), inputs_meta[0], str(f))], f.name) for f in files]


def run(args) -> int:
    given = [args.model, args.reference, getattr(args, "tuning", None)]
    if args.html:
        check_report_path(args.html, given)
    board = resolve_board(args.board)
    target = target_for(board, args.template)
    target.check_board(board)
    modes = (args.mode,) if args.mode else MODES
    if args.port and STANDALONE in modes:
        raise MicrocompilerError("--port talks to firmware already running on a board, but standalone validation "
                                 "builds and loads new firmware for every input; add --mode host-driven")
    for mode in modes:
        target.check_run(mode=mode, keep=args.keep, port=args.port)
    float_bytes = _read(args.reference, "--reference") if args.reference else None
    original = load_tflite(args.model)
    library = compile_model(args.model, features=board.cpu.features, tuning=tuning_for(args, board.cpu),
                            patches=args.patches, **ram_budget(args, board))
    samples = samples_from(args.inputs, args.seed, library.metadata["inputs"])
    options = DeviceOptions(template=args.template, port=args.port, rpc_timeout=args.rpc_timeout,
                            timeout=args.timeout, keep=args.keep)
    report = validate(library, board, samples, _read(args.model, "the model"), original, modes=modes,
                      float_bytes=float_bytes, options=options, log=log_line)
    if args.html:
        analysis = analyze_library(library, None if board.is_host else board)
        write_report(args.html, f"{report['model']}: validation on {board.name}", inputs=given,
                     analysis=analysis, validation=report)
    if args.json:
        print(json.dumps(report))
    else:
        print_validation(report)
        if args.html:
            print(f"report: {printable(args.html)}")
    return 0 if report["passed"] else 1


def _read(path: str, what: str) -> bytes:
    return read_user_file(path, what, MAX_MODEL_BYTES)


def verdict(report: dict) -> str:
    """PASSED (exact) only for bit-for-bit equality with TFLM; a float model within tolerance says
    its largest error in ulp instead."""
    if not report["passed"]:
        return "FAILED"
    if report.get("bit_exact"):
        return "PASSED (exact)"
    return f"PASSED (within tolerance, not exact: largest float error {report.get('max_ulp_error', 0):,} ulp)"


def print_validation(report: dict) -> None:
    print(f"{report['model']} on {report['board']}: {len(report['samples'])} inputs, "
          f"{' and '.join(report['modes'])}: {verdict(report)}")
    print(f"{'mode':<12} {'against':<7} {'output':<20} {'exact':>8} {'max err':>10} {'mean err':>10} "
          f"{'cosine':>9} {'top-1':>7}")
    for c in report["comparisons"]:
        for o in c["outputs"]:
            top1 = "-" if o["top1_agreement"] is None else f"{100 * o['top1_agreement']:.1f}%"
            print(f"{c['mode']:<12} {c['against']:<7} {o['name'][:20]:<20} {100 * o['exact_match_rate']:>7.2f}% "
                  f"{o['max_abs_error']:>10.4g} {o['mean_abs_error']:>10.4g} {o['cosine_similarity']:>9.6f} "
                  f"{top1:>7}")
    d = report.get("divergence")
    if d and d["diverged"]:
        print(f"first diverging layer: operator {d['index']} {d['layer']} ({d['operator']}), tensor '{d['tensor']}': "
              f"max error {d['max_abs_error']:g}, {d['mismatched_elements']:,} of {d['elements']:,} elements "
              f"differ ({d['sample']})")
    elif d:
        print(f"every compared layer matches ({d['checked_tensors']} tensors); the difference is in the outputs' copy")
    if d and d["skipped_tensors"]:
        print(f"not compared: {len(d['skipped_tensors'])} intermediate tensors the passes removed (fused or "
              "aliased): " + ", ".join(t["tensor"][:40] for t in d["skipped_tensors"][:5])
              + (", ..." if len(d["skipped_tensors"]) > 5 else ""))
