"""Fit the analyze command's cost model to measured per-operator instruction counts, per core family.

    python scripts/fit_cost_model.py            # every model on the five boards: bench in QEMU, fit, write
    python scripts/fit_cost_model.py --boards mps2_an385 mps2_an386   # measure these again, keep the rest
    python scripts/fit_cost_model.py --refit    # no QEMU: fit again to tests/data/cost_model_measurements.json

The one command to rerun after a kernel changes is the first: 37 models x 5 boards and the 8 ONNX
models of tests/models/onnx on two (ONNX_BOARDS), 6-120 s each
(the unrolled LSTM and GRU, timed operator by operator, are the longest), about 70 minutes on the
2-core machine shared with other work (2026-11-29), then the fit (``--refit`` alone: about 4 minutes,
compiling each model once per CPU feature set). ``--boards`` measures only the boards named (the
others' saved measurements stay), ``--models`` only the models whose file name contains one of the
words given. It ends with analyze's whole-model error on every (model, board) pair.

Runs ``microcompiler bench --json`` (QEMU with -icount shift=0: the timer's ticks x 1e9 / its rate are
instructions; the whole-model count is the standalone firmware's, ``run --mode standalone``) for each
model below on mps2_an385 (Cortex-M3: the portable C kernels), mps2_an386 (M4), mps2_an500 (M7),
mps3_an547 (M55: Helium kernels) and mps2_an521 (M33), then fits a non-negative linear model per
core family and kernel key (microcompiler/ops/cost_model.py: ``core_family``, ``keys``) and writes
microcompiler/ops/cost_model_data.py, with the measurements it used in
tests/data/cost_model_measurements.json (tests/test_analyze.py holds analyze within 10% of them).
The measurements are written after each model, so an interrupted run loses one model at most.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from tflm_side_by_side import SHORT_MODEL, SHORT_RUNS  # noqa: E402

from microcompiler.boards import load_board  # noqa: E402
from microcompiler.compiler import compile_model  # noqa: E402
from microcompiler.ops import cost_model, cost_model_data  # noqa: E402

# A model shorter than SHORT_MODEL instructions (the benchmark tables' threshold) is measured again with
# SHORT_RUNS runs per measurement: one run of hello_world's 100-instruction layers is 2 to 3 ticks of
# mps2_an521's 50-instruction timer, SHORT_RUNS back to back resolve them to a 25th of a tick.

BOARDS = ("mps2_an385", "mps2_an386", "mps2_an500", "mps3_an547", "mps2_an521")
SHARED = ROOT.parent / "shared/models"
# The models of docs/benchmarks.md's tables (scripts/benchmarks.py's ALL_MODELS) come first; then
# the ones that add kernels the tables lack (float ResNet-8, TRANSPOSE_CONV, float LSTM/GRU, SVDF).
EXTRA = [
    SHARED / "mlperf_tiny/pretrainedResnet.tflite",
    ROOT / "examples/tiny_cnn/tiny_cnn_int8.tflite",
    ROOT / "tests/models/keras/transformer_block_float32.tflite",
    ROOT / "tests/models/keras/lstm_float32.tflite",
    ROOT / "tests/models/keras/gru_float32.tflite",
    ROOT / "examples/svdf_kws/svdf_kws_int8.tflite",
]
# The committed ONNX models (issue 36): their own kernels (QUANTIZE with ONNX Runtime's rounding, ORT
# requantization epilogues and post tables, MLAS-order float kernels, QLinear* operators)
ONNX_MODELS = [
    ROOT / f"tests/models/onnx/{name}_{kind}.onnx"
    for name in ("ds_cnn", "resnet8", "dense_autoencoder", "mobilenet_v2_035_96")
    for kind in ("qdq_int8", "float32")
]
EXTRA += ONNX_MODELS
# The ONNX models are measured on the M4 and the M55 (the M3, M7 and M33 take the M4's coefficients for
# their ONNX Runtime kernels: cost_model.FAMILY_FALLBACK), except where the firmware does not fit: the
# float ResNet-8 overflows mps3_an547's DTCM and the float MobileNetV2 (903 KB of arena) its free RAM.
ONNX_BOARDS = ("mps2_an386", "mps3_an547")
NOT_MEASURED = {("resnet8_float32.onnx", "mps3_an547"), ("mobilenet_v2_035_96_float32.onnx", "mps3_an547")}


def measured_on(name: str, board: str) -> bool:
    """Whether the fit measures model file ``name`` on ``board``."""
    if (name, board) in NOT_MEASURED:
        return False
    return board in ONNX_BOARDS or not name.endswith(".onnx")


# float32 LOGISTIC, TANH, MUL, SUB, ADD of GRU-gate sizes in a main graph (the float GRU runs them only
# inside its WHILE body, whose operators bench does not time one by one): built here, FLOAT_GATES
FLOAT_GATES = "float_gates.tflite"
# Built here (file name: the builder's model): int16 LOGISTIC and TANH (piecewise-table) and RSQRT
# (int8 lut, int16 sqrt-guess) of scripts/table_benchmarks.py and the SVDF models of
# scripts/svdf_benchmarks.py (rows4; the stack with int8 state under a name of its own)
BUILT = {
    "elementwise_int16": "elementwise_int16",
    "rsqrt_int8": "rsqrt_int8",
    "rsqrt_int16": "rsqrt_int16",
    "svdf_kws_int8_state": "svdf_kws_int8",
    "svdf_large_int16": "svdf_large_int16",
    "svdf_large_int8": "svdf_large_int8",
}
NOT_FITTED = ("WHILE",)  # costed from their subgraphs (analysis/loops.py)
MEASUREMENTS = ROOT / "tests/data/cost_model_measurements.json"
OUT = ROOT / "microcompiler/ops/cost_model_data.py"
# A layer's fitting error counts relative to at least this share of its model's instructions: the
# estimate is judged on whole models, and short layers whose cost depends on the data (SOFTMAX)
# should not outweigh the ones that make a model's time.
SIGNIFICANT_SHARE = 0.02


def float_gates_model(directory: Path) -> Path:
    """x [1, 24] float32 -> sigmoid, tanh, products and sums as a GRU cell's gates compute them, and a
    sigmoid over [1, 72] (two sizes: a cost per element and per call)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from elementwise_models import activation_options
    from model_builder import ModelBuilder, add_options, mul_options

    b = ModelBuilder()
    x = b.activation("x", [1, 24], "float32")
    wide = b.activation("wide", [1, 72], "float32")
    names = ("z", "h", "zh", "r", "y")
    z, h, zh, r, y = (b.activation(n, [1, 24], "float32") for n in names)
    wide_out = b.activation("wide_sigmoid", [1, 72], "float32")
    b.op("LOGISTIC", [x], [z])
    b.op("TANH", [x], [h])
    b.op("MUL", [z, h], [zh], mul_options())
    b.op("SUB", [x, zh], [r], activation_options("SUB"))
    b.op("ADD", [r, zh], [y], add_options())
    b.op("LOGISTIC", [wide], [wide_out])
    path = directory / FLOAT_GATES
    path.write_bytes(b.finish([x, wide], [y, wide_out]))
    return path


def table_models(directory: Path) -> list[Path]:
    """The models of docs/benchmarks.md's tables (the look-alikes written to directory)."""
    import benchmarks

    return [benchmarks.model_path(key, directory) for key in benchmarks.ALL_MODELS]


def models(directory: Path) -> list[Path]:
    """Every model measured, written to directory where it is built here (look-alikes, BUILT)."""
    import svdf_benchmarks
    import table_benchmarks

    paths = table_models(directory) + EXTRA + [float_gates_model(directory)]
    data = {**table_benchmarks.elementwise_models(), **svdf_benchmarks.models()}
    for name, builder_name in BUILT.items():
        paths.append(directory / f"{name}.tflite")
        paths[-1].write_bytes(data[builder_name])
    return paths


def measure(model: Path, board: str, number: int = 1) -> dict:
    """One bench run of ``number`` runs per measurement: the whole inference and each operator, in
    instructions per run."""
    cmd = ["bench", str(model), "--board", board, "--json", "--number", str(number), "--repeat", "1"]
    proc = subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", *cmd],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=1800,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"bench failed on {model.name} --board {board}: {proc.stderr.strip()[-400:]}")
    bench = json.loads(proc.stdout)
    per_tick = 1e9 / bench["timer_hz"]  # -icount shift=0: one instruction per ns
    return {
        "board": board,
        "runs": number,
        "inference_instructions": bench["inference"]["ticks_per_run"] * per_tick,
        "operators": [
            {"index": row["index"], "kind": row["kind"], "instructions": row["ticks_per_run"] * per_tick}
            for row in bench["operators"]
        ],
    }


def timing_overhead(measured: dict) -> dict[str, float]:
    """Per board, the instructions bench's timing of one operator adds to what the operator takes in
    the whole-model run (the sum of the operators' counts less the inference's, per operator, over
    the models of at least 10 operators): about 28 on mps3_an547 (its system timer's read), 0 on
    the CMSDK timer boards. The samples are fitted without it, since the estimate is of the
    standalone run. A measurement of ``runs`` runs back to back spends it once, a ``runs``-th per run."""
    spent: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for m in measured.values():
        if len(m["operators"]) >= 10 and m.get("runs", 1) == 1:
            spent[m["board"]][0] += sum(r["instructions"] for r in m["operators"]) - m["inference_instructions"]
            spent[m["board"]][1] += len(m["operators"])
    return {board: max(0.0, total / count) for board, (total, count) in spent.items()}


def samples_of(measured: dict, paths: dict[str, Path], compiled: dict) -> dict[tuple[str, str], list]:
    """(core family, key) -> fitting samples, from every saved measurement whose model is at hand
    (``compiled``: (model, features) -> its library, filled here)."""
    samples: dict[tuple[str, str], list] = defaultdict(list)
    overhead = timing_overhead(measured)
    print("bench's timing overhead per operator: " + ", ".join(f"{b} {v:.1f}" for b, v in sorted(overhead.items())))
    for name, m in measured.items():
        model = paths.get(name.split("@")[0])
        if model is None:
            continue
        board = load_board(m["board"])
        family = cost_model.core_family(board.cpu.core, board.cpu.features)
        meta = compiled_library(model, board.cpu.features, compiled)
        total = m["inference_instructions"]
        library_ops = {op.index: op for op in meta.info.operators}
        functions = {op.index: fn for fn, op in zip(meta.functions, meta.info.operators)}
        for row in m["operators"]:
            op = library_ops[row["index"]]
            if op.kind in NOT_FITTED:
                continue
            fn = functions[row["index"]]
            dtype = meta.graph.tensors[fn.op.inputs[0]].dtype
            for key in cost_model.keys(
                op, dtype, cost_model.after_relu(meta.graph, fn.op), cost_model.onnx_knobs(fn.op)
            ):
                samples[(family, key)].append(
                    (
                        cost_model.features(op, dtype),
                        max(0.0, row["instructions"] - overhead.get(m["board"], 0.0) / m.get("runs", 1)),
                        SIGNIFICANT_SHARE * total,
                    )
                )
    return samples


def write_measurements(saved: dict) -> None:
    """tests/data/cost_model_measurements.json: one line per (model, board)."""
    lines = [f"{json.dumps(k)}: {json.dumps(saved[k], separators=(',', ':'))}" for k in sorted(saved)]
    MEASUREMENTS.write_text("{\n" + ",\n".join(lines) + "\n}\n")


def write_coefficients(coefficients: dict[str, dict[str, dict[str, float]]]) -> None:
    """cost_model_data.py: one line per kernel key, 4 significant digits."""
    lines = ['"""Cost-model coefficients per core family: generated by scripts/fit_cost_model.py, do not edit."""', ""]
    lines.append("COEFFICIENTS: dict[str, dict[str, dict[str, float]]] = {")
    for family in sorted(coefficients):
        lines.append(f"    {json.dumps(family)}: {{")
        for key, coeffs in sorted(coefficients[family].items()):
            terms = ", ".join(f"{json.dumps(n)}: {float(f'{v:.4g}')!r}" for n, v in coeffs.items())
            lines.append(f"        {json.dumps(key)}: {{{terms}}},")
        lines.append("    },")
    lines.append("}")
    OUT.write_text("\n".join(lines) + "\n")
    subprocess.run([sys.executable, "-m", "ruff", "format", "-q", str(OUT)], check=False, timeout=120)


def compiled_library(model: Path, features: frozenset[str], compiled: dict):
    """compile_model once per model and feature set (the M4, M7 and M33 share most of theirs)."""
    if (model, features) not in compiled:
        compiled[(model, features)] = compile_model(model, features=features)
    return compiled[(model, features)]


def estimate_rows(measured: dict, paths: dict[str, Path], compiled: dict | None = None, only=None) -> list[dict]:
    """analyze's whole-model estimate (as the cost model is now) beside each saved measurement whose
    model is in ``paths`` (and passes ``only(name, board)``, when given)."""
    from microcompiler.analysis.analyze import analyze_library

    compiled = {} if compiled is None else compiled
    rows = []
    for name, m in measured.items():
        model = paths.get(name.split("@")[0])
        if model is None or (only is not None and not only(model.name, m["board"])):
            continue
        board = load_board(m["board"])
        library = compiled_library(model, board.cpu.features, compiled)
        estimate = analyze_library(library, board)["totals"]["estimated_instructions"]
        rows.append(
            {"model": model.stem, "board": m["board"], "estimated": estimate, "measured": m["inference_instructions"]}
        )
    return rows


def resolution(board: str) -> float:
    """Instructions per timer tick: what one measurement can be off by at each end (40 on the CMSDK
    timer boards, 31.25 on mps3_an547, 50 on mps2_an521)."""
    return 1e9 / load_board(board).timer.get("hz")


def within(row: dict, share: float = 0.10) -> bool:
    """analyze's estimate within ``share`` of the measurement, or within the measurement's own
    resolution (two timer ticks: hello_world's 640 instructions on the M4 are 16 ticks)."""
    return abs(row["estimated"] - row["measured"]) <= max(share * row["measured"], 2 * resolution(row["board"]))


def report(rows: list[dict]) -> None:
    """analyze's whole-model estimates against the measurements, worst first per board."""
    for r in sorted(rows, key=lambda r: (r["board"], -abs(r["estimated"] / r["measured"] - 1))):
        print(f"{r['board']}  {100 * (r['estimated'] / r['measured'] - 1):+6.1f}%  {r['model']}")
    print(
        f"analyze within 10% (or 2 timer ticks) of the measured instructions on {sum(map(within, rows))} "
        f"of {len(rows)} (model, board) pairs"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--refit", action="store_true", help="no QEMU: fit the saved measurements again")
    parser.add_argument("--boards", nargs="+", choices=BOARDS, default=list(BOARDS), help="boards to measure")
    parser.add_argument("--models", nargs="+", help="measure only models whose file name contains one of these")
    args = parser.parse_args(argv)
    saved = json.loads(MEASUREMENTS.read_text()) if MEASUREMENTS.exists() else {}
    start = time.monotonic()
    failures = []
    with tempfile.TemporaryDirectory(prefix="fit_cost_model-") as tmp:
        paths = {p.name: p for p in models(Path(tmp))}
        if not args.refit:
            for board in args.boards:
                for name, model in paths.items():
                    if args.models and not any(w in name for w in args.models):
                        continue
                    if not measured_on(name, board):
                        continue
                    t0 = time.monotonic()
                    try:
                        saved[f"{name}@{board}"] = measure(model, board)
                        if saved[f"{name}@{board}"]["inference_instructions"] < SHORT_MODEL:
                            saved[f"{name}@{board}"] = measure(model, board, SHORT_RUNS)
                    except (RuntimeError, subprocess.TimeoutExpired) as exc:
                        failures.append(str(exc))
                        print(f"FAILED: {exc}", flush=True)
                        continue
                    write_measurements(saved)
                    total = saved[f"{name}@{board}"]["inference_instructions"]
                    print(f"{name} on {board}: {total:,.0f} instructions ({time.monotonic() - t0:.0f} s)", flush=True)
        compiled: dict = {}
        samples = samples_of(saved, paths, compiled)
        coefficients: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
        for (family, key), s in sorted(samples.items()):
            coefficients[family][key] = cost_model.fit(s)
        write_coefficients(coefficients)
        cost_model_data.COEFFICIENTS = dict(coefficients)
        report(estimate_rows(saved, paths, compiled))
    print(
        f"wrote the coefficients of {sum(map(len, coefficients.values()))} kernel keys in {len(coefficients)} core families"
    )
    print(f"{time.monotonic() - start:.0f} s")
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
