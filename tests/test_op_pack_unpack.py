"""PACK and UNPACK against the TFLM oracle: every type TFLM runs, every axis (negative too), 1 to 4
values; malformed options via the CLI."""

import pytest
from harness import assert_matches_oracle
from movement_models import assert_clean_rejection, pack_options, side_by_side, single_op, unpack_options


def pack_case(shape, n, axis, dtype="int8", out_shape=None):
    rank = len(shape) + 1
    if out_shape is None:
        out_shape = list(shape)
        out_shape.insert(axis % rank, n)
    return ("PACK", shape, dtype, [], [out_shape], pack_options(n, axis), dict(extra_inputs=[(shape, dtype)] * (n - 1)))


def unpack_case(shape, axis, dtype="int8", n=None, out=None):
    if out is None:
        out = list(shape)
        n = n if n is not None else out[axis]
        del out[axis]
    return ("UNPACK", shape, dtype, [], [out] * n, unpack_options(n, axis))


def pack_model(*args, **kwargs):
    case = pack_case(*args, **kwargs)
    return single_op(*case[:6], **case[6])


def unpack_model(*args, **kwargs):
    return single_op(*unpack_case(*args, **kwargs))


def test_pack_and_unpack_int8_match_tflm(tmp_path):
    """Every axis (negative too), 1 to 4 values, side by side in one model."""
    cases = [
        pack_case(shape, n, axis)
        for shape, n, axis in [
            ([1], 1, 0),
            ([5], 3, 1),
            ([2, 3], 2, 0),
            ([2, 3], 3, 1),
            ([2, 3, 2], 4, -1),
            ([2, 3, 2], 2, -3),
        ]
    ]
    cases += [unpack_case(shape, axis) for shape, axis in [([3], 0), ([2, 3], 1), ([2, 3, 4], -2), ([4, 1, 3], 0)]]
    assert_matches_oracle(side_by_side(cases), tmp_path, n_inputs=2)


def test_pack_and_unpack_types_match_tflm(tmp_path):
    cases = [pack_case([3, 2], 2, 1, dtype) for dtype in ("int16", "int32", "int64", "float32")]
    cases += [unpack_case([2, 3, 2], 1, dtype) for dtype in ("int16", "int32", "float32")]
    assert_matches_oracle(side_by_side(cases), tmp_path, n_inputs=2, sanitize=True)


@pytest.mark.parametrize(
    "model,match",
    [
        (lambda: pack_model([2, 3], 2, 3, out_shape=[2, 3, 2]), "out of range"),
        (lambda: pack_model([2, 3], 2, 0, out_shape=[2, 3, 2]), "does not match"),
        (lambda: unpack_model([2, 3], 2, n=3, out=[2, 3]), "out of range"),
        (lambda: unpack_model([2, 3], 1, n=2), "needs 3 outputs"),
    ],
)
def test_pack_unpack_rejections(tmp_path, model, match):
    assert_clean_rejection(model(), tmp_path, match)


def test_pack_bool_is_refused_like_tflm(tmp_path):
    assert_clean_rejection(pack_model([2], 2, 0, "bool"), tmp_path, "type bool is not supported")
