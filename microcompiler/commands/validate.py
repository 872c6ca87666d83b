"""``microcompiler validate MODEL --board B``: the model on the device against TFLite Micro.

Runs N seeded inputs (or a dataset: an archive, a CSV file or a directory of per-sample files) standalone and host-driven, compares every
output with the TFLite Micro interpreter (and with the float model, --reference), and on any mismatch
names the first layer that diverges. Exit status 1 when an integer output is not exact or a float
output is outside the tolerance; "exact" is printed only for bit-for-bit equality (docs/validate.md).
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from microcompiler.analysis.analyze import analyze_library
from microcompiler.boards import resolve_board
from microcompiler.codegen.model_info import TensorInfo
from microcompiler.commands.arguments import (
    add_board_arguments,
    positive_seconds,
    ram_budget,
    tuning_for,
    zephyr_base_of,
)
from microcompiler.compiler import compile_model
from microcompiler.errors import MicrocompilerError, printable
from microcompiler.frontend.tflite import load_tflite
from microcompiler.inputs import DEFAULT_SEED, random_inputs
from microcompiler.progress import log_line
from microcompiler.report import check_report_path, write_report
from microcompiler.report.provenance import with_provenance
from microcompiler.targets import MODES, STANDALONE, target_for
from microcompiler.user_files import MAX_MODEL_BYTES, read_user_file
from microcompiler.validation import DeviceOptions, Sample, validate
from microcompiler.validation.dataset import DEFAULT_PIXEL_RANGE, MAX_SAMPLES, add_label_metrics, samples_and_labels
from microcompiler.validation.onnx_reference import onnx_model

DEFAULT_SAMPLES = 10


def add_parser(sub) -> None:
    p = sub.add_parser(
        "validate",
        help="run inputs on a board and compare every output with TFLite Micro (ONNX Runtime for .onnx)",
        description="Compile MODEL for BOARD, run N seeded inputs (or a dataset's samples) on the "
        "device, standalone and host-driven, and compare every output with the TFLite "
        "Micro interpreter (and the float model with --reference): exact-match rate, "
        "max and mean absolute error, cosine similarity, top-1 agreement. On a "
        "mismatch, every layer is compared host-driven and the first that diverges "
        "is named. Prints 'exact' only when every output is bit for bit TFLM's (else "
        "the largest float error in ulp). Exit status 1 when an integer output is not "
        "exact or a float output is outside the tolerance. An .onnx model is compared with "
        "ONNX Runtime's default CPU session instead (outputs only; docs/onnx.md).",
    )
    # "--pixel-range -1,1": a negative LOW is a value, not an option (argparse's own test takes only
    # plain negative numbers; this parser has no option that looks like one)
    p._negative_number_matcher = re.compile(r"^-\d+$|^-\d*\.\d+$|^-\d*\.?\d+,-?\d*\.?\d+$")
    add_board_arguments(p, board_required=True)
    p.add_argument(
        "--inputs",
        default=str(DEFAULT_SAMPLES),
        metavar="DIR|N",
        help=f"N seeded random inputs (default: {DEFAULT_SAMPLES}), or a directory of per-sample files "
        "(the same as --dataset DIR)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help=f"the first seed of --inputs N (sample k uses seed + k; default: {DEFAULT_SEED})",
    )
    p.add_argument(
        "--dataset",
        metavar="FILE|DIR",
        help="real samples instead of --inputs: an .npz archive (one array "
        "per model input, the first axis counting the samples; real values for a quantized input are "
        "quantized with its scale and zero point; a 'y' or 'labels' array gives the classes), a .csv "
        "file (one sample per row), or a directory of per-sample files taken in name order: .npy, .npz "
        "(one array per input) or images (.png, .jpg, .bmp; never resized)",
    )
    p.add_argument(
        "--pixel-range",
        type=pixel_range,
        default=DEFAULT_PIXEL_RANGE,
        metavar="LOW,HIGH",
        help="the real values of pixels 0 and 255 in --dataset images, quantized with the input's scale and "
        "zero point (default: 0,1; e.g. -1,1 or 0,255)",
    )
    p.add_argument(
        "--labels",
        metavar="FILE",
        help="the class of each sample (.npy, one integer per line in the samples' order, or "
        "'filename,label' rows for --dataset DIR): "
        "top-1 accuracy of the device, TFLite Micro and the float model, and a confusion matrix",
    )
    p.add_argument(
        "--save-outputs",
        metavar="FILE.npz",
        help="keep every output: the device's, TFLite Micro's and the float model's, per sample (and the labels)",
    )
    p.add_argument(
        "--reference", metavar="FLOAT.tflite", help="also compare with this float model (our outputs dequantized)"
    )
    p.add_argument("--mode", choices=MODES, help="run only standalone or only host-driven (default: both)")
    p.add_argument(
        "--timeout",
        type=positive_seconds("--timeout"),
        default=300.0,
        help="seconds one inference may take (default: 300)",
    )
    p.add_argument("--keep", metavar="DIR", help="keep the firmware projects in DIR/standalone and DIR/host-driven")
    p.add_argument("--html", metavar="FILE", help="also write the HTML report with the validation metrics")
    p.set_defaults(func=run)


def seeded_samples(spec: str, seed: int, inputs_meta: list[TensorInfo]) -> list[Sample]:
    """--inputs N: N seeded random inputs (sample k uses seed + k)."""
    n = int(spec)
    if not 1 <= n <= MAX_SAMPLES:
        raise MicrocompilerError(f"--inputs {spec}: give between 1 and {MAX_SAMPLES:,} inputs, e.g. --inputs 10")
    return [Sample(random_inputs(inputs_meta, seed + k), f"seed {seed + k}") for k in range(n)]


def dataset_of(args) -> str | None:
    """--dataset FILE|DIR, or --inputs DIR (the same directory of per-sample files)."""
    if re.fullmatch(r"[+-]?\d+", args.inputs.strip()):
        return args.dataset
    if not args.inputs.strip() or not Path(args.inputs).is_dir():
        raise MicrocompilerError(
            f"--inputs {args.inputs}: no such directory (and not a number); give a number of seeded "
            "inputs (--inputs 10) or a directory of per-sample files (--dataset DIR)"
        )
    return args.inputs


def pixel_range(text: str) -> tuple[float, float]:
    """--pixel-range LOW,HIGH: the real values of pixel 0 and pixel 255."""
    try:
        low, high = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not LOW,HIGH (the real values of pixels 0 and 255), e.g. 0,1 or -1,1 or 0,255"
        ) from None
    if not (math.isfinite(low) and math.isfinite(high)) or low == high:
        raise argparse.ArgumentTypeError(f"'{text}': give two different finite numbers, e.g. 0,1")
    return low, high


def save_outputs(path: str, collected: dict, labels) -> Path:
    """Every output per source and sample in one .npz (``<source>_output<k>``, stacked over samples)."""
    arrays: dict[str, Any] = {"microcompiler_validate": np.array(1)}
    for source, per_sample in collected.items():
        for k in range(len(per_sample[0]) if per_sample else 0):
            arrays[f"{source.replace('-', '_')}_output{k}"] = np.stack([np.asarray(s[k]) for s in per_sample])
    if labels is not None:
        arrays["labels"] = labels
    out = Path(path)
    with open(out, "wb") as f:
        np.savez(f, **arrays)
    return out


def check_outputs_path(path: str, given: list) -> None:
    """--save-outputs never replaces an input or a file it did not write (an earlier saved-outputs file)."""
    out = Path(path)
    if out.suffix.lower() != ".npz":
        raise MicrocompilerError(f"--save-outputs {path}: give a file name ending in .npz")
    for g in given:
        if g is not None and Path(g).exists() and out.exists() and out.resolve() == Path(g).resolve():
            raise MicrocompilerError(f"--save-outputs {path} is one of the command's inputs; give another file")
    if out.exists():
        try:
            with np.load(out, allow_pickle=False) as old:
                ours = "microcompiler_validate" in old.files
        except (OSError, ValueError, EOFError):
            ours = False
        if not ours:
            raise MicrocompilerError(
                f"--save-outputs {path} exists and was not written by validate; give a new file name"
            )
    if not out.parent.is_dir():
        raise MicrocompilerError(f"--save-outputs {path}: the folder {out.parent} does not exist")


def check_distinct_outputs(outputs: dict[str, str | None]) -> None:
    """Two options never name one path (a report over the saved outputs): refused before the run."""
    seen: dict[Path, str] = {}
    for option, path in outputs.items():
        if path is None:
            continue
        resolved = Path(path).resolve()
        if resolved in seen:
            raise MicrocompilerError(
                f"{seen[resolved]} and {option} both name {path}; one would overwrite the other: give each its own file"
            )
        seen[resolved] = option


def run(args) -> int:
    given = [args.model, args.reference, getattr(args, "tuning", None), args.dataset, args.labels]
    if args.html:
        check_report_path(args.html, given)
    if args.save_outputs:
        check_outputs_path(args.save_outputs, given)
    check_distinct_outputs({"--html": args.html, "--save-outputs": args.save_outputs, "--keep": args.keep})
    if args.dataset and args.inputs != str(DEFAULT_SAMPLES):
        raise MicrocompilerError("--dataset and --inputs both give the samples; pass one of them")
    dataset = dataset_of(args)
    board = resolve_board(args.board, zephyr_base_of(args))
    target = target_for(board, args.template)
    target.check_board(board)
    modes = (args.mode,) if args.mode else MODES
    if args.port and STANDALONE in modes:
        raise MicrocompilerError(
            "--port talks to firmware already running on a board, but standalone validation "
            "builds and loads new firmware for every input; add --mode host-driven"
        )
    for mode in modes:
        target.check_run(mode=mode, keep=args.keep, port=args.port)
    model_bytes = _read(args.model, "the model")
    onnx_path = onnx_model(args.model, model_bytes)
    if onnx_path is not None and args.reference:
        raise MicrocompilerError(
            "--reference gives the float .tflite model of a quantized one; an ONNX model is compared with "
            "ONNX Runtime running the model itself: drop --reference"
        )
    float_bytes = _read(args.reference, "--reference") if args.reference else None
    original = load_tflite(args.model)
    library = compile_model(
        args.model,
        features=board.cpu.features,
        tuning=tuning_for(args, board.cpu),
        patches=args.patches,
        **ram_budget(args, board),
    )
    meta = library.info.inputs
    samples, labels = samples_and_labels(
        meta,
        dataset=dataset,
        labels=args.labels,
        otherwise=lambda: seeded_samples(args.inputs, args.seed, meta),
        pixel_range=args.pixel_range,
        outputs_meta=library.info.outputs,
    )
    options = DeviceOptions(
        template=args.template,
        port=args.port,
        rpc_timeout=args.rpc_timeout,
        timeout=args.timeout,
        keep=args.keep,
        zephyr_base=zephyr_base_of(args),
    )
    collected: dict = {}
    report = validate(
        library,
        board,
        samples,
        model_bytes,
        original,
        modes=modes,
        float_bytes=float_bytes,
        options=options,
        log=log_line,
        collect=collected,
        onnx_path=onnx_path,
    )
    add_label_metrics(report, collected, labels)
    if args.save_outputs:
        report["saved_outputs"] = str(save_outputs(args.save_outputs, collected, labels))
    if args.html:
        analysis = analyze_library(library, None if board.is_host else board)
        write_report(
            args.html,
            f"{report['model']}: validation on {board.name}",
            inputs=given,
            analysis=analysis,
            validation=report,
        )
    if args.json:
        print(json.dumps(with_provenance(report)))
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
    print(
        f"{report['model']} on {report['board']}: {len(report['samples'])} inputs, "
        f"{' and '.join(report['modes'])}: {verdict(report)}"
    )
    print(
        f"{'mode':<12} {'against':<7} {'output':<20} {'exact':>8} {'max err':>10} {'mean err':>10} "
        f"{'rmse':>10} {'cosine':>9} {'top-1':>7}"
    )
    for c in report["comparisons"]:
        for o in c["outputs"]:
            top1 = "-" if o["top1_agreement"] is None else f"{100 * o['top1_agreement']:.1f}%"
            # against the float model nothing is meant to be exact: its errors say how close
            exact = "-" if c["against"] == "float" else f"{100 * o['exact_match_rate']:.2f}%"
            print(
                f"{c['mode']:<12} {c['against']:<7} {printable(o['name'][:20]):<20} {exact:>8} "
                f"{o['max_abs_error']:>10.4g} {o['mean_abs_error']:>10.4g} {o.get('rmse', 0.0):>10.4g} "
                f"{o['cosine_similarity']:>9.6f} {top1:>7}"
            )
    for source, m in (report.get("labels") or {}).items():
        print(
            f"accuracy against the labels ({source}): {100 * m['accuracy']:.2f}% ({m['correct']:,} of {m['samples']:,})"
        )
    if report.get("labels"):
        first = next(iter(report["labels"].values()))
        print(
            "confusion (rows: label, columns: predicted): "
            + "; ".join(f"{c}: {row}" for c, row in enumerate(first["confusion"]))
        )
    if report.get("saved_outputs"):
        print(f"outputs saved: {report['saved_outputs']}")
    d = report.get("divergence")
    if d and d["diverged"]:
        print(  # the layer and tensor come from the model, the sample's name from a file name: shown as text
            printable(
                f"first diverging layer: operator {d['index']} {d['layer']} ({d['operator']}), tensor "
                f"'{d['tensor']}': max error {d['max_abs_error']:g}, {d['mismatched_elements']:,} of "
                f"{d['elements']:,} elements differ ({d['sample']})"
            )
        )
    elif d:
        print(f"every compared layer matches ({d['checked_tensors']} tensors); the difference is in the outputs' copy")
    if d and d["skipped_tensors"]:
        print(
            f"not compared: {len(d['skipped_tensors'])} intermediate tensors the passes removed (fused or "
            "aliased): "
            + printable(", ".join(t["tensor"][:40] for t in d["skipped_tensors"][:5]))
            + (", ..." if len(d["skipped_tensors"]) > 5 else "")
        )
