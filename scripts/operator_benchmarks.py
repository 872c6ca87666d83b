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

``--checkout DIR`` runs DIR's microcompiler (PYTHONPATH=DIR) on the same model files: with DIR a
snapshot of an earlier commit (``git archive COMMIT | tar -x -C DIR``) it gives the "before" figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the microcompiler source tree to run")
    parser.add_argument("--models", nargs="+", default=MODELS, help="files of tests/models/keras (no suffix)")
    parser.add_argument("--boards", nargs="+", default=BOARDS)
    parser.add_argument("--kinds", nargs="+", default=KINDS)
    args = parser.parse_args(argv)
    print("| operator kind | model | board | MACs | instructions | per MAC |")
    print("|---|---|---|---|---|---|")
    for name in args.models:
        for board in args.boards:
            report = bench(KERAS / f"{name}.tflite", board, args.checkout.resolve())
            for kind, (instructions, macs) in sorted(per_kind(report, args.kinds).items()):
                print(
                    f"| {kind} | {name} | {board} | {macs:,} | {instructions:,.0f} | {instructions / macs:.2f} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
