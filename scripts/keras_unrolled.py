#!/usr/bin/env python3
"""Build the unrolled recurrent models of issue 22 with Keras and the real TFLite converter, writing
tests/models/keras/{gru,lstm}_unrolled_{int8,float32}.tflite.

Not a test dependency: the committed .tflite files are what the tests use; this script is how they
were made. Run it with a Python that has ``tensorflow-cpu`` (2.21.0 was used), e.g. the venv
scripts/keras_lookalikes.py creates, whose seeding and conversion it reuses:

    /work/tfvenv/bin/python scripts/keras_unrolled.py

* ``gru_unrolled``: GRU(16) over 20 time steps of 8 features with ``unroll=True``, Dense(4) softmax:
  the converter writes one UNPACK of the 20 steps (21 tensors) and 20 copies of the cell;
* ``lstm_unrolled``: the same with an LSTM(16).

The float32 files and the int8 GRU come out byte for byte the same on every run; the int8 LSTM's
operator order varies between converter runs. Wider than the graph executor's 16 arguments per operator, both run with the AOT executor
(tests/test_keras_unrolled.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import keras_lookalikes as lookalikes  # noqa: E402

STEPS = 20


def build(name: str, cell_name: str):
    import keras
    from keras import layers
    keras.utils.set_random_seed(lookalikes.SEED)
    inp = keras.Input((STEPS, 8), batch_size=1)
    x = getattr(layers, cell_name)(16, unroll=True)(inp)
    return keras.Model(inp, layers.Dense(4, activation="softmax")(x), name=name)


def main() -> int:
    lookalikes.OUT.mkdir(parents=True, exist_ok=True)
    for name, cell in (("gru_unrolled", "GRU"), ("lstm_unrolled", "LSTM")):
        model = build(name, cell)
        for int8 in (False, True):
            path = lookalikes.OUT / f"{name}_{'int8' if int8 else 'float32'}.tflite"
            path.write_bytes(lookalikes.convert(model, "normal", int8))
            print(f"{path.relative_to(lookalikes.ROOT)}: {path.stat().st_size} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
