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

It also writes float32 conversions of two keras_lookalikes.py models that file keeps in int8 only,
for the float bit-exactness tests (tests/test_float_exact.py): ``ds_cnn_float32`` and
``conv_autoencoder_float32``.

The float32 files come out byte for byte the same on every run; the int8 files' bytes vary between
converter runs (the committed ones are one run's). Wider than the graph executor's 16 arguments per operator, both run with the AOT executor
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


def float_lookalike(name: str):
    """keras_lookalikes.py's model ``name``, seeded and with its BatchNorm statistics set as there."""
    _, kind, _, legacy = lookalikes.models()[name]
    keras = __import__("tf_keras" if legacy else "keras")
    keras.utils.set_random_seed(lookalikes.SEED)
    model = lookalikes.models(legacy)[name][0]()
    batch = lookalikes.seeded_batch(tuple(model.inputs[0].shape), kind, lookalikes.SEED, 64)
    lookalikes.set_batchnorm_statistics(keras, model, batch)
    return model, kind


def main() -> int:
    lookalikes.OUT.mkdir(parents=True, exist_ok=True)
    for name, cell in (("gru_unrolled", "GRU"), ("lstm_unrolled", "LSTM")):
        model = build(name, cell)
        for int8 in (False, True):
            path = lookalikes.OUT / f"{name}_{'int8' if int8 else 'float32'}.tflite"
            path.write_bytes(lookalikes.convert(model, "normal", int8))
            print(f"{path.relative_to(lookalikes.ROOT)}: {path.stat().st_size} bytes", file=sys.stderr)
    for name in ("ds_cnn", "conv_autoencoder"):
        model, kind = float_lookalike(name)
        path = lookalikes.OUT / f"{name}_float32.tflite"
        path.write_bytes(lookalikes.convert(model, kind, False))
        print(f"{path.relative_to(lookalikes.ROOT)}: {path.stat().st_size} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
