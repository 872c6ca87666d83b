"""Make microcompiler's stateful example model: a small int8 keyword-spotting-style SVDF stack.

    python examples/svdf_kws/make_model.py   # writes examples/svdf_kws/svdf_kws_int8.tflite

Input [1, 40] int8 (say, one frame of 40 filter-bank features), output [1, 4] int8 class
probabilities: SVDF (32 filters of rank 2, memory 8) -> SVDF (16, rank 1, memory 6) -> SVDF
(16, rank 2, memory 4) -> FULLY_CONNECTED 4 -> SOFTMAX. Each SVDF keeps its last activations in a
variable tensor (int16), so every output depends on the frames before it (docs/state.md). Weights
are seeded random numbers (for trying the toolchain, not for accuracy). The model is the one the
tests build (tests/svdf_models.py, stacked_svdf_kws). Needs the test extras (`pip install .[test]`).
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))

from svdf_models import stacked_svdf_kws  # noqa: E402

if __name__ == "__main__":
    out = HERE / "svdf_kws_int8.tflite"
    out.write_bytes(stacked_svdf_kws())
    print(f"wrote {out}")
