"""Fit the analyze command's cost model to measured per-operator instruction counts.

    python scripts/fit_cost_model.py            # ~13 min: bench in QEMU, fit, rewrite the coefficients
    python scripts/fit_cost_model.py --refit    # ~1 min: fit again to the measurements of the last run

Runs ``microcompiler bench --json`` for each model below on mps2_an386 (QEMU with -icount
shift=0: the timer's ticks x 40 are instructions), and the int8 MLPerf Tiny models on mps3_an547 too
(the Cortex-M55's Helium kernels have kernel keys of their own; ticks x 31.25), then fits a non-negative linear model per kernel
key (microcompiler/ops/cost_model.py) and writes microcompiler/ops/cost_model_data.py,
with the measurements it used in tests/data/cost_model_measurements.json (the accuracy test reads it).
"""

from __future__ import annotations

import json
import pprint
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from microcompiler.boards import load_board  # noqa: E402
from microcompiler.compiler import compile_model  # noqa: E402
from microcompiler.ops import cost_model  # noqa: E402

BOARD = "mps2_an386"
MODELS = [
    ROOT.parent / "shared/models" / m
    for m in (
        "mlperf_tiny/kws_ref_model.tflite",
        "mlperf_tiny/pretrainedResnet_quant.tflite",
        "mlperf_tiny/ad01_int8.tflite",
        "mlperf_tiny/pretrainedResnet.tflite",
        "tflm/hello_world_int8.tflite",
        "tflm/hello_world_float.tflite",
        "tflm/seanet/conv0.tflite",
        "tflm/seanet/conv2.tflite",
    )
] + [ROOT / "examples/tiny_cnn/tiny_cnn_int8.tflite"]
# The Keras look-alikes of issue 21 (tests/models/keras): TRANSPOSE_CONV, BATCH_MATMUL, LSTM and the
# float GRU's WHILE loop (costed by analysis/loops.py from its body's operators, not fitted itself)
KERAS = [
    ROOT / "tests/models/keras" / f"{m}.tflite"
    for m in (
        "conv_autoencoder_int8",
        "unet_int8",
        "transformer_block_int8",
        "lstm_int8",
        "transformer_block_float32",
        "lstm_float32",
        "gru_float32",
    )
]
MODELS += KERAS
# float32 LOGISTIC, TANH, MUL, SUB, ADD of GRU-gate sizes in a main graph (the float GRU runs them only
# inside its WHILE body, whose operators bench does not time one by one): built here, FLOAT_GATES
FLOAT_GATES = "float_gates.tflite"
# The int16x8 look-alike with int16 LOGISTIC (piecewise-table), TRANSPOSE_CONV and CONV_2D kernels, and
# the SVDF example (a keyword-spotting stack with int16 state: SVDF rows4)
EXTRA = [ROOT / "tests/models/keras/conv_autoencoder_int16x8.tflite", ROOT / "examples/svdf_kws/svdf_kws_int8.tflite"]
MODELS += EXTRA
# Built here (BUILT, file name: the builder's model): int16 LOGISTIC and TANH (piecewise-table) and
# RSQRT (int8 lut, int16 sqrt-guess) of scripts/table_benchmarks.py and the SVDF models of scripts/svdf_benchmarks.py (rows4; the stack with
# int8 state under a name of its own, the example's file name being taken)
BUILT = {
    "elementwise_int16": "elementwise_int16",
    "rsqrt_int8": "rsqrt_int8",
    "rsqrt_int16": "rsqrt_int16",
    "svdf_kws_int8_state": "svdf_kws_int8",
    "svdf_large_int16": "svdf_large_int16",
    "svdf_large_int8": "svdf_large_int8",
}
M55_BUILT = ("elementwise_int16", "rsqrt_int16", "svdf_large_int8")
# The Cortex-M55 (Helium kernels: their own variants, so their own keys)
M55_BOARD = "mps3_an547"
M55_MODELS = MODELS[:3] + KERAS[:4] + EXTRA
NOT_FITTED = ("WHILE",)  # costed from their subgraphs (analysis/loops.py)
OUT = ROOT / "microcompiler/ops/cost_model_data.py"
MEASUREMENTS = ROOT / "tests/data/cost_model_measurements.json"


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


def built_models(directory: Path) -> dict[str, Path]:
    """The BUILT models, written to directory."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import svdf_benchmarks
    import table_benchmarks

    data = {**table_benchmarks.elementwise_models(), **svdf_benchmarks.models()}
    paths = {}
    for name, builder_name in BUILT.items():
        paths[name] = directory / f"{name}.tflite"
        paths[name].write_bytes(data[builder_name])
    return paths


def measure(model: Path, board: str) -> dict:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "microcompiler.cli",
            "bench",
            str(model),
            "--board",
            board,
            "--json",
            "--number",
            "1",
            "--repeat",
            "1",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    if proc.returncode != 0:
        raise SystemExit(f"bench failed on {model.name}: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


# A layer's fitting error counts relative to at least this share of its model's instructions: the
# estimate is judged on whole models (analyze within 20% of bench), and short layers whose cost depends
# on the data (SOFTMAX) should not outweigh the ones that make a model's time.
SIGNIFICANT_SHARE = 0.02


def main(argv=None) -> int:
    refit = "--refit" in (argv if argv is not None else sys.argv[1:])
    saved = json.loads(MEASUREMENTS.read_text()) if refit else {}
    samples = defaultdict(list)
    measured = {}
    work = Path(tempfile.mkdtemp(prefix="fit_cost_model-"))
    built = built_models(work)
    for board_name, models in (
        (BOARD, MODELS + [float_gates_model(work)] + [built[n] for n in BUILT]),
        (M55_BOARD, M55_MODELS + [built[n] for n in M55_BUILT]),
    ):
        board = load_board(board_name)
        instructions_per_tick = 1e9 / board.timer.get("hz")  # -icount shift=0: one instruction per ns
        for model in models:
            name = model.name if board_name == BOARD else f"{model.name}@{board_name}"
            meta = compile_model(model, features=board.cpu.features)
            if refit and name in saved:  # the measurements of the last run, the features of this compile
                measured[name] = saved[name]
            else:
                bench = measure(model, board_name)
                measured[name] = {
                    "board": board_name,
                    "inference_instructions": bench["inference"]["ticks"] * instructions_per_tick,
                    "operators": [
                        {"index": row["index"], "instructions": row["ticks"] * instructions_per_tick}
                        for row in bench["operators"]
                    ],
                }
            total = measured[name]["inference_instructions"]
            library_ops = {op.index: op for op in meta.info.operators}
            graph = meta.graph
            for fn, row in zip(meta.functions, measured[name]["operators"]):
                op = library_ops[row["index"]]
                if op.kind in NOT_FITTED:
                    continue
                dtype = graph.tensors[fn.op.inputs[0]].dtype
                for key in cost_model.keys(op, dtype):
                    samples[key].append(
                        (cost_model.features(op, dtype), row["instructions"], SIGNIFICANT_SHARE * total)
                    )
            print(f"{name} on {board_name}: {total:,.0f} instructions")
    shutil.rmtree(work)
    coefficients = {key: cost_model.fit(s) for key, s in sorted(samples.items())}
    OUT.write_text(
        '"""Cost-model coefficients: generated by scripts/fit_cost_model.py, do not edit."""\n'
        f"COEFFICIENTS: dict[str, dict[str, float]] = {pprint.pformat(coefficients, width=110)}\n"
    )
    MEASUREMENTS.write_text(json.dumps(measured, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)} ({len(coefficients)} kernel keys) and {MEASUREMENTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
