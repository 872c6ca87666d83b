"""Look-alike int8 models of the peer figures in ../shared/baselines/qemu_tflm.md that have no
.tflite in ../shared/models (issue 13): the same layer shapes, seeded random weights.

* VWW: MobileNet-v1 0.25 at 96x96x3 (the MLPerf Tiny visual wake words model), 2 classes;
* person_detect: the same network on a 96x96 grayscale image (TFLM's person detection example);
* micro_speech: TFLM's micro speech model: a 49x40 spectrogram, DEPTHWISE_CONV_2D 10x8 stride 2
  with depth multiplier 8, FULLY_CONNECTED to 4 classes, SOFTMAX.

Used by scripts/benchmarks.py (``--models VWW micro_speech person_detect``); built with
tests/model_builder.py.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

# MobileNet-v1 0.25: (depthwise stride, pointwise output channels) after the first 3x3 stride-2 conv to 8.
MOBILENET_V1_025 = [
    (1, 16),
    (2, 32),
    (1, 32),
    (2, 64),
    (1, 64),
    (2, 128),
    (1, 128),
    (1, 128),
    (1, 128),
    (1, 128),
    (1, 128),
    (2, 256),
    (1, 256),
]


RELU6_SCALE = 6 / 255


class _Net:
    """Appends quantized layers to a ModelBuilder, keeping each activation's scale."""

    def __init__(self, seed: int):
        sys.path.insert(0, str(ROOT / "tests"))
        import model_builder

        self.mb = model_builder
        self.b = model_builder.ModelBuilder()
        self.rng = np.random.default_rng(seed)
        self.n = 0

    def conv(self, x, x_scale, shape, kernel, out_c, stride, kind="CONV_2D", multiplier=1, target=40):
        """A conv (or depthwise) layer with a fused RELU6 and the usual output quantization of RELU6
        (scale 6/255, zero point -128); the weight scales put a typical accumulator at about target
        output steps, so that the activations neither vanish nor saturate. Returns (output, scale,
        shape)."""
        self.n += 1
        b, rng = self.b, self.rng
        h, w, c = shape
        depthwise = kind == "DEPTHWISE_CONV_2D"
        oc = c * multiplier if depthwise else out_c
        w_shape = (1, *kernel, oc) if depthwise else (oc, *kernel, c)
        taps = kernel[0] * kernel[1] * (1 if depthwise else c)
        scale = RELU6_SCALE
        # |x - zp| and |w| are about 74 on average (uniform int8): acc ~ sqrt(taps) * 74 * 74
        w_scale = rng.uniform(0.5, 1.5, oc) * target * scale / (x_scale * math.sqrt(taps) * 74 * 74)
        wt = b.constant(
            f"w{self.n}",
            rng.integers(-127, 128, w_shape, dtype=np.int8),
            scale=w_scale,
            zero_point=[0] * oc,
            axis=3 if depthwise else 0,
        )
        bias = b.constant(
            f"b{self.n}",
            rng.integers(-2000, 2000, oc).astype(np.int32),
            scale=list(x_scale * w_scale),
            zero_point=[0] * oc,
        )
        out_shape = (math.ceil(h / stride), math.ceil(w / stride), oc)
        y = b.activation(f"a{self.n}", [1, *out_shape], "int8", scale=scale, zero_point=-128)
        if depthwise:
            options = self.mb.depthwise_options(
                "SAME", (stride, stride), depth_multiplier=multiplier, activation="RELU6"
            )
        else:
            options = self.mb.conv2d_options("SAME", (stride, stride), activation="RELU6")
        b.op(kind, [x, wt, bias], [y], options)
        return y, scale, out_shape

    def classifier(self, x, x_scale, depth, classes):
        """FULLY_CONNECTED to the classes, then SOFTMAX; returns the output tensor."""
        b, rng = self.b, self.rng
        w_scale = 0.01
        wt = b.constant(
            "fc_w", rng.integers(-127, 128, (classes, depth), dtype=np.int8), scale=[w_scale], zero_point=[0]
        )
        bias = b.constant(
            "fc_b", rng.integers(-500, 500, classes).astype(np.int32), scale=[x_scale * w_scale], zero_point=[0]
        )
        logits = b.activation(
            "logits", [1, classes], "int8", scale=x_scale * w_scale * math.sqrt(depth) * 40, zero_point=0
        )
        b.op("FULLY_CONNECTED", [x, wt, bias], [logits], self.mb.fully_connected_options())
        probs = b.activation("probs", [1, classes], "int8", scale=1 / 256, zero_point=-128)
        b.op("SOFTMAX", [logits], [probs], self.mb.softmax_options())
        return probs


def mobilenet_v1_025(channels: int, seed: int = 0, pooled_output: bool = False) -> bytes:
    """``pooled_output``: the pooled features (256 values every layer feeds) as a second model output,
    for tests that compare more than the two class scores."""
    net = _Net(seed)
    x = net.b.activation("image", [1, 96, 96, channels], "int8", scale=1 / 128, zero_point=0)
    y, s, shape = net.conv(x, 1 / 128, (96, 96, channels), (3, 3), 8, 2)
    for stride, out_c in MOBILENET_V1_025:
        y, s, shape = net.conv(y, s, shape, (3, 3), 0, stride, kind="DEPTHWISE_CONV_2D")
        y, s, shape = net.conv(y, s, shape, (1, 1), out_c, 1)
    pooled = net.b.activation("pooled", [1, 1, 1, shape[2]], "int8", scale=s, zero_point=-128)
    net.b.op("AVERAGE_POOL_2D", [y], [pooled], net.mb.pool_options(shape[:2], (1, 1), "VALID"))
    return net.b.finish([x], [net.classifier(pooled, s, shape[2], 2)] + ([pooled] if pooled_output else []))


def micro_speech(seed: int = 0) -> bytes:
    net = _Net(seed)
    x = net.b.activation("spectrogram", [1, 49, 40, 1], "int8", scale=0.1, zero_point=-128)
    y, s, shape = net.conv(x, 0.1, (49, 40, 1), (10, 8), 0, 2, kind="DEPTHWISE_CONV_2D", multiplier=8)
    return net.b.finish([x], [net.classifier(y, s, int(np.prod(shape)), 4)])


LOOKALIKES = {
    "VWW": lambda: mobilenet_v1_025(3),
    "micro_speech": micro_speech,
    "person_detect": lambda: mobilenet_v1_025(1, seed=1),
}


def write(key: str, directory: Path) -> Path:
    path = directory / f"{key.lower()}_lookalike.tflite"
    path.write_bytes(LOOKALIKES[key]())
    return path
