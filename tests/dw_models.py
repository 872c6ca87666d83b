"""Models with depthwise convolutions between other layers, for the in-place depthwise schedule
(passes/memory_plan.py, ``share_in_place_with_scratch``) and the dropped depthwise channels
(passes/zero_channels.py)."""

from __future__ import annotations

import numpy as np
from model_builder import ModelBuilder, conv2d_options, depthwise_options

X_SCALE = 0.02


def conv(b, rng, name, x, x_scale, shape_in, out_c, kernel, activation="NONE", zero_point=3):
    """CONV_2D ``kernel`` SAME stride 1 from ``x`` [1, h, w, c] to ``out_c`` channels."""
    h, w, c = shape_in
    scales = rng.uniform(0.002, 0.02, out_c)
    wt = b.constant(
        f"{name}/w",
        rng.integers(-127, 128, (out_c, kernel, kernel, c), dtype=np.int8),
        scale=scales,
        zero_point=[0] * out_c,
    )
    bias = b.constant(
        f"{name}/bias",
        rng.integers(-3000, 3000, out_c).astype(np.int32),
        scale=list(x_scale * scales),
        zero_point=[0] * out_c,
    )
    y = b.activation(name, [1, h, w, out_c], "int8", scale=0.05, zero_point=zero_point)
    b.op("CONV_2D", [x, wt, bias], [y], conv2d_options(activation=activation))
    return y


def depthwise(
    b,
    rng,
    name,
    x,
    x_scale,
    shape_in,
    shape_out,
    kernel=(3, 3),
    stride=(1, 1),
    padding="SAME",
    activation="NONE",
    zero=(),
    zero_point=-4,
):
    """DEPTHWISE_CONV_2D, depth multiplier 1, per-channel weights; the channels ``zero`` all-zero."""
    c = shape_in[2]
    scales = rng.uniform(0.002, 0.02, c)
    w = rng.integers(-127, 128, (1, *kernel, c), dtype=np.int8)
    w[..., list(zero)] = 0
    wt = b.constant(f"{name}/w", w, scale=scales, zero_point=[0] * c, axis=3)
    bias = b.constant(
        f"{name}/bias", rng.integers(-3000, 3000, c).astype(np.int32), scale=list(x_scale * scales), zero_point=[0] * c
    )
    y = b.activation(name, [1, *shape_out], "int8", scale=0.05, zero_point=zero_point)
    b.op(
        "DEPTHWISE_CONV_2D",
        [x, wt, bias],
        [y],
        depthwise_options(padding=padding, stride=stride, activation=activation),
    )
    return y


def sandwich_model(
    hwc=(16, 16, 8),
    out_hw=None,
    kernel=(3, 3),
    stride=(1, 1),
    padding="SAME",
    activation="RELU6",
    zero=(),
    input_zp=-5,
    seed=0,
) -> bytes:
    """x [1, h, w, 3] -> conv 1x1 to c channels -> the depthwise layer -> conv 1x1 to 4 channels (the
    model output): the depthwise layer's input and output are both in the arena, and its step is the
    peak."""
    rng = np.random.default_rng(seed)
    h, w, c = hwc
    out_hw = out_hw or (h, w)
    b = ModelBuilder()
    x = b.activation("x", [1, h, w, 3], "int8", scale=X_SCALE, zero_point=input_zp)
    y1 = conv(b, rng, "expand", x, X_SCALE, (h, w, 3), c, 1)
    y2 = depthwise(b, rng, "dw", y1, 0.05, hwc, (*out_hw, c), kernel, stride, padding, activation, zero)
    y3 = conv(b, rng, "project", y2, 0.05, (*out_hw, c), 4, 1)
    return b.finish([x], [y3])


def mobilenet_like_model(seed=0) -> bytes:
    """A MobileNet-v1-like stem at 48x48 whose peak is at its first depthwise layer:
    x [1,48,48,3] -> conv 3x3 to 16 (36,864 B) -> dw 3x3 (36,864 B) -> conv 1x1 to 8 -> dw 3x3 stride 2
    -> conv 1x1 to 16 -> dw 3x3 VALID -> conv 1x1 to 4 (the output)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.activation("x", [1, 48, 48, 3], "int8", scale=X_SCALE, zero_point=-7)
    y = conv(b, rng, "conv1", x, X_SCALE, (48, 48, 3), 16, 3, "RELU6")
    y = depthwise(b, rng, "dw1", y, 0.05, (48, 48, 16), (48, 48, 16), activation="RELU6")
    y = conv(b, rng, "pw1", y, 0.05, (48, 48, 16), 8, 1, "RELU6")
    y = depthwise(b, rng, "dw2", y, 0.05, (48, 48, 8), (24, 24, 8), stride=(2, 2), activation="RELU6")
    y = conv(b, rng, "pw2", y, 0.05, (24, 24, 8), 16, 1, "RELU6")
    y = depthwise(b, rng, "dw3", y, 0.05, (24, 24, 16), (22, 22, 16), padding="VALID", activation="RELU6")
    y = conv(b, rng, "pw3", y, 0.05, (22, 22, 16), 4, 1)
    return b.finish([x], [y])
