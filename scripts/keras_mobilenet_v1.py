#!/usr/bin/env python3
"""Build the VWW-shaped MobileNetV1 0.25 at 96x96x3 with Keras and the real TFLite converter (issue 26),
writing tests/models/keras/mobilenet_v1_025_96_int8.tflite.

Not a test dependency: the committed .tflite is what the tests and benchmarks use; this script is how
it was made. Run it with a Python that has ``tensorflow-cpu`` (2.21.0 was used), e.g. a separate venv:

    python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu==2.21.0
    /tmp/tfvenv/bin/python scripts/keras_mobilenet_v1.py

The network is ``keras.applications.MobileNet(alpha=0.25, input_shape=(96, 96, 3), weights=None,
classes=2)``: the MLPerf Tiny visual wake words shape, with Keras's own layers (a ZeroPadding2D before
each stride-2 depthwise layer, which the converter keeps as PAD, ReLU6, a 1x1 convolution as the
classifier). Everything is seeded: the Keras weights (``keras.utils.set_random_seed``), the BatchNorm
statistics (each BatchNorm's moving mean and variance are set, in order, to the statistics of its
input on one seeded batch, and its scale and offset drawn from a seeded generator, so activations have
the ranges of a trained network) and the representative dataset of the full-integer conversion (int8
input, output and kernels).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "models" / "keras" / "mobilenet_v1_025_96_int8.tflite"
SEED = 26
BATCH = 16
REPRESENTATIVE_SAMPLES = 32


def build():
    import keras
    keras.utils.set_random_seed(SEED)
    model = keras.applications.MobileNet(input_shape=(96, 96, 3), alpha=0.25, weights=None, classes=2,
                                         classifier_activation="softmax")
    rng = np.random.default_rng(SEED)
    batch = rng.uniform(-1, 1, (BATCH, 96, 96, 3)).astype(np.float32)
    for layer in model.layers:
        if not isinstance(layer, keras.layers.BatchNormalization):
            continue
        probe = keras.Model(model.inputs, layer.input)
        x = np.asarray(probe(batch, training=False))
        mean, var = x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2)) + 1e-3
        channels = x.shape[-1]
        gamma = rng.uniform(0.5, 1.5, channels).astype(np.float32)
        beta = rng.normal(0.5, 0.5, channels).astype(np.float32)
        layer.set_weights([gamma, beta, mean.astype(np.float32), var.astype(np.float32)])
    return model


def convert(model) -> bytes:
    import tensorflow as tf
    rng = np.random.default_rng(SEED + 1)

    def representative():
        for _ in range(REPRESENTATIVE_SAMPLES):
            yield [rng.uniform(-1, 1, (1, 96, 96, 3)).astype(np.float32)]

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    return converter.convert()


def main() -> int:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(convert(build()))
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size:,} B)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
