"""Build the ONNX test models of tests/models/onnx the way users make them (issue 36).

    python3 scripts/onnx_models.py [--venv DIR] [--out tests/models/onnx]

Small Keras models (fixed seeds, batch size 1) -> ``tf2onnx.convert.from_keras`` (opset 17) -> float32
``.onnx``; then ONNX Runtime's ``quantize_static`` (QDQ format, int8 activations and per-channel int8
weights, a calibration reader of 32 seeded samples) -> ``*_qdq_int8.onnx``. Run with a Python that has
no TensorFlow, the script creates a virtual environment of its own (by default
~/.cache/microcompiler/onnx-tools-venv), installs the pinned ``tensorflow-cpu``, ``tf2onnx``, ``onnx``
and ``onnxruntime`` from the package registry into it, and runs itself there. tf2onnx and TensorFlow
are not test dependencies: the tests read the committed files.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tool_venv import ensure_venv  # noqa: E402

REQUIREMENTS = ["tensorflow-cpu==2.21.0", "tf2onnx==1.17.0", "onnx==1.23.2", "onnxruntime==1.32.0"]
DEFAULT_VENV = Path.home() / ".cache" / "microcompiler" / "onnx-tools-venv"
OUT = Path(__file__).resolve().parents[1] / "tests" / "models" / "onnx"
# Models with residual connections: quantized with uint8 activations (quantize_static's default), so that
# ONNX Runtime fuses every Conv into QLinearConv on x86. With int8 activations its QDQS8ToU8Transformer
# leaves a QuantizeLinear with two DequantizeLinear readers (a value read twice) in int8, and its Conv
# selector refuses int8 activations there: those Convs stay float32 between DQ and Q (docs/onnx.md).
# DedicatedQDQPair does not help (one QuantizeLinear per reader: the producer then has two).
UINT8_ACTIVATIONS = ("resnet8", "mobilenet_v2_035_96")
# Pre-processed with ONNX Runtime's quant_pre_process (its recommended step before quantize_static: its
# basic graph optimizations fold tf2onnx's BatchNorm Mul/Add into the Convs before them, and Pads into the
# Convs), so that no QLinearMul by a per-channel constant is left between the fused Convs.
PREPROCESS = ("mobilenet_v2_035_96",)


def models():
    """name -> (Keras model, input shape without the batch, input kind)."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(36)

    def ds_cnn():
        x = inp = keras.Input((49, 10, 1), batch_size=1)
        x = layers.Conv2D(16, (10, 4), strides=2, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.ReLU()(x)
        for _ in range(2):
            x = layers.DepthwiseConv2D(3, padding="same")(x)
            x = layers.BatchNormalization()(x)
            x = layers.ReLU()(x)
            x = layers.Conv2D(16, 1)(x)
            x = layers.BatchNormalization()(x)
            x = layers.ReLU()(x)
        x = layers.GlobalAveragePooling2D()(x)
        return keras.Model(inp, layers.Dense(12, activation="softmax")(x))

    def small_cnn():
        x = inp = keras.Input((16, 16, 3), batch_size=1)
        x = layers.Conv2D(8, 3, padding="same", activation="relu")(x)
        x = layers.MaxPooling2D(2)(x)
        y = layers.Conv2D(8, 3, padding="same", activation="relu6")(x)
        x = layers.Add()([x, y])
        x = layers.AveragePooling2D(2)(x)
        x = layers.Flatten()(x)
        return keras.Model(inp, layers.Dense(5)(x))

    def dense_autoencoder():
        x = inp = keras.Input((64,), batch_size=1)
        for width in (32, 8, 32):
            x = layers.Dense(width, activation="relu")(x)
        return keras.Model(inp, layers.Dense(64)(x))

    def resnet8():
        """MLPerf Tiny's image-classification ResNet-8 (CIFAR-10, 32x32x3)."""

        def conv_bn(x, filters, kernel, strides=1, relu=True):
            x = layers.Conv2D(filters, kernel, strides=strides, padding="same")(x)
            x = layers.BatchNormalization()(x)
            return layers.Activation("relu")(x) if relu else x

        x = inp = keras.Input((32, 32, 3), batch_size=1)
        x = conv_bn(x, 16, 3)
        for filters, strides in ((16, 1), (32, 2), (64, 2)):
            y = conv_bn(x, filters, 3, strides)
            y = conv_bn(y, filters, 3, relu=False)
            if strides > 1:
                x = layers.Conv2D(filters, 1, strides=strides, padding="same")(x)
            x = layers.Activation("relu")(layers.Add()([x, y]))
        x = layers.AveragePooling2D(8)(x)
        x = layers.Flatten()(x)
        return keras.Model(inp, layers.Dense(10, activation="softmax")(x))

    def mobilenet_v2():
        """Keras's MobileNetV2, alpha 0.35, 96x96x3, 2 classes (random weights): ~400K parameters."""
        return keras.applications.MobileNetV2(
            input_shape=(96, 96, 3), alpha=0.35, weights=None, classes=2, classifier_activation="softmax"
        )

    return {
        "ds_cnn": (ds_cnn(), (49, 10, 1)),
        "small_cnn": (small_cnn(), (16, 16, 3)),
        "dense_autoencoder": (dense_autoencoder(), (64,)),
        "resnet8": (resnet8(), (32, 32, 3)),
        "mobilenet_v2_035_96": (mobilenet_v2(), (96, 96, 3)),
    }


def build(out: Path, only: list[str] | None = None) -> None:
    import numpy as np
    import onnx
    import tensorflow as tf
    import tf2onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    out.mkdir(parents=True, exist_ok=True)
    for name, (model, shape) in models().items():
        if only and name not in only:
            continue
        rng = np.random.default_rng(36)
        # BatchNorm statistics that are not the identity, so that folding them is exercised
        for layer in model.layers:
            if isinstance(layer, tf.keras.layers.BatchNormalization):
                n = layer.gamma.shape[0]
                layer.set_weights(
                    [rng.uniform(0.5, 1.5, n), rng.normal(0, 0.1, n), rng.normal(0, 0.1, n), rng.uniform(0.5, 2, n)]
                )
        spec = (tf.TensorSpec((1, *shape), tf.float32, name="input"),)
        proto, _ = tf2onnx.convert.from_keras(model, input_signature=spec, opset=17)
        float_path = out / f"{name}_float32.onnx"
        onnx.save(proto, float_path)

        class Calibration(CalibrationDataReader):
            def __init__(self, data):
                self.samples = iter([{"input": d} for d in data])

            def get_next(self):
                return next(self.samples, None)

        source = float_path
        if name in PREPROCESS:
            from onnxruntime.quantization.shape_inference import quant_pre_process

            source = Path(tempfile.mkdtemp(prefix="onnx-models-")) / f"{name}_preprocessed.onnx"
            quant_pre_process(str(float_path), str(source), skip_symbolic_shape=True)
        quantize_static(
            str(source),
            str(out / f"{name}_qdq_int8.onnx"),
            Calibration(rng.standard_normal((32, 1, *shape)).astype(np.float32)),
            quant_format=QuantFormat.QDQ,
            activation_type=QuantType.QUInt8 if name in UINT8_ACTIVATIONS else QuantType.QInt8,
            weight_type=QuantType.QInt8,
            per_channel=True,
        )
        if source != float_path:
            shutil.rmtree(source.parent)
        print(f"wrote {float_path.name} and {name}_qdq_int8.onnx", file=sys.stderr)


def tflite_twin(out: Path, names: list[str]) -> None:
    """``<name>_int8_twin.tflite``: the same Keras model, weights and BatchNorm statistics as build() gives
    it, converted by the TFLite converter to int8 (int8 input and output) with the same 32 calibration
    samples: what the QDQ model's speed is compared with (docs/onnx.md, issue 36)."""
    import numpy as np
    import tensorflow as tf

    out.mkdir(parents=True, exist_ok=True)
    for model_name, (model, shape) in models().items():
        rng = np.random.default_rng(36)  # as build(): the BatchNorm statistics, then the calibration
        for layer in model.layers:
            if isinstance(layer, tf.keras.layers.BatchNormalization):
                n = layer.gamma.shape[0]
                layer.set_weights(
                    [rng.uniform(0.5, 1.5, n), rng.normal(0, 0.1, n), rng.normal(0, 0.1, n), rng.uniform(0.5, 2, n)]
                )
        if model_name not in names:
            continue
        name = model_name
        calibration = rng.standard_normal((32, 1, *shape)).astype(np.float32)
        converter = tf.lite.TFLiteConverter.from_keras_model(model)
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = lambda samples=calibration: ([c] for c in samples)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
        (out / f"{name}_int8_twin.tflite").write_bytes(converter.convert())
        print(f"wrote {name}_int8_twin.tflite", file=sys.stderr)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="where to create the TensorFlow venv")
    parser.add_argument("--out", type=Path, default=OUT, help="output folder (default: tests/models/onnx)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="build only these models (default: all)")
    parser.add_argument(
        "--tflite-twin",
        nargs="+",
        metavar="NAME",
        help="write only these models' int8 TFLite twins (the speed comparison's)",
    )
    args = parser.parse_args(argv)
    ensure_venv(
        args.venv,
        REQUIREMENTS,
        ["tensorflow", "tf2onnx", "onnxruntime"],
        __file__,
        env={"TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""},
    )
    if args.tflite_twin:
        tflite_twin(args.out, args.tflite_twin)
    else:
        build(args.out, args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
