"""FULLY_CONNECTED against the TFLM oracle: int8 (per-tensor and per-channel), int16x8, float32."""

import numpy as np
import pytest
from harness import assert_matches_oracle
from model_builder import ModelBuilder, fully_connected_options


def fc_model(dtype, batches, depth, units, activation, per_channel, bias=True, seed=0, input_zp=-5):
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    if dtype == "float32":
        x = b.activation("x", [batches, depth], "float32")
        w = b.constant("w", rng.normal(0, 0.5, (units, depth)).astype(np.float32))
        inputs = [x, w]
        if bias:
            inputs.append(b.constant("bias", rng.normal(0, 0.5, units).astype(np.float32)))
        y = b.activation("y", [batches, units], "float32")
    else:
        wide = dtype == "int16"
        x = b.activation("x", [batches, depth], dtype, scale=0.02, zero_point=0 if wide else input_zp)
        w_scale = rng.uniform(0.002, 0.02, units if per_channel else 1)
        w = b.constant(
            "w",
            rng.integers(-127, 128, (units, depth), dtype=np.int8),
            scale=w_scale,
            zero_point=[0] * len(w_scale),
            axis=0,
        )
        inputs = [x, w]
        if bias:
            bias_dtype = np.int64 if wide else np.int32
            inputs.append(
                b.constant(
                    "bias",
                    rng.integers(-3000, 3000, units).astype(bias_dtype),
                    scale=list(0.02 * w_scale),
                    zero_point=[0] * len(w_scale),
                )
            )
        y = b.activation("y", [batches, units], dtype, scale=0.05 if not wide else 0.004, zero_point=0 if wide else 3)
    b.op("FULLY_CONNECTED", inputs, [y], fully_connected_options(activation))
    return b.finish([x], [y])


# TFLM supports per-channel FULLY_CONNECTED weights only with int8 inputs.
@pytest.mark.parametrize("dtype,per_channel", [("int8", False), ("int8", True), ("int16", False), ("float32", False)])
@pytest.mark.parametrize("activation", ["NONE", "RELU", "RELU6"])
def test_fully_connected_matches_tflm(tmp_path, dtype, activation, per_channel):
    model = fc_model(dtype, batches=2, depth=37, units=11, activation=activation, per_channel=per_channel)
    assert_matches_oracle(model, tmp_path)


@pytest.mark.parametrize("bias", [False, True])
def test_fully_connected_odd_shapes_and_no_bias(tmp_path, bias):
    assert_matches_oracle(fc_model("int8", 3, 1, 1, "NONE", False, bias=bias, input_zp=127), tmp_path)
    assert_matches_oracle(fc_model("int8", 1, 130, 7, "RELU", True, bias=bias, input_zp=-128), tmp_path / "b")


def test_graph_executor_matches_oracle_with_sanitizers(tmp_path):
    """The same model through the on-device graph executor (host build, ASan+UBSan)."""
    model = fc_model("int8", batches=2, depth=20, units=6, activation="RELU", per_channel=True)
    assert_matches_oracle(model, tmp_path, sanitize=True, executor="graph")
