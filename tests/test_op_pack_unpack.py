"""PACK and UNPACK against the TFLM oracle: every type TFLM runs, every axis (negative too), 1 to 4
values; malformed options via the CLI."""
import pytest

from harness import assert_matches_oracle
from movement_models import assert_clean_rejection, pack_options, single_op, unpack_options


def pack_model(shape, n, axis, dtype="int8", out_shape=None):
    rank = len(shape) + 1
    if out_shape is None:
        out_shape = list(shape)
        out_shape.insert(axis % rank, n)
    return single_op("PACK", shape, dtype, [], [out_shape], pack_options(n, axis),
                     extra_inputs=[(shape, dtype)] * (n - 1))


def unpack_model(shape, axis, dtype="int8", n=None, out=None):
    if out is None:
        out = list(shape)
        n = n if n is not None else out[axis]
        del out[axis]
    return single_op("UNPACK", shape, dtype, [], [out] * n, unpack_options(n, axis))


@pytest.mark.parametrize("shape,n,axis", [([1], 1, 0), ([5], 3, 1), ([2, 3], 2, 0), ([2, 3], 3, 1),
                                          ([2, 3, 2], 4, -1), ([2, 3, 2], 2, -3)])
def test_pack_int8_matches_tflm(tmp_path, shape, n, axis):
    assert_matches_oracle(pack_model(shape, n, axis), tmp_path, n_inputs=2)


@pytest.mark.parametrize("dtype", ["int16", "int32", "int64", "float32"])
def test_pack_types_match_tflm(tmp_path, dtype):
    assert_matches_oracle(pack_model([3, 2], 2, 1, dtype), tmp_path, n_inputs=2, sanitize=dtype == "int64")


@pytest.mark.parametrize("shape,axis", [([3], 0), ([2, 3], 1), ([2, 3, 4], -2), ([4, 1, 3], 0)])
def test_unpack_int8_matches_tflm(tmp_path, shape, axis):
    assert_matches_oracle(unpack_model(shape, axis), tmp_path, n_inputs=2)


@pytest.mark.parametrize("dtype", ["int16", "int32", "float32"])
def test_unpack_types_match_tflm(tmp_path, dtype):
    assert_matches_oracle(unpack_model([2, 3, 2], 1, dtype), tmp_path, n_inputs=2, sanitize=dtype == "float32")


@pytest.mark.parametrize("model,match", [
    (lambda: pack_model([2, 3], 2, 3, out_shape=[2, 3, 2]), "out of range"),
    (lambda: pack_model([2, 3], 2, 0, out_shape=[2, 3, 2]), "does not match"),
    (lambda: unpack_model([2, 3], 2, n=3, out=[2, 3]), "out of range"),
    (lambda: unpack_model([2, 3], 1, n=2), "needs 3 outputs"),
])
def test_pack_unpack_rejections(tmp_path, model, match):
    assert_clean_rejection(model(), tmp_path, match)


def test_pack_bool_is_refused_like_tflm(tmp_path):
    assert_clean_rejection(pack_model([2], 2, 0, "bool"), tmp_path, "type bool is not supported")
