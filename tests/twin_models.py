"""A model with two identical layers (same shapes, zero points and kernel plan, other weights): their
generated bodies differ only in the weight arrays' names, so codegen emits the body once
(codegen/shared_bodies.py)."""

from __future__ import annotations

import numpy as np
from dw_models import X_SCALE, conv, depthwise
from model_builder import ModelBuilder


def twin_conv_model(seed=0) -> bytes:
    """x [1, 6, 6, 3] -> conv 1x1 to 8 -> depthwise 3x3 -> conv 1x1 8 to 8 -> conv 1x1 8 to 8 (the two
    twins: the same shapes and zero points, their own weights)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.activation("x", [1, 6, 6, 3], "int8", scale=X_SCALE, zero_point=-5)
    y = conv(b, rng, "expand", x, X_SCALE, (6, 6, 3), 8, 1, activation="RELU")
    y = depthwise(b, rng, "dw", y, 0.05, (6, 6, 8), (6, 6, 8), zero_point=3)
    y = conv(b, rng, "twin_a", y, 0.05, (6, 6, 8), 8, 1)
    y = conv(b, rng, "twin_b", y, 0.05, (6, 6, 8), 8, 1)
    return b.finish([x], [y])
