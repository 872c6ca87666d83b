"""SPLIT and SPLIT_V against the TFLM oracle: int8, int16, int32, float32; several outputs, negative
axes, split along inner and outer dimensions, SPLIT_V with a -1 size; malformed options via the CLI."""

import numpy as np
import pytest
from harness import assert_matches_oracle
from movement_models import assert_clean_rejection, side_by_side, single_op, split_options, split_v_options


def split_case(shape, axis, n, dtype="int8", out_shapes=None):
    if out_shapes is None:
        part = list(shape)
        part[axis] //= n
        out_shapes = [part] * n
    return ("SPLIT", shape, dtype, [np.array(axis, np.int32)], out_shapes, split_options(n), dict(const_first=True))


def split_v_case(shape, sizes, axis, out_shapes, dtype="int8"):
    return (
        "SPLIT_V",
        shape,
        dtype,
        [np.array(sizes, np.int32), np.array([axis], np.int32)],
        out_shapes,
        split_v_options(len(sizes)),
    )


def split_model(*args, **kwargs):
    case = split_case(*args, **kwargs)
    return single_op(*case[:6], **case[6])


def split_v_model(*args, **kwargs):
    return single_op(*split_v_case(*args, **kwargs))


SPLIT_CASES = [  # shape, axis, number of parts
    ([6], 0, 3),
    ([4, 6], 1, 2),
    ([4, 6], -2, 4),  # outer dimension: contiguous parts
    ([2, 3, 4], 2, 1),
    ([1, 2, 6, 3], -2, 3),
]


def test_split_int8_matches_tflm(tmp_path):
    """Every case of SPLIT_CASES side by side in one model."""
    assert_matches_oracle(side_by_side([split_case(*case) for case in SPLIT_CASES]), tmp_path, n_inputs=2)


def test_split_types_match_tflm(tmp_path):
    model = side_by_side([split_case([3, 4, 2], 1, 2, dtype) for dtype in ("int16", "int32", "float32")])
    assert_matches_oracle(model, tmp_path, n_inputs=2, sanitize=True)


SPLIT_V_CASES = [  # shape, sizes, axis, output shapes, type
    ([5, 7], [2, -1, 1], 1, [[5, 2], [5, 4], [5, 1]], "int8"),
    ([5, 7], [1, 4], 0, [[1, 7], [4, 7]], "int16"),
    ([2, 3, 5], [-1, 2], -1, [[2, 3, 3], [2, 3, 2]], "int32"),
    ([6, 2], [6], 0, [[6, 2]], "float32"),
]


def test_split_v_matches_tflm(tmp_path):
    assert_matches_oracle(side_by_side([split_v_case(*case) for case in SPLIT_V_CASES]), tmp_path, n_inputs=2)


@pytest.mark.parametrize(
    "model,match",
    [
        (lambda: split_model([4, 6], 1, 4, out_shapes=[[4, 1]] * 4), "does not divide"),
        (lambda: split_model([4, 6], 2, 2, out_shapes=[[4, 3]] * 2), "out of range"),
        (lambda: split_model([4, 6], 1, 2, out_shapes=[[4, 3], [4, 2]]), "does not match"),
        (lambda: split_v_model([4, 6], [2, 2], 1, [[4, 2], [4, 2]]), "do not add up"),
        (lambda: split_v_model([4, 6], [-1, -1], 1, [[4, 3], [4, 3]]), "one -1"),
        (lambda: split_v_model([4, 6], [7, -1], 1, [[4, 7], [4, 1]]), "more than the extent"),
    ],
)
def test_split_rejections(tmp_path, model, match):
    assert_clean_rejection(model(), tmp_path, match)
