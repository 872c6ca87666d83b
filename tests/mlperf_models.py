"""Look-alike MLPerf Tiny models built in the tests (tests/model_builder.py), for benchmarks whose
reference model is not in ../shared/models/mlperf_tiny/.

``vww_mobilenet``: the shape of the vww01 reference model, MobileNet-v1 with width 0.25 on a
96x96x3 int8 input (scale 1, zero point -128: uint8 pixels minus 128, as the firmware converts):
a 3x3 stride-2 convolution to 8 channels, 13 depthwise-separable blocks (channels 16, 32, 32, 64,
64, 128 x 6, 256, 256; stride 2 where MobileNet has it), 3x3 average pooling, a fully connected
layer to 2 classes and a softmax (scale 1/256, zero point -128). Random per-channel weights, scaled
so that the ReLU6 activations neither vanish nor saturate.
"""

from __future__ import annotations

import numpy as np
from model_builder import (
    ModelBuilder,
    conv2d_options,
    depthwise_options,
    fully_connected_options,
    pool_options,
    reshape_options,
    softmax_options,
)

VWW_SIZE = 96
VWW_BLOCKS = (
    (16, 1),
    (32, 2),
    (32, 1),
    (64, 2),
    (64, 1),
    (128, 2),
    (128, 1),
    (128, 1),
    (128, 1),
    (128, 1),
    (128, 1),
    (256, 2),
    (256, 1),
)  # (pointwise output channels, depthwise stride)
RELU6_SCALE = 6.0 / 255.0  # every hidden activation: ReLU6's range in int8
RELU6_ZERO_POINT = -128
PRE_ACTIVATION_STD = 3.0  # the spread the weights aim each layer's sums at, before ReLU6
PRE_ACTIVATION_MEAN = 0.5  # the bias: a little more than half of each layer's values pass ReLU6
INT8_UNIFORM_STD = 73.0  # std of integers drawn uniformly from [-127, 127]
PIXEL_STD = 73.6  # std of uniform pixels 0..255
RELU6_STD = 1.7  # std of the ReLU6 outputs of such sums


def _weights(
    b: ModelBuilder, name: str, rng, shape: tuple, input_scale: float, input_std: float, fan_in: int, channel_axis: int
) -> tuple[int, int]:
    """Weights whose sums have about PRE_ACTIVATION_STD spread and PRE_ACTIVATION_MEAN mean."""
    channels = shape[channel_axis]
    real_std = PRE_ACTIVATION_STD / (input_std * np.sqrt(fan_in))
    scales = real_std / INT8_UNIFORM_STD * rng.uniform(0.8, 1.25, channels)
    values = rng.integers(-120, 121, shape)
    other_axes = tuple(a for a in range(len(shape)) if a != channel_axis)
    values -= np.round(values.mean(axis=other_axes, keepdims=True)).astype(values.dtype)  # the input's mean cancels
    w = b.constant(
        f"{name}/weights", values.astype(np.int8), scale=scales, zero_point=[0] * channels, axis=channel_axis
    )
    bias_scales = scales * input_scale
    bias = b.constant(
        f"{name}/bias",
        np.round(PRE_ACTIVATION_MEAN / bias_scales).astype(np.int32),
        scale=bias_scales,
        zero_point=[0] * channels,
    )
    return w, bias


def vww_mobilenet(seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    size = VWW_SIZE // 2
    x = b.activation("input", [1, VWW_SIZE, VWW_SIZE, 3], "int8", scale=1.0, zero_point=-128)
    w, bias = _weights(b, "conv0", rng, (8, 3, 3, 3), 1.0, PIXEL_STD, 27, 0)
    h = b.activation("conv0", [1, size, size, 8], "int8", scale=RELU6_SCALE, zero_point=RELU6_ZERO_POINT)
    b.op("CONV_2D", [x, w, bias], [h], conv2d_options("SAME", (2, 2), activation="RELU6"))
    channels = 8
    for k, (out_channels, stride) in enumerate(VWW_BLOCKS, start=1):
        size //= stride
        w, bias = _weights(b, f"block{k}/depthwise", rng, (1, 3, 3, channels), RELU6_SCALE, RELU6_STD, 9, 3)
        d = b.activation(
            f"block{k}/depthwise", [1, size, size, channels], "int8", scale=RELU6_SCALE, zero_point=RELU6_ZERO_POINT
        )
        b.op("DEPTHWISE_CONV_2D", [h, w, bias], [d], depthwise_options("SAME", (stride, stride), activation="RELU6"))
        w, bias = _weights(
            b, f"block{k}/pointwise", rng, (out_channels, 1, 1, channels), RELU6_SCALE, RELU6_STD, channels, 0
        )
        h = b.activation(
            f"block{k}/pointwise", [1, size, size, out_channels], "int8", scale=RELU6_SCALE, zero_point=RELU6_ZERO_POINT
        )
        b.op("CONV_2D", [d, w, bias], [h], conv2d_options("SAME", activation="RELU6"))
        channels = out_channels
    pooled = b.activation("pool", [1, 1, 1, channels], "int8", scale=RELU6_SCALE, zero_point=RELU6_ZERO_POINT)
    b.op("AVERAGE_POOL_2D", [h], [pooled], pool_options((size, size), (size, size)))
    flat_shape = b.constant("flatten/shape", np.array([1, channels], np.int32))
    flat = b.activation("flatten", [1, channels], "int8", scale=RELU6_SCALE, zero_point=RELU6_ZERO_POINT)
    b.op("RESHAPE", [pooled, flat_shape], [flat], reshape_options([1, channels]))
    w, bias = _weights(b, "logits", rng, (2, channels), RELU6_SCALE, RELU6_STD, channels, 0)
    logits = b.activation("logits", [1, 2], "int8", scale=0.05, zero_point=0)
    b.op("FULLY_CONNECTED", [flat, w, bias], [logits], fully_connected_options())
    y = b.activation("scores", [1, 2], "int8", scale=1.0 / 256.0, zero_point=-128)
    b.op("SOFTMAX", [logits], [y], softmax_options())
    return b.finish(inputs=[x], outputs=[y])
