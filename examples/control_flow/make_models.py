"""Make microcompiler's control-flow example models (several subgraphs, docs/state.md).

    python examples/control_flow/make_models.py   # writes the three .tflite files beside this script

- accumulator_int8.tflite: a CALL_ONCE sets resource variable 'acc' to a constant on the first
  inference; every inference then does acc = acc + x (int8) and outputs acc. Input [1, 8] int8.
- if_int8.tflite: IF(flag) runs branch subgraph then_add (x + 9) or else_double (2x - 20, RELU).
  Inputs flag [1] bool and x [1, 6] int8.
- while_int8.tflite: WHILE i < count: acc += x, as condition and body subgraphs. Inputs count [1]
  int32 and x [1, 6] int8; outputs acc and the number of turns.

They are the models the tests build (tests/flow_models.py). Needs the test extras
(`pip install .[test]`).
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))

from flow_models import accumulator_int8, if_int8, while_int8  # noqa: E402

MODELS = {"accumulator_int8": accumulator_int8, "if_int8": if_int8, "while_int8": while_int8}

if __name__ == "__main__":
    for name, make in MODELS.items():
        out = HERE / f"{name}.tflite"
        out.write_bytes(make())
        print(f"wrote {out}")
