#!/usr/bin/env python3
"""Build look-alikes of the architectures people deploy today with Keras and convert them with the
real TFLite converter (issue 21), writing small .tflite files to tests/models/keras/.

Not a test dependency: the committed .tflite files are what the tests and benchmarks use. This script
is how they were made, so that anyone can make them again:

    python3 scripts/keras_lookalikes.py                  # every model
    python3 scripts/keras_lookalikes.py --only lstm gru  # some of them
    python3 scripts/keras_lookalikes.py --venv /work/tfvenv

Run with a Python that has no TensorFlow, it creates a virtual environment of its own (``--venv``,
by default ~/.cache/microcompiler/tfvenv), installs ``tensorflow-cpu`` from the package registry into
it and runs itself again there. Everything is seeded: the Keras weights (``keras.utils.set_random_seed``),
the BatchNorm statistics (each BatchNorm's moving mean and variance are set, in order, to the
statistics of its input on one seeded batch, so activations have sane ranges, as after training) and
the representative dataset of the full-integer conversion.

Models (reduced widths and resolutions; the layer patterns are the real ones):

* ``efficientnet_b0_block``: EfficientNet-B0-style MBConv blocks: swish (SiLU, x * sigmoid(x)),
  depthwise 3x3/5x5, squeeze-and-excite (global pool, swish, sigmoid, multiply), residual adds;
* ``mobilenet_v3_small``: MobileNetV3-Small-style: hard-swish, inverted residuals with
  hard-sigmoid squeeze-and-excite, ReLU and hard-swish blocks;
* ``unet``: a small U-Net (encoder, decoder with Conv2DTranspose and skip concatenations), a
  per-pixel SOFTMAX over 4 classes at 64x64;
* ``transformer_block``: one encoder block: multi-head self-attention (BATCH_MATMUL, SOFTMAX),
  LayerNorm, feed-forward, over 16 tokens of width 32;
* ``lstm``: an LSTM sequence classifier (UNIDIRECTIONAL_SEQUENCE_LSTM);
* ``gru``: a GRU sequence classifier (TFLite has no GRU operator: a WHILE loop);
* ``conv_autoencoder``: a Conv2DTranspose autoencoder on 28x28x1;
* ``ds_cnn``: a DS-CNN keyword spotter (depthwise-separable blocks) on a 49x10 spectrogram.

Each is written as ``NAME_int8.tflite`` (full-integer: int8 inputs, outputs and kernels) and, where
noted in MODELS, ``NAME_float32.tflite``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tool_venv import ensure_venv  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "models" / "keras"
DEFAULT_VENV = Path.home() / ".cache" / "microcompiler" / "tfvenv"
TF_REQUIREMENTS = ["tensorflow-cpu==2.21.0", "tf-keras==2.21.0"]
SEED = 21
REPRESENTATIVE_SAMPLES = 32
NAMES = (
    "efficientnet_b0_block",
    "mobilenet_v3_small",
    "unet",
    "transformer_block",
    "lstm",
    "gru",
    "conv_autoencoder",
    "ds_cnn",
)


# ---- the models (imported only once TensorFlow is there) ----------------------------------------


def models(legacy: bool = False):
    """The builders. legacy: build with tf_keras (Keras 2), as the TFLite converter needs for the
    recurrent layers: it fuses a Keras 2 LSTM into UNIDIRECTIONAL_SEQUENCE_LSTM and converts a Keras 2
    GRU into a WHILE loop, while a Keras 3 LSTM or GRU keeps its weights as resource variables read
    inside the loop (and its int8 calibration crashes)."""
    if legacy:
        import tf_keras as keras
        from tf_keras import layers
    else:
        import keras
        from keras import layers

    def conv_bn(x, filters, kernel, stride=1, activation=None, name=None):
        x = layers.Conv2D(filters, kernel, strides=stride, padding="same", use_bias=False, name=name)(x)
        x = layers.BatchNormalization()(x)
        return layers.Activation(activation)(x) if activation else x

    def dw_bn(x, kernel, stride=1, activation=None):
        x = layers.DepthwiseConv2D(kernel, strides=stride, padding="same", use_bias=False)(x)
        x = layers.BatchNormalization()(x)
        return layers.Activation(activation)(x) if activation else x

    def squeeze_excite(x, reduced, inner, gate):
        channels = x.shape[-1]
        s = layers.GlobalAveragePooling2D(keepdims=True)(x)
        s = layers.Conv2D(reduced, 1, activation=inner)(s)
        s = layers.Conv2D(channels, 1)(s)
        s = gate(s)
        return layers.Multiply()([x, s])

    def efficientnet_b0_block():
        # (expand ratio, output channels, repeats, stride, kernel) as EfficientNet-B0, widths / 4.
        blocks = [(1, 8, 1, 1, 3), (6, 8, 2, 2, 3), (6, 12, 2, 2, 5), (6, 20, 2, 2, 3), (6, 28, 1, 1, 5)]
        inp = keras.Input((48, 48, 3), batch_size=1)
        x = conv_bn(inp, 8, 3, 2, "swish")
        for expand, out, repeats, stride, kernel in blocks:
            for r in range(repeats):
                start, c_in = x, x.shape[-1]
                if expand != 1:
                    x = conv_bn(x, c_in * expand, 1, activation="swish")
                x = dw_bn(x, kernel, stride if r == 0 else 1, "swish")
                x = squeeze_excite(x, max(1, c_in // 4), "swish", layers.Activation("sigmoid"))
                x = conv_bn(x, out, 1)
                if r > 0 or (stride == 1 and c_in == out):
                    x = layers.Add()([x, start])
        x = conv_bn(x, 64, 1, activation="swish")
        x = layers.GlobalAveragePooling2D()(x)
        return keras.Model(inp, layers.Dense(10, activation="softmax")(x), name="efficientnet_b0_block")

    def hard_sigmoid(x):
        return layers.ReLU(6.0)(x + 3.0) * (1.0 / 6.0)

    def hard_swish(x):
        return layers.Multiply()([x, hard_sigmoid(x)])

    def mobilenet_v3_small():
        # (kernel, expansion, output channels, squeeze-excite, activation, stride), MobileNetV3-Small / 2.
        blocks = [
            (3, 8, 8, True, "relu", 2),
            (3, 36, 12, False, "relu", 2),
            (3, 44, 12, False, "relu", 1),
            (5, 48, 20, True, "hswish", 2),
            (5, 120, 20, True, "hswish", 1),
            (5, 60, 24, True, "hswish", 1),
            (5, 144, 48, True, "hswish", 2),
        ]
        inp = keras.Input((64, 64, 3), batch_size=1)
        x = layers.Rescaling(2.0, offset=-1.0)(inp)
        x = hard_swish(conv_bn(x, 8, 3, 2))
        for kernel, expansion, out, se, act, stride in blocks:
            act_fn = hard_swish if act == "hswish" else (lambda t: layers.ReLU()(t))
            start, c_in = x, x.shape[-1]
            x = act_fn(conv_bn(x, expansion, 1))
            x = act_fn(dw_bn(x, kernel, stride))
            if se:
                x = squeeze_excite(x, max(8, expansion // 4), "relu", hard_sigmoid)
            x = conv_bn(x, out, 1)
            if stride == 1 and c_in == out:
                x = layers.Add()([x, start])
        x = hard_swish(conv_bn(x, 96, 1))
        x = layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = hard_swish(layers.Conv2D(128, 1)(x))
        x = layers.Flatten()(layers.Conv2D(10, 1)(x))
        return keras.Model(inp, layers.Softmax()(x), name="mobilenet_v3_small")

    def unet():
        inp = keras.Input((64, 64, 3), batch_size=1)
        skips, x = [], inp
        for filters in (8, 16):
            x = conv_bn(x, filters, 3, activation="relu")
            x = conv_bn(x, filters, 3, activation="relu")
            skips.append(x)
            x = layers.MaxPooling2D()(x)
        x = conv_bn(x, 32, 3, activation="relu")
        for filters, skip in zip((16, 8), reversed(skips)):
            x = layers.Conv2DTranspose(filters, 2, strides=2, padding="same")(x)
            x = layers.Concatenate()([x, skip])
            x = conv_bn(x, filters, 3, activation="relu")
        x = layers.Conv2D(4, 1)(x)
        return keras.Model(inp, layers.Softmax()(x), name="unet")

    def transformer_block():
        inp = keras.Input((16, 32), batch_size=1)
        attention = layers.MultiHeadAttention(num_heads=2, key_dim=16)(inp, inp)
        x = layers.LayerNormalization(epsilon=1e-6)(layers.Add()([inp, attention]))
        ff = layers.Dense(64, activation="relu")(x)
        ff = layers.Dense(32)(ff)
        x = layers.LayerNormalization(epsilon=1e-6)(layers.Add()([x, ff]))
        x = layers.GlobalAveragePooling1D()(x)
        return keras.Model(inp, layers.Dense(4, activation="softmax")(x), name="transformer_block")

    def lstm():
        inp = keras.Input((20, 8), batch_size=1)
        x = layers.LSTM(32)(inp)
        return keras.Model(inp, layers.Dense(4, activation="softmax")(x), name="lstm")

    def gru():
        inp = keras.Input((20, 8), batch_size=1)
        x = layers.GRU(24)(inp)
        return keras.Model(inp, layers.Dense(4, activation="softmax")(x), name="gru")

    def conv_autoencoder():
        inp = keras.Input((28, 28, 1), batch_size=1)
        x = layers.Conv2D(16, 3, strides=2, padding="same", activation="relu")(inp)
        x = layers.Conv2D(8, 3, strides=2, padding="same", activation="relu")(x)
        x = layers.Conv2DTranspose(8, 3, strides=2, padding="same", activation="relu")(x)
        x = layers.Conv2DTranspose(16, 3, strides=2, padding="same", activation="relu")(x)
        out = layers.Conv2D(1, 3, padding="same", activation="sigmoid")(x)
        return keras.Model(inp, out, name="conv_autoencoder")

    def ds_cnn():
        inp = keras.Input((49, 10, 1), batch_size=1)
        x = conv_bn(inp, 32, (10, 4), 2, "relu")
        for _ in range(4):
            x = dw_bn(x, 3, 1, "relu")
            x = conv_bn(x, 32, 1, activation="relu")
        x = layers.GlobalAveragePooling2D()(x)
        return keras.Model(inp, layers.Dense(12, activation="softmax")(x), name="ds_cnn")

    # name: (builder, input kind, float32 too, built with tf_keras)
    return {
        "efficientnet_b0_block": (efficientnet_b0_block, "image", False, False),
        "mobilenet_v3_small": (mobilenet_v3_small, "image", False, False),
        "unet": (unet, "image", False, False),
        "transformer_block": (transformer_block, "normal", True, False),
        "lstm": (lstm, "normal", True, True),
        "gru": (gru, "normal", True, True),
        "conv_autoencoder": (conv_autoencoder, "image", False, False),
        "ds_cnn": (ds_cnn, "normal", False, False),
    }


def seeded_batch(shape, kind, seed, n):
    import numpy as np

    rng = np.random.default_rng(seed)
    shape = (n, *shape[1:])
    if kind == "image":  # pixels in [0, 1], smooth enough to look like one
        return rng.uniform(0.0, 1.0, shape).astype(np.float32)
    return rng.normal(0.0, 1.0, shape).astype(np.float32)


def set_batchnorm_statistics(keras, model, batch) -> None:
    """Each BatchNorm's moving statistics := its input's mean and variance on batch, in graph order
    (so each sees the already-normalised layers before it), with seeded gamma and beta."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    for layer in model.layers:
        if not isinstance(layer, keras.layers.BatchNormalization):
            continue
        features = np.asarray(keras.Model(model.inputs[0], layer.input)(batch, training=False))
        axes = tuple(range(features.ndim - 1))
        gamma, beta, _, _ = layer.get_weights()
        layer.set_weights(
            [
                rng.uniform(0.5, 1.5, gamma.shape).astype(np.float32),
                rng.normal(0.0, 0.25, beta.shape).astype(np.float32),
                features.mean(axis=axes),
                features.var(axis=axes),
            ]
        )


def convert(model, kind, int8: bool, int16x8: bool = False) -> bytes:
    """int8: full-integer int8; int16x8 (with int8): 16x8 quantization instead (int16 activations,
    inputs and outputs, int8 weights; scripts/keras_int16x8.py)."""
    import tensorflow as tf

    shape = tuple(model.inputs[0].shape)  # batch 1: every Input is declared with batch_size=1
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if int8:

        def representative():
            for sample in seeded_batch(shape, kind, SEED + 1, REPRESENTATIVE_SAMPLES):
                yield [sample[None]]

        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative
        if int16x8:
            ops = tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
            converter.target_spec.supported_ops = [ops]
            converter.inference_input_type = converter.inference_output_type = tf.int16
        else:
            converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
            converter.inference_input_type = tf.int8
            converter.inference_output_type = tf.int8
    return converter.convert()


def build_one(name: str, out: Path) -> int:
    """Build and convert one model (in a process of its own: the converter can crash)."""
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    builder, kind, with_float, legacy = models()[name]
    keras = __import__("tf_keras" if legacy else "keras")
    keras.utils.set_random_seed(SEED)
    model = models(legacy)[name][0]()
    set_batchnorm_statistics(keras, model, seeded_batch(tuple(model.inputs[0].shape), kind, SEED, 64))
    failures = 0
    for int8 in (False, True) if with_float else (True,):  # float first: int8 calibration can crash
        path = out / f"{name}_{'int8' if int8 else 'float32'}.tflite"
        try:
            data = convert(model, kind, int8)
        except Exception as exc:  # the converter's own refusal is a result worth reporting
            failures += 1
            print(f"RESULT {path.name}: conversion failed: {str(exc).splitlines()[0]}", flush=True)
            continue
        path.write_bytes(data)
        print(f"RESULT {path.name}: {len(data)} bytes", flush=True)
    return 1 if failures else 0


def build(names, out: Path) -> int:
    """Each model in a child process; the converter's chatter goes to a log, the results to stdout."""
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0")
    failures = 0
    unknown = set(names) - set(NAMES)
    if unknown:
        print(f"unknown model {', '.join(sorted(unknown))}: choose from {', '.join(NAMES)}", file=sys.stderr)
        return 2
    for name in NAMES:
        if names and name not in names:
            continue
        child = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--one", name, "--out", str(out)],
            env=env,
            capture_output=True,
            text=True,
        )
        results = [line[len("RESULT ") :] for line in child.stdout.splitlines() if line.startswith("RESULT ")]
        print("\n".join(results) or f"{name}: no output", flush=True)
        if child.returncode != 0:
            failures += 1
            if child.returncode < 0:
                print(f"{name}: the converter crashed (signal {-child.returncode})", flush=True)
    return 1 if failures else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", nargs="+", default=[], metavar="NAME", help="build only these models")
    parser.add_argument("--out", type=Path, default=OUT, help=f"output folder (default {OUT})")
    parser.add_argument(
        "--venv",
        type=Path,
        default=Path(os.environ.get("MICROCOMPILER_TF_VENV", DEFAULT_VENV)),
        help="virtual environment with tensorflow-cpu, created if missing "
        f"(default $MICROCOMPILER_TF_VENV or {DEFAULT_VENV})",
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: the child that builds one model
    args = parser.parse_args(argv)
    ensure_venv(
        args.venv,
        TF_REQUIREMENTS,
        ["tensorflow", "tf_keras"],
        __file__,
        env={"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONHASHSEED": "0"},
    )
    if args.one:
        return build_one(args.one, args.out)
    return build(set(args.only), args.out)


if __name__ == "__main__":
    sys.exit(main())
