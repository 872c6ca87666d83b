"""A micro_speech-sized model for the small boards (qemu_cortex_m0, 16 KB of RAM): TFLM's micro_speech
keeps ~19 KB of weights in a conv, a depthwise and a fully connected layer over a 49x40 spectrogram;
this one has the same shape of cost (about 18 KB of weights, ~4 KB of live activations)."""

from __future__ import annotations

import numpy as np
from model_builder import ModelBuilder, conv2d_options, depthwise_options, fully_connected_options, reshape_options

IN_HW = (49, 40)


def _weights(b, rng, name, shape, x_scale, out_c, axis=0):
    scales = rng.uniform(0.002, 0.02, out_c)
    w = b.constant(
        f"{name}/w", rng.integers(-127, 128, shape, dtype=np.int8), scale=scales, zero_point=[0] * out_c, axis=axis
    )
    bias = b.constant(
        f"{name}/bias",
        rng.integers(-2000, 2000, out_c).astype(np.int32),
        scale=list(x_scale * scales),
        zero_point=[0] * out_c,
    )
    return w, bias


def micro_speech_like(seed: int = 0) -> bytes:
    """x int8 [1, 49, 40, 1] -> CONV_2D 8 filters 10x8 stride 2 (RELU) [1, 25, 20, 8] -> DEPTHWISE 3x3
    stride 2 (RELU) [1, 13, 10, 8] -> CONV_2D 1x1 16 [1, 13, 10, 16] -> FULLY_CONNECTED 2080 -> 8 ->
    FULLY_CONNECTED 8 -> 4: 17.6 KB of weights."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x_scale = 0.05
    x = b.activation("input", [1, *IN_HW, 1], "int8", scale=x_scale, zero_point=-3)
    w, bias = _weights(b, rng, "conv", (8, 10, 8, 1), x_scale, 8)
    c1 = b.activation("conv", [1, 25, 20, 8], "int8", scale=0.04, zero_point=-128)
    b.op("CONV_2D", [x, w, bias], [c1], conv2d_options(stride=(2, 2), activation="RELU"))
    w, bias = _weights(b, rng, "depthwise", (1, 3, 3, 8), 0.04, 8, axis=3)
    d = b.activation("depthwise", [1, 13, 10, 8], "int8", scale=0.05, zero_point=-128)
    b.op("DEPTHWISE_CONV_2D", [c1, w, bias], [d], depthwise_options(stride=(2, 2), activation="RELU"))
    w, bias = _weights(b, rng, "pointwise", (16, 1, 1, 8), 0.05, 16)
    p = b.activation("pointwise", [1, 13, 10, 16], "int8", scale=0.06, zero_point=2)
    b.op("CONV_2D", [d, w, bias], [p], conv2d_options())
    flat = b.activation("flatten", [1, 13 * 10 * 16], "int8", scale=0.06, zero_point=2)
    shape = b.constant("flatten/shape", np.array([1, 13 * 10 * 16], dtype=np.int32))
    b.op("RESHAPE", [p, shape], [flat], reshape_options([1, 13 * 10 * 16]))
    w, bias = _weights(b, rng, "fc", (8, 13 * 10 * 16), 0.06, 8)
    f = b.activation("fc", [1, 8], "int8", scale=0.2, zero_point=0)
    b.op("FULLY_CONNECTED", [flat, w, bias], [f], fully_connected_options())
    w, bias = _weights(b, rng, "logits", (4, 8), 0.2, 4)
    y = b.activation("logits", [1, 4], "int8", scale=0.1, zero_point=-10)
    b.op("FULLY_CONNECTED", [f, w, bias], [y], fully_connected_options())
    return b.finish(inputs=[x], outputs=[y])
