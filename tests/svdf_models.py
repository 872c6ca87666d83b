"""SVDF models built in the tests (no TensorFlow): a single int8 SVDF, a stacked keyword-spotting
style model (SVDF x 3 + FULLY_CONNECTED + SOFTMAX) and a float SVDF. Each keeps its activation
state in a variable tensor, so its outputs depend on every earlier inference."""

from __future__ import annotations

import numpy as np
from model_builder import ModelBuilder, fully_connected_options, softmax_options, svdf_options

UNIFORM_INT8_STD = 73.0  # standard deviation of integers uniform in [-127, 127]
TARGET_OUTPUT_STD = 40.0  # int8 steps: outputs spread over the range without saturating


def _svdf_int8(
    b: ModelBuilder,
    x: int,
    x_scale: float,
    n_input: int,
    n_filter: int,
    n_memory: int,
    rank: int,
    rng,
    name: str,
    out_zp: int,
    state_dtype: str = "int16",
    batch: int = 1,
    state_zp: int = 0,
) -> tuple[int, float]:
    """Add one int8 SVDF layer reading x; returns its output tensor and scale. The scales are chosen
    from the weights' spread so that state and output use their range without saturating."""
    n_unit = n_filter // rank
    wf_scale = 0.01
    wf = b.constant(
        f"{name}/weights_feature",
        rng.integers(-127, 128, (n_filter, n_input)).astype(np.int8),
        scale=wf_scale,
        zero_point=0,
    )
    wide = state_dtype == "int16"
    wt_max, state_std = (3000, 6000.0) if wide else (127, 30.0)
    state_scale = np.sqrt(n_input) * UNIFORM_INT8_STD**2 * x_scale * wf_scale / state_std
    wt_scale = 0.001
    wt = b.constant(
        f"{name}/weights_time",
        rng.integers(-wt_max, wt_max + 1, (n_filter, n_memory)).astype(np.int16 if wide else np.int8),
        scale=wt_scale,
        zero_point=0,
    )
    out_scale = (
        np.sqrt(rank * n_memory) * (wt_max / np.sqrt(3)) * state_std * state_scale * wt_scale / TARGET_OUTPUT_STD
    )
    bias_scale = float(np.float32(state_scale) * np.float32(wt_scale))
    bias = b.constant(
        f"{name}/bias", rng.integers(-2000, 2000, n_unit).astype(np.int32), scale=bias_scale, zero_point=0
    )
    state = b.variable(
        f"{name}/activation_state", [batch, n_memory * n_filter], state_dtype, scale=state_scale, zero_point=state_zp
    )
    y = b.activation(f"{name}/output", [batch, n_unit], "int8", scale=out_scale, zero_point=out_zp)
    b.op("SVDF", [x, wf, wt, bias, state], [y], svdf_options(rank))
    return y, float(out_scale)


def single_svdf_int8(
    seed: int = 0,
    state_dtype: str = "int16",
    batch: int = 1,
    n_filter: int = 8,
    rank: int = 2,
    n_input: int = 12,
    n_memory: int = 5,
    state_zp: int = 0,
) -> bytes:
    """One int8 SVDF: 12 inputs, 8 filters of rank 2 (4 units), a memory of 5 steps (by default)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.activation("input", [batch, n_input], "int8", scale=0.05, zero_point=3)
    y, _ = _svdf_int8(b, x, 0.05, n_input, n_filter, n_memory, rank, rng, "svdf", -4, state_dtype, batch, state_zp)
    return b.finish(inputs=[x], outputs=[y])


def stacked_svdf_kws(seed: int = 1, state_dtype: str = "int16") -> bytes:
    """A keyword-spotting style stack: SVDF(40 features -> 16 units) -> SVDF(-> 16) -> SVDF(-> 8),
    FULLY_CONNECTED to 4 classes, SOFTMAX."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.activation("features", [1, 40], "int8", scale=0.1, zero_point=-10)
    h, scale = _svdf_int8(b, x, 0.1, 40, 32, 8, 2, rng, "svdf_1", -2, state_dtype)
    h, scale = _svdf_int8(b, h, scale, 16, 16, 6, 1, rng, "svdf_2", 1, state_dtype)
    h, scale = _svdf_int8(b, h, scale, 16, 16, 4, 2, rng, "svdf_3", 0, state_dtype)
    logits_std = 1.5  # real units: the softmax then gives every class some probability
    w_scale = logits_std / (np.sqrt(8) * UNIFORM_INT8_STD * TARGET_OUTPUT_STD * scale)
    w = b.constant("dense/weights", rng.integers(-127, 128, (4, 8)).astype(np.int8), scale=w_scale, zero_point=0)
    bias = b.constant(
        "dense/bias",
        rng.integers(-500, 500, 4).astype(np.int32),
        scale=float(np.float32(scale) * np.float32(w_scale)),
        zero_point=0,
    )
    logits = b.activation("dense/output", [1, 4], "int8", scale=logits_std / TARGET_OUTPUT_STD, zero_point=5)
    b.op("FULLY_CONNECTED", [h, w, bias], [logits], fully_connected_options())
    probs = b.activation("softmax", [1, 4], "int8", scale=1 / 256, zero_point=-128)
    b.op("SOFTMAX", [logits], [probs], softmax_options())
    return b.finish(inputs=[x], outputs=[probs])


def float_svdf(seed: int = 2, activation: str = "RELU", batch: int = 1) -> bytes:
    """One float32 SVDF: 10 inputs, 6 filters of rank 3 (2 units), a memory of 4 steps."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.activation("input", [batch, 10], "float32")
    wf = b.constant("svdf/weights_feature", rng.standard_normal((6, 10)).astype(np.float32))
    wt = b.constant("svdf/weights_time", rng.standard_normal((6, 4)).astype(np.float32))
    bias = b.constant("svdf/bias", rng.standard_normal(2).astype(np.float32))
    state = b.variable("svdf/activation_state", [batch, 24], "float32")
    y = b.activation("svdf/output", [batch, 2], "float32")
    b.op("SVDF", [x, wf, wt, bias, state], [y], svdf_options(3, activation))
    return b.finish(inputs=[x], outputs=[y])
