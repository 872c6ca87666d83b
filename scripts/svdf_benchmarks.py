#!/usr/bin/env python3
"""Instructions per MAC of SVDF on an emulated board (issue 21), for the table "Where the time goes,
per operator kind" of docs/benchmarks.md: ``microcompiler bench MODEL --board BOARD --json`` (QEMU
-icount shift=0) on SVDF models built with tests/svdf_models.py:

* svdf_kws_int16 / svdf_kws_int8: the keyword-spotting style stack of the state tests (SVDF 40 -> 16
  units, memory 8, rank 2; 16 -> 16, memory 6; 16 -> 8, memory 4; FULLY_CONNECTED; SOFTMAX), with
  int16 or int8 activation state;
* svdf_large_int16 / svdf_large_int8: one SVDF of 160 inputs, 128 filters of rank 1, memory 10.

An SVDF's MACs are batch x filters x (inputs + memory). Its instructions include the state's shift
by one step (a memmove of the whole state) on every inference, as TFLM's do.

    python scripts/svdf_benchmarks.py                          # this checkout
    python scripts/svdf_benchmarks.py --checkout /tmp/before   # another one (PYTHONPATH=DIR)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))


def models() -> dict[str, bytes]:
    from svdf_models import single_svdf_int8, stacked_svdf_kws

    large = dict(n_input=160, n_filter=128, rank=1, n_memory=10)
    return {
        "svdf_kws_int16": stacked_svdf_kws(),
        "svdf_kws_int8": stacked_svdf_kws(state_dtype="int8"),
        "svdf_large_int16": single_svdf_int8(**large),
        "svdf_large_int8": single_svdf_int8(state_dtype="int8", **large),
    }


def main(argv=None) -> int:
    from operator_benchmarks import bench, per_kind

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the microcompiler source tree to run")
    parser.add_argument("--boards", nargs="+", default=["mps2_an386"])
    args = parser.parse_args(argv)
    print("| model | board | SVDF MACs | SVDF instructions | per MAC |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in models().items():
            path = Path(tmp) / f"{name}.tflite"
            path.write_bytes(data)
            for board in args.boards:
                report = bench(path, board, args.checkout.resolve())
                instructions, macs = per_kind(report, ["SVDF"])["SVDF"]
                print(f"| {name} | {board} | {macs:,} | {instructions:,.0f} | {instructions / macs:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
