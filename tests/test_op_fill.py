"""FILL against the TFLM oracle: int8, int32, float32 with a run-time value (memset for int8, a
loop otherwise), 1-element outputs, a constant value folded; malformed dims via the CLI."""

import numpy as np
import pytest
from harness import assert_matches_oracle
from model_builder import ModelBuilder
from movement_models import assert_clean_rejection, q, side_by_side


def fill_model(dims, dtype, out_shape=None, value=None, dims_dtype=np.int32, value_shape=()):
    b = ModelBuilder()
    d = b.constant("dims", np.array(dims, dims_dtype))
    if value is None:
        v = b.activation("v", list(value_shape), dtype, **q(dtype))
        inputs = [v]
    else:
        v = b.constant("v", np.array([value], dtype), **q(dtype))
        b.tensors[v].shape = []  # a scalar (the builder stores at least one dimension)
        inputs = [b.activation("unused", [1], dtype, **q(dtype))]
    y = b.activation("y", out_shape or dims, dtype, **q(dtype))
    b.op("FILL", [d, v], [y])
    return b.finish(inputs, [y])


def test_fill_matches_tflm(tmp_path):
    """A run-time value (memset for int8, a loop otherwise, one store for one element), side by side."""
    cases = [
        ([3, 4], "int8", np.int32),
        ([1], "int8", np.int64),
        ([2, 3, 5], "int32", np.int32),
        ([7], "float32", np.int64),
        ([1, 1], "float32", np.int32),
    ]
    model = side_by_side(
        [
            ("FILL", [], dtype, [np.array(dims, dims_dtype)], [dims], None, dict(const_first=True))
            for dims, dtype, dims_dtype in cases
        ]
    )
    assert_matches_oracle(model, tmp_path, n_inputs=2, sanitize=True)


@pytest.mark.parametrize("dtype,value", [("int8", -5), ("float32", 2.5)])
def test_fill_with_a_constant_value_matches_tflm(tmp_path, dtype, value):
    library = assert_matches_oracle(fill_model([2, 3], dtype, value=value), tmp_path, n_inputs=1)
    assert "memcpy" in library.files["src/model_ops.c"]  # a model output: the folded constant copied


@pytest.mark.parametrize("value_shape, dims_at_run_time", [([], True), ([1], False)], ids=["run_time_dims", "value_1d"])
def test_fill_refuses_what_tflm_refuses(tmp_path, value_shape, dims_at_run_time):
    """TFLM's prepare step compares the dims with the output shape (so refuses dims computed at run
    time) and needs a scalar value (a [1] value is refused); both used to compile."""
    from oracle import Oracle, TFLMError

    b = ModelBuilder()
    d = b.activation("dims", [2], "int32") if dims_at_run_time else b.constant("dims", np.array([2, 3], np.int32))
    v = b.activation("v", value_shape, "float32")
    y = b.activation("y", [2, 3], "float32")
    b.op("FILL", [d, v], [y])
    model = b.finish([d, v] if dims_at_run_time else [v], [y])
    with pytest.raises(TFLMError):
        Oracle(model)
    assert_clean_rejection(model, tmp_path, "computed at run time" if dims_at_run_time else "must be a scalar")


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(dims=[2, 3], dtype="int8", out_shape=[3, 2]), "differ from the output shape"),
        (dict(dims=[2, 3], dtype="int8", value_shape=[2]), "must be a scalar"),
        (dict(dims=[2, 3], dtype="int8", value_shape=[1]), "must be a scalar"),
        (dict(dims=[2, 3], dtype="int16"), "type int16 is not supported"),
    ],
)
def test_fill_rejections(tmp_path, kwargs, match):
    assert_clean_rejection(fill_model(**kwargs), tmp_path, match)
