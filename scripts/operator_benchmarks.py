#!/usr/bin/env python3
"""Instructions per MAC (per element for elementwise operators) per operator kind, on the emulated
boards, for the table "Where the time goes, per operator kind" of docs/benchmarks.md (issue 21).

For each model and board it runs

    microcompiler bench MODEL --board BOARD --json

(QEMU with -icount shift=0: one instruction per virtual nanosecond, so an operator's instructions are
its timer ticks x 1e9 / timer_hz: 40 per tick on the Cortex-M4's 25 MHz CMSDK timer, 31.25 on the
M55's 32 MHz counter; the per-operator times of ``bench`` are read around each operator only) and
sums the instructions and MACs (elements) of every operator of the selected kinds.

    python scripts/operator_benchmarks.py                              # this checkout
    python scripts/operator_benchmarks.py --checkout /tmp/before       # another one (e.g. 'before')
    python scripts/operator_benchmarks.py --models unet_int8 --boards mps2_an386 --kinds TRANSPOSE_CONV
    python scripts/operator_benchmarks.py --int16                      # int16x8 single-operator models

``--int16`` benches three int16x8 single-operator models of the look-alikes' shapes instead, built
with tests/model_builder.py (the test suite's builders, fixed seeds) into a temporary directory:
TRANSPOSE_CONV 14x14x8 -> 28x28x16 (3x3, stride 2, int64 bias), BATCH_MATMUL [2, 16, 16] x
[2, 16, 16]^T, an int16 LSTM of 20 steps, 8 inputs and 32 units.

``--checkout DIR`` runs DIR's microcompiler (PYTHONPATH=DIR) on the same model files: with DIR a
snapshot of an earlier commit (``git archive COMMIT | tar -x -C DIR``) it gives the "before" figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERAS = ROOT / "tests" / "models" / "keras"
MODELS = ["conv_autoencoder_int8", "unet_int8", "transformer_block_int8", "lstm_int8"]
KINDS = ["TRANSPOSE_CONV", "BATCH_MATMUL", "UNIDIRECTIONAL_SEQUENCE_LSTM"]
BOARDS = ["mps2_an386", "mps3_an547"]
TIMEOUT = 900  # seconds per bench run (build + QEMU)


def bench(model: Path, board: str, checkout: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    result = subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", "bench", str(model), "--board", board, "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=checkout,
        timeout=TIMEOUT,
    )
    if result.returncode != 0:
        raise SystemExit(f"bench {model.name} on {board} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout)


def per_kind(report: dict, kinds: list[str]) -> dict[str, tuple[float, int]]:
    """kind -> (instructions, MACs or elements) summed over the model's operators of that kind."""
    per_tick = 1e9 / report["timer_hz"]
    out: dict[str, tuple[float, int]] = {}
    for op in report["operators"]:
        if op["kind"] in kinds:
            instructions, macs = out.get(op["kind"], (0.0, 0))
            out[op["kind"]] = (instructions + op["ticks"] * per_tick, macs + int(op["macs"]))
    return out


def int16_models(directory: Path) -> dict[str, Path]:
    """The --int16 models (name -> file), written into ``directory``."""
    sys.path.insert(0, str(ROOT / "tests"))
    from lstm_models import lstm_int16
    from test_op_batch_matmul import batch_matmul_model
    from test_op_transpose_conv import transpose_conv_model

    models = {
        "transpose_conv_int16 (14x14x8 -> 28x28x16, 3x3 stride 2)": transpose_conv_model(
            dtype="int16", hwc=(14, 14, 8), out_c=16
        ),
        "batch_matmul_int16 ([2, 16, 16] x [2, 16, 16]^T)": batch_matmul_model(
            "int16", [2, 16, 16], [2, 16, 16], adj_y=True
        ),
        "lstm_int16 (20 steps, 8 inputs, 32 units)": lstm_int16(steps=20, n_input=8, n_state=32),
    }
    paths = {}
    for n, (name, data) in enumerate(models.items()):
        paths[name] = directory / f"int16_{n}.tflite"
        paths[name].write_bytes(data)
    return paths


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the microcompiler source tree to run")
    parser.add_argument("--models", nargs="+", default=MODELS, help="files of tests/models/keras (no suffix)")
    parser.add_argument("--boards", nargs="+", default=BOARDS)
    parser.add_argument("--kinds", nargs="+", default=KINDS)
    parser.add_argument("--int16", action="store_true", help="the int16x8 single-operator models instead")
    args = parser.parse_args(argv)
    print("| operator kind | model | board | MACs | instructions | per MAC |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="operator_benchmarks-") as tmp:
        files = int16_models(Path(tmp)) if args.int16 else {m: KERAS / f"{m}.tflite" for m in args.models}
        run(files, args)
    return 0


def run(files: dict[str, Path], args) -> None:
    for name, path in files.items():
        for board in args.boards:
            report = bench(path, board, args.checkout.resolve())
            for kind, (instructions, macs) in sorted(per_kind(report, args.kinds).items()):
                print(
                    f"| {kind} | {name} | {board} | {macs:,} | {instructions:,.0f} | {instructions / macs:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    sys.exit(main())
