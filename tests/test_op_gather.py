"""GATHER and GATHER_ND against the TFLM oracle: int8 and float32, constant and run-time indices,
axis (negative too), batch_dims, slices of one element and of many; out-of-range run-time indices
are clamped (TFLM fails the inference), checked under ASan against numpy; malformed options."""
import numpy as np
import pytest

from harness import assert_matches_oracle
from model_builder import ModelBuilder
from movement_models import assert_clean_rejection, gather_options, q, run_ours


def gather_model(shape, idx_shape, axis=0, batch_dims=0, dtype="int8", indices=None, out_shape=None,
                 kind="GATHER", index_dtype="int32"):
    """GATHER (or GATHER_ND) of activation x; constant ``indices`` or a run-time index input."""
    b = ModelBuilder()
    x = b.activation("x", shape, dtype, **q(dtype))
    if indices is not None:
        i = b.constant("indices", np.array(indices, index_dtype).reshape(idx_shape))
        inputs = [x]
    else:
        i = b.activation("indices", idx_shape, index_dtype)
        inputs = [x, i]
    if out_shape is None:
        if kind == "GATHER":
            a = axis % len(shape)
            out_shape = list(shape[:a]) + list(idx_shape[batch_dims:]) + list(shape[a + 1:])
        else:
            out_shape = list(idx_shape[:-1]) + list(shape[idx_shape[-1]:])
    y = b.activation("y", out_shape, dtype, **q(dtype))
    b.op(kind, [x, i], [y], gather_options(axis, batch_dims) if kind == "GATHER" else None)
    return b.finish(inputs, [y])


def index_inputs(shape, idx_shape, extents, dtype, seed, index_dtype=np.int32):
    rng = np.random.default_rng(seed)
    x = (rng.uniform(-1, 1, shape).astype(np.float32) if dtype == "float32"
         else rng.integers(-128, 128, shape).astype(np.int8))
    return [x, rng.integers(0, extents, idx_shape).astype(index_dtype)]


@pytest.mark.parametrize("shape,idx,axis,batch_dims", [
    ([5], [3, 0, 4, 4], 0, 0),
    ([4, 3], [[2, 0], [1, 3]], 0, 0),
    ([4, 3], [2, 2, 0, 1], -1, 0),  # slices of one element
    ([2, 5, 3], [[4, 0], [1, 1]], 1, 1),  # batch_dims
    ([2, 3, 4, 2], [[0, 2, 1], [1, 1, 0]], 2, -1),
])
@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_gather_constant_indices_match_tflm(tmp_path, shape, idx, axis, batch_dims, dtype):
    idx_shape = list(np.shape(idx))
    assert_matches_oracle(gather_model(shape, idx_shape, axis, batch_dims, dtype, indices=idx), tmp_path, n_inputs=2)


@pytest.mark.parametrize("shape,idx_shape,axis,batch_dims,dtype", [
    ([6, 4], [3], 0, 0, "int8"),
    ([3, 7], [2, 2], 1, 0, "float32"),
    ([2, 3, 4], [2, 5], 2, 1, "int8"),
])
def test_gather_run_time_indices_match_tflm(tmp_path, shape, idx_shape, axis, batch_dims, dtype):
    extent = shape[axis % len(shape)]
    inputs = [index_inputs(shape, idx_shape, extent, dtype, s) for s in range(3)]
    assert_matches_oracle(gather_model(shape, idx_shape, axis, batch_dims, dtype), tmp_path, inputs=inputs,
                          sanitize=dtype == "int8")


def test_gather_clamps_out_of_range_indices(tmp_path):
    """TFLM fails the inference; the generated code clamps and never reads outside (ASan)."""
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([-5, 0, 3, 4, 1000, -1], np.int32)
    _, outs = run_ours(gather_model([4, 3], [6], 0, 0, "float32"), tmp_path, inputs=[[x, idx]], sanitize=True)
    np.testing.assert_array_equal(outs[0][0], x[np.clip(idx, 0, 3)])


@pytest.mark.parametrize("shape,idx,dtype", [
    ([4, 3], [[1], [3], [0]], "int8"),
    ([4, 3], [[1, 2], [3, 0]], "float32"),  # full depth: one element per tuple
    ([2, 3, 4], [[[1, 2]], [[0, 0]]], "int8"),
    ([5], [[4]], "float32"),
])
def test_gather_nd_constant_indices_match_tflm(tmp_path, shape, idx, dtype):
    model = gather_model(shape, list(np.shape(idx)), dtype=dtype, indices=idx, kind="GATHER_ND")
    assert_matches_oracle(model, tmp_path, n_inputs=2)


@pytest.mark.parametrize("shape,idx_shape,dtype", [([3, 4, 2], [5, 2], "int8"), ([6, 3], [2, 2, 1], "float32")])
def test_gather_nd_run_time_indices_match_tflm(tmp_path, shape, idx_shape, dtype):
    extents = shape[:idx_shape[-1]]
    inputs = [index_inputs(shape, idx_shape, extents, dtype, s) for s in range(3)]
    assert_matches_oracle(gather_model(shape, idx_shape, dtype=dtype, kind="GATHER_ND"), tmp_path, inputs=inputs,
                          sanitize=dtype == "int8")


def test_gather_nd_clamps_out_of_range_indices(tmp_path):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    idx = np.array([[1, 7], [-3, 2], [1, 1]], np.int32)
    _, outs = run_ours(gather_model([2, 3, 4], [3, 2], dtype="float32", kind="GATHER_ND"), tmp_path,
                       inputs=[[x, idx]], sanitize=True)
    np.testing.assert_array_equal(outs[0][0], x[np.clip(idx[:, 0], 0, 1), np.clip(idx[:, 1], 0, 2)])


@pytest.mark.parametrize("kwargs,match", [
    (dict(shape=[4, 3], idx_shape=[2], axis=2, out_shape=[4, 3]), "out of range"),
    (dict(shape=[4, 3], idx_shape=[2], indices=[0, 4]), "out of range [0, 4)"),
    (dict(shape=[4, 3], idx_shape=[2], out_shape=[2, 4]), "does not match"),
    (dict(shape=[2, 3], idx_shape=[3, 1], axis=1, batch_dims=1, out_shape=[2, 1]), "differ"),
    (dict(shape=[4, 3], idx_shape=[2], dtype="int16"), "type int16 is not supported"),
    (dict(shape=[4, 3], idx_shape=[2, 3], kind="GATHER_ND", out_shape=[2]), "exceeds the params rank"),
    (dict(shape=[4, 3], idx_shape=[1, 2], kind="GATHER_ND", indices=[[3, 3]]), "out of range"),
])
def test_gather_rejections(tmp_path, kwargs, match):
    assert_clean_rejection(gather_model(**kwargs), tmp_path, match)
