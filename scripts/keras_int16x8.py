#!/usr/bin/env python3
"""int16x8 look-alikes (issue 22, item 6): keras_lookalikes.py's DS-CNN keyword spotter (CONV_2D,
DEPTHWISE_CONV_2D, MEAN, FULLY_CONNECTED, SOFTMAX) and its conv autoencoder converted with the real
TFLite converter to 16x8 quantization (int16 activations, int8 weights, int64 biases), the seeding
and representative data of keras_lookalikes.py. Not a test dependency: the committed .tflite files in
tests/models/keras/ are what the tests and benchmarks use. Run with a Python that has tensorflow-cpu
(see keras_lookalikes.py, --venv):

    /work/tfvenv/bin/python scripts/keras_int16x8.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import keras_lookalikes as lookalikes  # noqa: E402

NAMES = ("ds_cnn", "conv_autoencoder")


def main() -> int:
    import keras
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    out = lookalikes.OUT
    for name in NAMES:
        _, kind, _, _ = lookalikes.models()[name]
        keras.utils.set_random_seed(lookalikes.SEED)
        model = lookalikes.models()[name][0]()
        lookalikes.set_batchnorm_statistics(
            keras, model, lookalikes.seeded_batch(tuple(model.inputs[0].shape), kind, lookalikes.SEED, 64)
        )
        data = lookalikes.convert(model, kind, True, int16x8=True)
        path = out / f"{name}_int16x8.tflite"
        path.write_bytes(data)
        print(f"{path.name}: {len(data)} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
