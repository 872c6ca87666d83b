"""``microcompiler run MODEL --board B``: compile, build, run once and print the outputs."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from microcompiler.compiler import compile_model
from microcompiler.inputs import load_inputs, random_inputs


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="compile a model, run it on a board and print its outputs",
                       description="Compile MODEL, build it for BOARD, run it once and print the outputs. "
                                   "Without --input, a fixed seeded random input is used.")
    p.add_argument("model", help="the .tflite file")
    p.add_argument("--board", default="host", help="board name (default: host)")
    p.add_argument("--input", action="append", default=[], metavar="X.npy",
                   help="an input tensor as .npy (repeat for several inputs)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args) -> int:
    library = compile_model(args.model)
    meta = library.metadata
    inputs = load_inputs(args.input, meta["inputs"]) if args.input else random_inputs(meta["inputs"])
    from microcompiler.host import HostProgram
    with tempfile.TemporaryDirectory(prefix="microcompiler-") as tmp:
        result = HostProgram(library, Path(tmp)).run([inputs])[0]
    report = {
        "model": meta["name"], "board": args.board,
        "outputs": [out.tolist() for out in result.outputs],
        "output_dtypes": [o["dtype"] for o in meta["outputs"]],
        "device_ticks": result.ticks, "timer_hz": result.hz,
        "arena_bytes": meta["arena_bytes"], "params_bytes": meta["params_bytes"],
    }
    if args.json:
        print(json.dumps(report))
    else:
        for k, out in enumerate(result.outputs):
            print(f"output{k} {meta['outputs'][k]['dtype']}{list(out.shape)}:")
            print(np.array2string(out, threshold=64))
        print(f"time on {args.board}: {result.ticks} ticks at {result.hz} Hz")
    return 0
