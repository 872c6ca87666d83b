#!/usr/bin/env python3
"""Build the unrolled recurrent models of issue 22 with Keras and the real TFLite converter, writing
tests/models/keras/{gru,lstm}_unrolled_{int8,float32}.tflite.

Not a test dependency: the committed .tflite files are what the tests use; this script is how they
were made. Run it with a Python that has ``tensorflow-cpu`` (2.21.0 was used), e.g. the venv
scripts/keras_lookalikes.py creates, whose seeding and conversion it reuses:

    /work/tfvenv/bin/python scripts/keras_unrolled.py [NAME ...]    # all, or only these

* ``gru_unrolled``: GRU(16) over 20 time steps of 8 features with ``unroll=True``, Dense(4) softmax:
  the converter writes one UNPACK of the 20 steps (21 tensors) and 20 copies of the cell;
* ``lstm_unrolled``: the same with an LSTM(16).

It also writes float32 conversions of two keras_lookalikes.py models that file keeps in int8 only,
for the float bit-exactness tests (tests/test_float_exact.py): ``ds_cnn_float32`` and
``conv_autoencoder_float32``; and two float32-only models for those tests:

* ``har_cnn_float32``: a Conv1D human-activity-recognition net, 128 time steps x 9 channels,
  Conv1D(16, 5) ReLU, MaxPool1D(2), Conv1D(32, 5) ReLU, GlobalAveragePooling1D, Dense(6) softmax;
* ``mobilenet_v1_025_float32``: ``keras.applications.MobileNet(alpha=0.25, input_shape=(96, 96, 3),
  weights=None)`` cut after its sixth depthwise-separable block (``conv_pw_6_relu``, 128 channels),
  then GlobalAveragePooling2D and Dense(2) softmax: the whole network in float32 would be ~0.9 MB.
  BatchNorm statistics are set from a seeded batch of images as for the look-alikes.

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


def har_cnn():
    import keras
    from keras import layers

    keras.utils.set_random_seed(lookalikes.SEED)
    inp = keras.Input((128, 9), batch_size=1)
    x = layers.Conv1D(16, 5, activation="relu")(inp)
    x = layers.MaxPooling1D(2)(x)
    x = layers.Conv1D(32, 5, activation="relu")(x)
    x = layers.GlobalAveragePooling1D()(x)
    return keras.Model(inp, layers.Dense(6, activation="softmax")(x), name="har_cnn"), "normal"


def mobilenet_v1_cut():
    import keras
    from keras import layers

    shape = (1, 96, 96, 3)
    keras.utils.set_random_seed(lookalikes.SEED)
    full = keras.applications.MobileNet(input_shape=shape[1:], alpha=0.25, weights=None, include_top=False)
    x = layers.GlobalAveragePooling2D()(full.get_layer("conv_pw_6_relu").output)
    model = keras.Model(full.inputs[0], layers.Dense(2, activation="softmax")(x), name="mobilenet_v1_025")
    lookalikes.set_batchnorm_statistics(keras, model, lookalikes.seeded_batch(shape, "image", lookalikes.SEED, 64))
    return model, "image"


def float_lookalike(name: str):
    """keras_lookalikes.py's model ``name``, seeded and with its BatchNorm statistics set as there."""
    _, kind, _, legacy = lookalikes.models()[name]
    keras = __import__("tf_keras" if legacy else "keras")
    keras.utils.set_random_seed(lookalikes.SEED)
    model = lookalikes.models(legacy)[name][0]()
    batch = lookalikes.seeded_batch(tuple(model.inputs[0].shape), kind, lookalikes.SEED, 64)
    lookalikes.set_batchnorm_statistics(keras, model, batch)
    return model, kind


def write(path: Path, model, kind: str, int8: bool) -> None:
    path.write_bytes(lookalikes.convert(model, kind, int8))
    print(f"{path.relative_to(lookalikes.ROOT)}: {path.stat().st_size} bytes", file=sys.stderr)


def main(names: list[str] | None = None) -> int:
    """Build every model, or only ``names`` (e.g. ``["har_cnn", "mobilenet_v1_025"]``)."""
    wanted = set(names if names is not None else sys.argv[1:])
    known = {"gru_unrolled", "lstm_unrolled", "ds_cnn", "conv_autoencoder", "har_cnn", "mobilenet_v1_025"}
    if wanted - known:
        print(
            f"unknown model {', '.join(sorted(wanted - known))}: choose from {', '.join(sorted(known))}",
            file=sys.stderr,
        )
        return 2
    lookalikes.OUT.mkdir(parents=True, exist_ok=True)
    for name, cell in (("gru_unrolled", "GRU"), ("lstm_unrolled", "LSTM")):
        if wanted and name not in wanted:
            continue
        model = build(name, cell)
        for int8 in (False, True):
            write(lookalikes.OUT / f"{name}_{'int8' if int8 else 'float32'}.tflite", model, "normal", int8)
    float_only = {
        "ds_cnn": lambda: float_lookalike("ds_cnn"),
        "conv_autoencoder": lambda: float_lookalike("conv_autoencoder"),
    }
    float_only.update(har_cnn=har_cnn, mobilenet_v1_025=mobilenet_v1_cut)
    for name, builder in float_only.items():
        if wanted and name not in wanted:
            continue
        model, kind = builder()
        write(lookalikes.OUT / f"{name}_float32.tflite", model, kind, False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
