#!/usr/bin/env python3
"""Build the VWW-shaped MobileNetV1 0.25 at 96x96x3 with Keras and the real TFLite converter (issue 26),
writing tests/models/keras/mobilenet_v1_025_96_int8.tflite.

Not a test dependency: the committed .tflite is what the tests and benchmarks use; this script is how
it was made. Run it with a Python that has ``tensorflow-cpu`` 2.21.0 (the one
``scripts/keras_lookalikes.py`` installs, e.g. ``--venv /work/tfvenv``):

    /work/tfvenv/bin/python scripts/keras_mobilenet_v1.py

The network is ``keras.applications.MobileNet(alpha=0.25, input_shape=(96, 96, 3), weights=None,
classes=2)``: the MLPerf Tiny visual wake words shape with Keras's own layers. It is seeded and
converted exactly as the look-alikes of ``scripts/keras_lookalikes.py`` (their seed, BatchNorm
statistics from a seeded batch of images, full-integer int8 conversion with a seeded representative
dataset), whose helpers it uses.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import keras_lookalikes as lookalikes  # noqa: E402

OUT = lookalikes.OUT / "mobilenet_v1_025_96_int8.tflite"
SHAPE = (1, 96, 96, 3)


def main() -> int:
    import keras

    keras.utils.set_random_seed(lookalikes.SEED)
    model = keras.applications.MobileNet(input_shape=SHAPE[1:], alpha=0.25, weights=None, classes=2)
    lookalikes.set_batchnorm_statistics(keras, model, lookalikes.seeded_batch(SHAPE, "image", lookalikes.SEED, 64))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(lookalikes.convert(model, "image", int8=True))
    print(f"wrote {OUT.relative_to(lookalikes.ROOT)} ({OUT.stat().st_size:,} B)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
