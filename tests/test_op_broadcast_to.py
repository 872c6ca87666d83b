"""BROADCAST_TO and BROADCAST_ARGS against the TFLM oracle: every type TFLM runs, 1-D..5-D,
rank extension, a run-time shape input (only the output shape matters); BROADCAST_ARGS folded
(constant shapes) and at run time; malformed shapes via the CLI."""

import numpy as np
import pytest
from harness import assert_matches_oracle
from model_builder import ModelBuilder
from movement_models import assert_clean_rejection, run_ours, side_by_side, single_op


def broadcast_to_case(shape, out_shape, dtype="int8", shape_value=None):
    target = np.array(shape_value or out_shape, np.int32)
    return ("BROADCAST_TO", shape, dtype, [target], [out_shape], None)


def broadcast_to_model(*args, **kwargs):
    return single_op(*broadcast_to_case(*args, **kwargs))


CASES = [  # input shape, output shape
    ([1], [5]),
    ([3], [4, 3]),  # rows repeated: memcpy
    ([4, 1], [4, 3]),  # each value repeated
    ([2, 1, 3], [2, 4, 3]),
    ([1, 3, 1], [2, 2, 3, 5]),
    ([2, 1, 2, 1, 1], [2, 3, 2, 2, 3]),
]


def test_broadcast_to_int8_matches_tflm(tmp_path):
    """Every case of CASES side by side in one model."""
    assert_matches_oracle(side_by_side([broadcast_to_case(*case) for case in CASES]), tmp_path, n_inputs=2)


def test_broadcast_to_types_match_tflm(tmp_path):
    model = side_by_side(
        [broadcast_to_case([3, 1], [2, 3, 2], dtype) for dtype in ("int16", "int32", "int64", "float32", "bool")]
    )
    assert_matches_oracle(model, tmp_path, n_inputs=2, sanitize=True)


def test_broadcast_to_with_a_run_time_shape(tmp_path):
    """TFLM refuses a shape computed at run time; the output shape alone decides here (numpy)."""
    b = ModelBuilder()
    x = b.activation("x", [1, 3], "float32")
    s = b.activation("s", [2], "int32")
    y = b.activation("y", [4, 3], "float32")
    b.op("BROADCAST_TO", [x, s], [y])
    x_in = np.float32([[1.5, -2, 3]])
    _, outs = run_ours(b.finish([x, s], [y]), tmp_path, inputs=[[x_in, np.int32([4, 3])]])
    np.testing.assert_array_equal(outs[0][0], np.broadcast_to(x_in, (4, 3)))


@pytest.mark.parametrize(
    "shape,out_shape,value,match",
    [
        ([2, 3], [4, 3], None, "cannot broadcast"),
        ([2, 3], [3], None, "lower rank"),
        ([1, 3], [4, 3], [5, 3], "differs from the output shape"),
    ],
)
def test_broadcast_to_rejections(tmp_path, shape, out_shape, value, match):
    assert_clean_rejection(broadcast_to_model(shape, out_shape, shape_value=value), tmp_path, match)


def broadcast_args_model(a, b_, dtype, constant):
    b = ModelBuilder()
    n = max(len(a), len(b_))
    if constant:
        s0, s1 = b.constant("s0", np.array(a, dtype)), b.constant("s1", np.array(b_, dtype))
        x = b.activation("x", [n], dtype)
        y = b.activation("y", [n], dtype)
        b.op("BROADCAST_ARGS", [s0, s1], [y])
        return b.finish([x], [y])  # x: an unused model input, so that the model has one
    s0, s1 = b.activation("s0", [len(a)], dtype), b.activation("s1", [len(b_)], dtype)
    y = b.activation("y", [n], dtype)
    b.op("BROADCAST_ARGS", [s0, s1], [y])
    return b.finish([s0, s1], [y])


@pytest.mark.parametrize(
    "a,b_,dtype", [([2, 1, 4], [3, 1], "int32"), ([5], [4, 1, 5], "int64"), ([1, 1], [1, 7], "int32")]
)
def test_broadcast_args_at_run_time_matches_tflm(tmp_path, a, b_, dtype):
    inputs = [[np.array(a, dtype), np.array(b_, dtype)]]
    assert_matches_oracle(
        broadcast_args_model(a, b_, dtype, constant=False), tmp_path, inputs=inputs, sanitize=dtype == "int64"
    )


def test_broadcast_args_of_constants_matches_tflm(tmp_path):
    library = assert_matches_oracle(
        broadcast_args_model([2, 1, 4], [3, 1], "int32", constant=True), tmp_path, n_inputs=1
    )
    assert [o["kind"] for o in library.metadata["operators"]] == ["BROADCAST_ARGS"]  # a model output: a copy


def test_broadcast_args_rejects_incompatible_constant_shapes(tmp_path):
    assert_clean_rejection(
        broadcast_args_model([2, 3], [4, 3], "int32", constant=True), tmp_path, "cannot be broadcast"
    )
