"""TRANSPOSE against the TFLM oracle: int8, int16, float32; 1-D..5-D (TFLM's limit), permutations
that keep the innermost dimension (memcpy rows) and that move it; malformed permutations."""

import numpy as np
import pytest
from harness import assert_matches_oracle
from movement_models import assert_clean_rejection, side_by_side, single_op


def transpose_case(shape, perm, dtype="int8", out_shape=None):
    out_shape = out_shape or [shape[p] for p in perm]
    return ("TRANSPOSE", shape, dtype, [np.array(perm, np.int32)], [out_shape], None)


def transpose_model(*args, **kwargs):
    return single_op(*transpose_case(*args, **kwargs))


CASES = [  # shape, permutation
    ([7], [0]),
    ([3, 5], [1, 0]),
    ([2, 3, 4], [1, 0, 2]),  # keeps the innermost dimension
    ([2, 3, 4], [2, 0, 1]),
    ([1, 4, 1, 3], [3, 1, 2, 0]),
    ([2, 1, 3, 2, 3], [4, 3, 2, 1, 0]),
]


def test_transpose_int8_matches_tflm(tmp_path):
    """Every case of CASES side by side in one model (output k is case k)."""
    assert_matches_oracle(side_by_side([transpose_case(*case) for case in CASES]), tmp_path, n_inputs=2)


def test_transpose_types_match_tflm(tmp_path):
    model = side_by_side([transpose_case([2, 3, 5], [2, 1, 0], dtype) for dtype in ("int16", "float32")])
    assert_matches_oracle(model, tmp_path, n_inputs=2, sanitize=True)


@pytest.mark.parametrize(
    "perm,out_shape,match",
    [
        ([0, 0], [3, 3], "not a permutation"),
        ([1, 2], [5, 3], "not a permutation"),
        ([1, 0], [3, 5], "does not match"),
    ],
)
def test_transpose_rejections(tmp_path, perm, out_shape, match):
    assert_clean_rejection(transpose_model([3, 5], perm, out_shape=out_shape), tmp_path, match)


def test_transpose_of_int32_is_refused_like_tflm(tmp_path):
    assert_clean_rejection(transpose_model([3, 5], [1, 0], "int32"), tmp_path, "type int32 is not supported")
