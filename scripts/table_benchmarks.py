#!/usr/bin/env python3
"""Instructions per element of the int8 elementwise operators and SOFTMAX on an emulated board
(issue 21), per operator kind, from ``microcompiler bench`` (QEMU -icount shift=0: instructions =
ticks x 1e9 / the timer frequency: 40 on the 25 MHz timer of mps2_an386, 31.25 on mps3_an547):

* a merged model of one 32x32x16 int8 operator per kind (LOGISTIC, TANH, HARD_SWISH, ELU, ABS,
  LEAKY_RELU, RELU, RELU6, QUANTIZE) and a 64x64x4 SOFTMAX (the U-Net's shape), built here with
  tests/model_builder.py;
* RSQRT 32x32x16: int8, and int16 behind an ABS (every input valid: TFLM stops on negative ones);
* a model of one 32x32x16 int16 LOGISTIC and TANH each (input scale 2^-12 and 0.001: TFLM's
  power-of-two shortcut and its general rescaling; the piecewise tables of ops/lut16.py);
* the Keras look-alikes of tests/models/keras that have such operators.

    python scripts/table_benchmarks.py                          # this tree
    python scripts/table_benchmarks.py --tree /tmp/before       # another checkout (PYTHONPATH)
    python scripts/table_benchmarks.py --json /tmp/after.json   # the figures as JSON too
    python scripts/table_benchmarks.py --only elementwise_int16 # one of the models

Prints one markdown table row per model and operator kind: instructions, elements, per element.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
KERAS = ROOT / "tests" / "models" / "keras"
KERAS_MODELS = ("efficientnet_b0_block_int8", "mobilenet_v3_small_int8", "conv_autoencoder_int8", "unet_int8")
SHAPE = [1, 32, 32, 16]
ELEMENTS = 16384  # of every operator of the two elementwise models (the SOFTMAX's 64x64x4 too)


def elementwise_models() -> dict[str, bytes]:
    """Two merged models (the RPC call of a whole model takes at most 16 tensors)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from activation_cases import leaky_relu_options, side_by_side_model
    from model_builder import ModelBuilder, softmax_options
    from model_merge import merge_models

    in_q, out_q = (0.05, -10), (0.03, -100)
    cases = {
        "LOGISTIC": (1 / 256, -128),
        "TANH": (1 / 128, 0),
        "HARD_SWISH": out_q,
        "ELU": out_q,
        "ABS": out_q,
        "LEAKY_RELU": out_q,
        "RELU": out_q,
        "RELU6": in_q,
        "QUANTIZE": out_q,
    }
    models = [
        side_by_side_model(
            kind, [(SHAPE, "int8", in_q, q) + ((leaky_relu_options(0.2),) if kind == "LEAKY_RELU" else ())]
        )
        for kind, q in cases.items()
    ]
    b = ModelBuilder()
    x = b.activation("softmax_in", [1, 64, 64, 4], "int8", 0.1, 0)
    y = b.activation("softmax_out", [1, 64, 64, 4], "int8", 1 / 256, -128)
    b.op("SOFTMAX", [x], [y], softmax_options(1.0))
    models.append(b.finish([x], [y]))
    # RSQRT: int8 (input zero point -128: every input valid) and int16 behind an ABS (TFLM stops on
    # negative int16 inputs; the ABS makes every one valid)
    b = ModelBuilder()
    x8 = b.activation("rsqrt_int8_in", SHAPE, "int8", 0.01, -128)
    y8 = b.activation("rsqrt_int8_out", SHAPE, "int8", 0.05, -128)
    b.op("RSQRT", [x8], [y8])
    rsqrt_int8 = b.finish([x8], [y8])
    b = ModelBuilder()
    x16 = b.activation("rsqrt_int16_in", SHAPE, "int16", 0.01, 0)
    a16 = b.activation("abs_int16", SHAPE, "int16", 0.01, 0)
    y16 = b.activation("rsqrt_int16_out", SHAPE, "int16", 1 / (np.sqrt(0.01 * 16) * 32767), 0)
    b.op("ABS", [x16], [a16])
    b.op("RSQRT", [a16], [y16])
    rsqrt_int16 = b.finish([x16], [y16])
    return {
        "rsqrt_int8": rsqrt_int8,
        "rsqrt_int16": rsqrt_int16,
        "elementwise_int8_a": merge_models(models[:5]),
        "elementwise_int8_b": merge_models(models[5:]),
        "elementwise_int16": merge_models(
            [
                side_by_side_model(kind, [(SHAPE, "int16", (scale, 0), (2**-15, 0))])
                for kind in ("LOGISTIC", "TANH")
                for scale in (2**-12, 0.001)
            ]
        ),
    }


def bench(model: Path, board: str, tree: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", "bench", str(model), "--board", board, "--json"],
        capture_output=True,
        text=True,
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        timeout=1800,
    )
    if proc.returncode != 0:
        raise SystemExit(f"bench {model.name} failed: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout)


def per_kind(result: dict, elements: int | None = None) -> dict:
    """Instructions and elements per operator kind (elements: the operators' MAC counts, or the
    given count per operator where every operator has it)."""
    per_tick = 1e9 / result["timer_hz"]  # -icount shift=0: one instruction per virtual nanosecond
    kinds = collections.defaultdict(lambda: [0.0, 0])
    for op in result["operators"]:
        kinds[op["kind"]][0] += op["ticks"] * per_tick
        kinds[op["kind"]][1] += elements if elements else op["macs"]
    return {"whole": result["inference"]["ticks"] * per_tick, "kinds": dict(kinds)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--board", default="mps2_an386")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose microcompiler runs")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--only", action="append", metavar="MODEL", help="measure only this model (repeatable)")
    args = parser.parse_args()
    wanted = (lambda name: name in args.only) if args.only else (lambda name: True)
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in elementwise_models().items():
            if not wanted(name):
                continue
            model = Path(tmp) / f"{name}.tflite"
            model.write_bytes(data)
            figures[name] = per_kind(bench(model, args.board, args.tree.resolve()), ELEMENTS)
    for name in filter(wanted, KERAS_MODELS):
        figures[name] = per_kind(bench(KERAS / f"{name}.tflite", args.board, args.tree.resolve()))
    print("| model | operator | instructions | elements | per element |\n|---|---|---|---|---|")
    for name, fig in figures.items():
        print(f"| {name} | (whole model) | {fig['whole']:,.0f} | | |")
        for kind, (instructions, elements) in sorted(fig["kinds"].items()):
            per = f"{instructions / elements:.2f}" if elements else "-"
            print(f"| {name} | {kind} | {instructions:,.0f} | {elements:,} | {per} |")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
