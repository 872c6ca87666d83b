"""RESHAPE against the TFLM oracle: the copy kernel (model input reshaped straight into a model
output, or one model output into another) and the zero-copy alias made by remove_reshapes."""

import numpy as np
import pytest
from harness import assert_matches_oracle, compile_bytes
from model_builder import ModelBuilder, fully_connected_options, reshape_options

from microcompiler.errors import UnsupportedModelError


def kinds(library):
    return [o["kind"] for o in library.metadata["operators"]]


@pytest.mark.parametrize(
    "dtype,in_shape,out_shape,shape_input",
    [
        ("int8", [2, 6], [3, 4], "int32"),
        ("int16", [1, 2, 3, 4], [24], "int64"),
        ("float32", [12], [2, 2, 3], None),  # shape from the options only
    ],
)
def test_reshape_copy_matches_tflm(tmp_path, dtype, in_shape, out_shape, shape_input):
    q = (0.1, -7) if dtype != "float32" else (None, None)
    b = ModelBuilder()
    x = b.activation("x", in_shape, dtype, scale=q[0], zero_point=q[1])
    y = b.activation("y", out_shape, dtype, scale=q[0], zero_point=q[1])
    inputs = [x]
    if shape_input:
        inputs.append(b.constant("shape", np.array(out_shape, dtype=shape_input)))
    b.op("RESHAPE", inputs, [y], reshape_options(out_shape))
    library = assert_matches_oracle(b.finish([x], [y]), tmp_path, sanitize=dtype == "int8")
    assert kinds(library) == ["RESHAPE"]  # two caller buffers: a real copy


def fc_layer(b, x, depth, units, name, seed):
    rng = np.random.default_rng(seed)
    w = b.constant(f"{name}_w", rng.integers(-127, 128, (units, depth), dtype=np.int8), scale=0.01, zero_point=0)
    bias = b.constant(f"{name}_b", rng.integers(-500, 500, units).astype(np.int32), scale=0.0002, zero_point=0)
    y = b.activation(name, [1, units], "int8", scale=0.05, zero_point=-2)
    b.op("FULLY_CONNECTED", [x, w, bias], [y], fully_connected_options())
    return y


def test_fc_then_reshape_is_an_alias(tmp_path):
    """FULLY_CONNECTED -> RESHAPE -> output: the FC writes straight into the output buffer."""
    b = ModelBuilder()
    x = b.activation("x", [1, 12], "int8", scale=0.02, zero_point=3)
    h = fc_layer(b, x, 12, 8, "h", 0)
    y = b.activation("y", [2, 4], "int8", scale=0.05, zero_point=-2)
    b.op("RESHAPE", [h, b.constant("shape", np.array([2, 4], dtype=np.int32))], [y])
    library = assert_matches_oracle(b.finish([x], [y]), tmp_path)
    assert kinds(library) == ["FULLY_CONNECTED"]


def test_reshape_then_fc_is_an_alias(tmp_path):
    """input -> RESHAPE -> FULLY_CONNECTED -> RESHAPE -> FULLY_CONNECTED -> output."""
    b = ModelBuilder()
    x = b.activation("x", [1, 3, 4], "int8", scale=0.02, zero_point=3)
    flat = b.activation("flat", [1, 12], "int8", scale=0.02, zero_point=3)
    b.op("RESHAPE", [x, b.constant("s1", np.array([1, 12], dtype=np.int32))], [flat])
    h = fc_layer(b, flat, 12, 6, "h", 1)
    h2 = b.activation("h2", [1, 6], "int8", scale=0.05, zero_point=-2)
    b.op("RESHAPE", [h, b.constant("s2", np.array([1, 6], dtype=np.int32))], [h2])
    y = fc_layer(b, h2, 6, 5, "y", 2)
    library = assert_matches_oracle(b.finish([x], [y]), tmp_path)
    assert kinds(library) == ["FULLY_CONNECTED", "FULLY_CONNECTED"]


def test_reshape_between_two_model_outputs(tmp_path):
    """An FC output that is a model output and is also reshaped into a second model output: the
    reshape copies from one caller buffer into the other."""
    b = ModelBuilder()
    x = b.activation("x", [1, 10], "int8", scale=0.02, zero_point=3)
    h = fc_layer(b, x, 10, 6, "h", 3)
    y = b.activation("y", [2, 3], "int8", scale=0.05, zero_point=-2)
    b.op("RESHAPE", [h, b.constant("shape", np.array([2, 3], dtype=np.int32))], [y])
    library = assert_matches_oracle(b.finish([x], [h, y]), tmp_path, sanitize=True)
    assert kinds(library) == ["FULLY_CONNECTED", "RESHAPE"]


def test_reshape_rejections(tmp_path):
    b = ModelBuilder()
    x = b.activation("x", [2, 6], "float32")
    y = b.activation("y", [5], "float32")
    b.op("RESHAPE", [x], [y], reshape_options([5]))
    with pytest.raises(UnsupportedModelError, match=r"RESHAPE\).*cannot reshape"):
        compile_bytes(b.finish([x], [y]), tmp_path / "a")


def test_reshape_with_a_shape_tensor_computed_at_run_time(tmp_path):
    # TFLM takes the output shape from the model, not from the shape input's values; so do we.
    b = ModelBuilder()
    x = b.activation("x", [2, 6], "float32")
    s = b.activation("s", [2], "int32")
    y = b.activation("y", [3, 4], "float32")
    b.op("RESHAPE", [x, s], [y])
    x_in = np.arange(12, dtype=np.float32).reshape(2, 6)
    assert_matches_oracle(b.finish([x, s], [y]), tmp_path, inputs=[[x_in, np.array([3, 4], np.int32)]])
