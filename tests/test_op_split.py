"""SPLIT and SPLIT_V against the TFLM oracle: int8, int16, int32, float32; several outputs, negative
axes, split along inner and outer dimensions, SPLIT_V with a -1 size; malformed options via the CLI."""
import numpy as np
import pytest

from harness import assert_matches_oracle
from movement_models import assert_clean_rejection, single_op, split_options, split_v_options


def split_model(shape, axis, n, dtype="int8", out_shapes=None):
    if out_shapes is None:
        part = list(shape)
        part[axis] //= n
        out_shapes = [part] * n
    return single_op("SPLIT", shape, dtype, [np.array(axis, np.int32)], out_shapes, split_options(n), const_first=True)


def split_v_model(shape, sizes, axis, out_shapes, dtype="int8"):
    return single_op("SPLIT_V", shape, dtype, [np.array(sizes, np.int32), np.array([axis], np.int32)], out_shapes,
                     split_v_options(len(sizes)))


@pytest.mark.parametrize("shape,axis,n", [
    ([6], 0, 3),
    ([4, 6], 1, 2),
    ([4, 6], -2, 4),  # outer dimension: contiguous parts
    ([2, 3, 4], 2, 1),
    ([1, 2, 6, 3], -2, 3),
])
def test_split_int8_matches_tflm(tmp_path, shape, axis, n):
    assert_matches_oracle(split_model(shape, axis, n), tmp_path, n_inputs=2)


@pytest.mark.parametrize("dtype", ["int16", "int32", "float32"])
def test_split_types_match_tflm(tmp_path, dtype):
    assert_matches_oracle(split_model([3, 4, 2], 1, 2, dtype), tmp_path, n_inputs=2, sanitize=dtype == "int32")


@pytest.mark.parametrize("shape,sizes,axis,out_shapes,dtype", [
    ([5, 7], [2, -1, 1], 1, [[5, 2], [5, 4], [5, 1]], "int8"),
    ([5, 7], [1, 4], 0, [[1, 7], [4, 7]], "int16"),
    ([2, 3, 5], [-1, 2], -1, [[2, 3, 3], [2, 3, 2]], "int32"),
    ([6, 2], [6], 0, [[6, 2]], "float32"),
])
def test_split_v_matches_tflm(tmp_path, shape, sizes, axis, out_shapes, dtype):
    assert_matches_oracle(split_v_model(shape, sizes, axis, out_shapes, dtype), tmp_path, n_inputs=2)


@pytest.mark.parametrize("model,match", [
    (lambda: split_model([4, 6], 1, 4, out_shapes=[[4, 1]] * 4), "does not divide"),
    (lambda: split_model([4, 6], 2, 2, out_shapes=[[4, 3]] * 2), "out of range"),
    (lambda: split_model([4, 6], 1, 2, out_shapes=[[4, 3], [4, 2]]), "does not match"),
    (lambda: split_v_model([4, 6], [2, 2], 1, [[4, 2], [4, 2]]), "do not add up"),
    (lambda: split_v_model([4, 6], [-1, -1], 1, [[4, 3], [4, 3]]), "one -1"),
    (lambda: split_v_model([4, 6], [7, -1], 1, [[4, 7], [4, 1]]), "more than the extent"),
])
def test_split_rejections(tmp_path, model, match):
    assert_clean_rejection(model(), tmp_path, match)
