"""Make microcompiler's example model: a tiny int8 keyword-spotting-style CNN.

    python examples/tiny_cnn/make_model.py   # writes examples/tiny_cnn/tiny_cnn_int8.tflite

Input [1, 16, 16, 1] int8 (say, a 16x16 spectrogram), output [1, 4] int8 class probabilities:
CONV_2D 3x3/2 (8 ch, RELU) -> DEPTHWISE_CONV_2D 3x3 (RELU6) -> CONV_2D 1x1 (16 ch, RELU)
-> AVERAGE_POOL_2D 8x8 -> RESHAPE -> FULLY_CONNECTED 4 -> SOFTMAX.
Weights are seeded random numbers (the model is for trying the toolchain, not for accuracy);
quantization scales are calibrated on seeded random inputs so activations use their int8 range.
Needs the test extras (`pip install .[test]`), which provide the flatbuffer schema.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))

from model_builder import (ModelBuilder, conv2d_options, depthwise_options,  # noqa: E402
                           fully_connected_options, pool_options, reshape_options, softmax_options)

rng = np.random.default_rng(2026)
IN_SCALE, IN_ZP = 0.05, -10


def quantize_weights(w: np.ndarray, axis: int):
    """Symmetric per-channel int8 weights along axis."""
    reduce = tuple(i for i in range(w.ndim) if i != axis)
    scale = np.abs(w).max(axis=reduce) / 127.0
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def conv_float(x, w, stride, pad, depthwise=False):
    """NHWC convolution in float (for calibration only)."""
    kh, kw = w.shape[1], w.shape[2]
    x = np.pad(x, ((0, 0), pad, pad, (0, 0)))
    oh, ow = (x.shape[1] - kh) // stride + 1, (x.shape[2] - kw) // stride + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[3] if depthwise else w.shape[0]), np.float32)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            if depthwise:
                out[:, i, j, :] = (patch * w[0]).sum(axis=(1, 2))
            else:
                out[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return out


def act_quant(values: np.ndarray, relu: bool):
    lo, hi = (0.0 if relu else float(values.min())), float(values.max())
    scale = max(hi - lo, 1e-3) / 255.0
    zp = int(np.clip(round(-128 - lo / scale), -128, 127))
    return scale, zp


def main(out: Path = HERE / "tiny_cnn_int8.tflite") -> Path:
    w1 = rng.normal(0, 0.4, (8, 3, 3, 1)).astype(np.float32)
    w2 = rng.normal(0, 0.4, (1, 3, 3, 8)).astype(np.float32)
    w3 = rng.normal(0, 0.3, (16, 1, 1, 8)).astype(np.float32)
    w4 = rng.normal(0, 0.3, (4, 16)).astype(np.float32)
    calib = (rng.integers(-128, 128, (32, 16, 16, 1)) - IN_ZP) * IN_SCALE
    a1 = np.maximum(conv_float(calib, w1, 2, (0, 1)), 0)
    a2 = np.clip(conv_float(a1, w2, 1, (1, 1), depthwise=True), 0, 6)
    a3 = np.maximum(conv_float(a2, w3, 1, (0, 0)), 0)
    a4 = a3.mean(axis=(1, 2))
    a5 = a4 @ w4.T

    b = ModelBuilder()
    x = b.activation("input", [1, 16, 16, 1], "int8", IN_SCALE, IN_ZP)
    prev, prev_scale = x, IN_SCALE
    layers = [("conv1", w1, a1, 0, conv2d_options("SAME", (2, 2), activation="RELU"), "CONV_2D"),
              ("dwconv2", w2, a2, 3, depthwise_options("SAME", (1, 1), activation="RELU6"), "DEPTHWISE_CONV_2D"),
              ("conv3", w3, a3, 0, conv2d_options("VALID", (1, 1), activation="RELU"), "CONV_2D")]
    for name, w, a, axis, options, kind in layers:
        qw, ws = quantize_weights(w, axis)
        scale, zp = act_quant(a, relu=True)
        wt = b.constant(f"{name}/weights", qw, scale=ws, zero_point=[0] * len(ws), axis=axis)
        bt = b.constant(f"{name}/bias", np.zeros(len(ws), np.int32), scale=prev_scale * ws,
                        zero_point=[0] * len(ws))
        y = b.activation(name, list(a.shape[1:]) and [1, *a.shape[1:]], "int8", scale, zp)
        b.op(kind, [prev, wt, bt], [y], options)
        prev, prev_scale = y, scale
    pool = b.activation("pool", [1, 1, 1, 16], "int8", prev_scale, b.tensors[prev].quantization.zeroPoint[0])
    b.op("AVERAGE_POOL_2D", [prev], [pool], pool_options((8, 8), (8, 8), "VALID"))
    flat = b.activation("flatten", [1, 16], "int8", prev_scale, b.tensors[prev].quantization.zeroPoint[0])
    shape = b.constant("flatten/shape", np.array([1, 16], np.int32))
    b.op("RESHAPE", [pool, shape], [flat], reshape_options([1, 16]))
    qw, ws = quantize_weights(w4, 0)
    scale, zp = act_quant(a5, relu=False)
    wt = b.constant("logits/weights", qw, scale=ws, zero_point=[0] * 4, axis=0)
    bt = b.constant("logits/bias", np.zeros(4, np.int32), scale=prev_scale * ws, zero_point=[0] * 4)
    logits = b.activation("logits", [1, 4], "int8", scale, zp)
    b.op("FULLY_CONNECTED", [flat, wt, bt], [logits], fully_connected_options())
    probs = b.activation("probabilities", [1, 4], "int8", 1 / 256, -128)
    b.op("SOFTMAX", [logits], [probs], softmax_options(1.0))
    out.write_bytes(b.finish([x], [probs]))
    return out


if __name__ == "__main__":
    print(f"wrote {main()}")
