#!/usr/bin/env python3
"""Build the unrolled recurrent models of issue 22 with Keras and the real TFLite converter, writing
small .tflite files to tests/models/keras/ (beside scripts/keras_lookalikes.py's, whose venv
handling, seeding and conversion this script reuses):

    python3 scripts/keras_unrolled.py                 # every model
    python3 scripts/keras_unrolled.py --venv /work/tfvenv

* ``gru_unrolled``: a GRU(16) over 20 time steps with ``unroll=True``: the converter writes an
  UNPACK of the 20 steps (21 tensors: the input and 20 outputs) and 20 copies of the cell;
* ``lstm_unrolled``: the same with an LSTM(16).

Each as ``NAME_int8.tflite`` (full-integer) and ``NAME_float32.tflite``. Wider than the graph
executor's 16 arguments per operator, they run with the AOT executor (tests/test_keras_unrolled.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import keras_lookalikes as lookalikes  # noqa: E402

STEPS = 20


def models():
    import keras
    from keras import layers

    def recurrent(name, cell):
        def build():
            inp = keras.Input((STEPS, 8), batch_size=1)
            x = cell(16, unroll=True)(inp)
            return keras.Model(inp, layers.Dense(4, activation="softmax")(x), name=name)
        return build

    return {"gru_unrolled": (recurrent("gru_unrolled", layers.GRU), "normal", True),
            "lstm_unrolled": (recurrent("lstm_unrolled", layers.LSTM), "normal", True)}


def convert(model, kind, int8: bool) -> bytes:
    """As keras_lookalikes.convert, from the Keras model itself: its concrete function would keep
    the unrolled cell's weights as resource variables (VAR_HANDLE + READ_VARIABLE, never assigned)."""
    import tensorflow as tf
    shape = tuple(model.inputs[0].shape)
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if int8:
        def representative():
            for sample in lookalikes.seeded_batch(shape, kind, lookalikes.SEED + 1, lookalikes.REPRESENTATIVE_SAMPLES):
                yield [sample[None]]
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    return converter.convert()


if __name__ == "__main__":
    lookalikes.models = models
    lookalikes.convert = convert
    sys.exit(lookalikes.main())
