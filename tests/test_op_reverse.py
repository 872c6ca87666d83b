"""REVERSE_V2 against the TFLM oracle: every type TFLM runs, one or several axes, negative axes,
innermost and outer axes; malformed axes via the CLI."""

import numpy as np
import pytest
from harness import assert_matches_oracle
from movement_models import assert_clean_rejection, side_by_side, single_op


def reverse_case(shape, axes, dtype="int8"):
    return ("REVERSE_V2", shape, dtype, [np.array(axes, np.int32)], [shape], None)


def reverse_model(*args, **kwargs):
    return single_op(*reverse_case(*args, **kwargs))


CASES = [  # shape, axes
    ([1], [0]),
    ([7], [0]),
    ([4, 5], [0]),  # rows stay contiguous: memcpy
    ([4, 5], [-1]),
    ([2, 3, 4], [1, 2]),
    ([2, 1, 3, 4], [1, 2]),
]


def test_reverse_int8_matches_tflm(tmp_path):
    """Every case of CASES side by side in one model (output k is case k)."""
    assert_matches_oracle(side_by_side([reverse_case(*case) for case in CASES]), tmp_path, n_inputs=2)


def test_reverse_types_match_tflm(tmp_path):
    model = side_by_side(
        [reverse_case([3, 4, 2], [1], dtype) for dtype in ("int16", "int32", "int64", "float32", "bool")]
    )
    assert_matches_oracle(model, tmp_path, n_inputs=2)


# axes [0, 2] of a 3-D input: TFLM's Eval refuses axes that are not adjacent ("Non-contiguous `axes` not
# supported"), so no reference confirms an answer (tests/test_tflm_prepare_checks.py runs TFLM on it)
@pytest.mark.parametrize(
    "shape,axes,match",
    [([4, 5], [2], "out of range"), ([4, 5], [0, -2], "twice"), ([2, 3, 4], [0, 2], "not contiguous")],
)
def test_reverse_rejections(tmp_path, shape, axes, match):
    assert_clean_rejection(reverse_model(shape, axes), tmp_path, match)
