"""SLICE against the TFLM oracle: every type TFLM runs, 1-D..4-D, size -1, int64 begin/size;
malformed begin/size via the CLI."""

import numpy as np
import pytest
from harness import assert_matches_oracle
from movement_models import assert_clean_rejection, side_by_side, single_op


def slice_case(shape, begin, size, out_shape, dtype="int8", index_dtype=np.int32):
    return ("SLICE", shape, dtype, [np.array(begin, index_dtype), np.array(size, index_dtype)], [out_shape], None)


def slice_model(*args, **kwargs):
    return single_op(*slice_case(*args, **kwargs))


CASES = [  # shape, begin, size, output shape
    ([1], [0], [1], [1]),
    ([9], [2], [-1], [7]),
    ([4, 5], [1, 0], [2, 5], [2, 5]),  # whole rows: one memcpy
    ([4, 5], [3, 2], [1, 3], [1, 3]),
    ([3, 4, 5], [1, 1, 1], [2, -1, 3], [2, 3, 3]),
    ([2, 3, 4, 5], [1, 0, 2, 1], [1, 3, 2, 4], [1, 3, 2, 4]),
]


def test_slice_int8_matches_tflm(tmp_path):
    """Every case of CASES side by side in one model (output k is case k)."""
    assert_matches_oracle(side_by_side([slice_case(*case) for case in CASES]), tmp_path, n_inputs=2)


def test_slice_types_match_tflm(tmp_path):
    model = side_by_side(
        [
            slice_case([3, 4, 3], [0, 1, 1], [2, 2, -1], [2, 2, 2], dtype, np.int64)
            for dtype in ("int16", "int32", "float32", "bool")
        ]
    )
    assert_matches_oracle(model, tmp_path, n_inputs=2, sanitize=True)


@pytest.mark.parametrize(
    "begin,size,out_shape,match",
    [
        ([0, 4], [1, 2], [1, 2], "out of range"),
        ([-1, 0], [1, 2], [1, 2], "out of range"),
        ([0, 0], [1, 2], [2, 2], "does not match"),
        ([0], [1], [1, 5], "one value for each"),
    ],
)
def test_slice_rejections(tmp_path, begin, size, out_shape, match):
    assert_clean_rejection(slice_model([4, 5], begin, size, out_shape), tmp_path, match)
