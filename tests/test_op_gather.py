"""GATHER and GATHER_ND against the TFLM oracle: int8 and float32, constant and run-time indices,
axis (negative too), batch_dims, slices of one element and of many; out-of-range run-time indices
are clamped (TFLM fails the inference), checked under ASan against numpy; malformed options."""

import numpy as np
import pytest
from harness import assert_matches_oracle
from model_builder import ModelBuilder
from movement_models import assert_clean_rejection, gather_options, q, run_ours


def add_gather(
    b,
    shape,
    idx_shape,
    axis=0,
    batch_dims=0,
    dtype="int8",
    indices=None,
    out_shape=None,
    kind="GATHER",
    index_dtype="int32",
    prefix="",
):
    """Add a GATHER (or GATHER_ND) of activation x; constant ``indices`` or a run-time index input.
    Returns (model inputs, model outputs)."""
    x = b.activation(f"{prefix}x", shape, dtype, **q(dtype))
    if indices is not None:
        i = b.constant(f"{prefix}indices", np.array(indices, index_dtype).reshape(idx_shape))
        inputs = [x]
    else:
        i = b.activation(f"{prefix}indices", idx_shape, index_dtype)
        inputs = [x, i]
    if out_shape is None:
        if kind == "GATHER":
            a = axis % len(shape)
            out_shape = list(shape[:a]) + list(idx_shape[batch_dims:]) + list(shape[a + 1 :])
        else:
            out_shape = list(idx_shape[:-1]) + list(shape[idx_shape[-1] :])
    y = b.activation(f"{prefix}y", out_shape, dtype, **q(dtype))
    b.op(kind, [x, i], [y], gather_options(axis, batch_dims) if kind == "GATHER" else None)
    return inputs, [y]


def gather_model(*args, **kwargs):
    return gathers_model([(args, kwargs)])


def gathers_model(cases) -> bytes:
    """Several gathers side by side, each (args, kwargs) of ``add_gather``."""
    b = ModelBuilder()
    inputs, outputs = [], []
    for n, (args, kwargs) in enumerate(cases):
        i, o = add_gather(b, *args, prefix=f"case{n}_", **kwargs)
        inputs += i
        outputs += o
    return b.finish(inputs, outputs)


def index_inputs(shape, idx_shape, extents, dtype, seed, index_dtype=np.int32):
    rng = np.random.default_rng(seed)
    x = (
        rng.uniform(-1, 1, shape).astype(np.float32)
        if dtype == "float32"
        else rng.integers(-128, 128, shape).astype(np.int8)
    )
    return [x, rng.integers(0, extents, idx_shape).astype(index_dtype)]


GATHER_CASES = [  # shape, constant indices, axis, batch_dims
    ([5], [3, 0, 4, 4], 0, 0),
    ([4, 3], [[2, 0], [1, 3]], 0, 0),
    ([4, 3], [2, 2, 0, 1], -1, 0),  # slices of one element
    ([2, 5, 3], [[4, 0], [1, 1]], 1, 1),  # batch_dims
    ([2, 3, 4, 2], [[0, 2, 1], [1, 1, 0]], 2, -1),
]
GATHER_ND_CASES = [  # shape, constant indices, type
    ([4, 3], [[1], [3], [0]], "int8"),
    ([4, 3], [[1, 2], [3, 0]], "float32"),  # full depth: one element per tuple
    ([2, 3, 4], [[[1, 2]], [[0, 0]]], "int8"),
    ([5], [[4]], "float32"),
]


def test_gather_and_gather_nd_constant_indices_match_tflm(tmp_path):
    """Every GATHER case in int8 and float32, then every GATHER_ND case, side by side in one model."""
    cases = [
        ((shape, list(np.shape(idx)), axis, batch_dims, dtype), dict(indices=idx))
        for dtype in ("int8", "float32")
        for shape, idx, axis, batch_dims in GATHER_CASES
    ]
    cases += [
        ((shape, list(np.shape(idx))), dict(dtype=dtype, indices=idx, kind="GATHER_ND"))
        for shape, idx, dtype in GATHER_ND_CASES
    ]
    assert_matches_oracle(gathers_model(cases), tmp_path, n_inputs=2)


def test_gather_and_gather_nd_run_time_indices_match_tflm(tmp_path):
    """Indices computed at run time (valid ones: TFLM fails on others), under ASan/UBSan."""
    cases = [
        ([6, 4], [3], 0, 0, "int8", "GATHER"),
        ([3, 7], [2, 2], 1, 0, "float32", "GATHER"),
        ([2, 3, 4], [2, 5], 2, 1, "int8", "GATHER"),
        ([3, 4, 2], [5, 2], 0, 0, "int8", "GATHER_ND"),
        ([6, 3], [2, 2, 1], 0, 0, "float32", "GATHER_ND"),
    ]
    model = gathers_model(
        [
            ((shape, idx_shape, axis, batch_dims, dtype), dict(kind=kind))
            for shape, idx_shape, axis, batch_dims, dtype, kind in cases
        ]
    )
    inputs = []
    for seed in range(3):
        arrays = []
        for shape, idx_shape, axis, _, dtype, kind in cases:
            extents = shape[axis % len(shape)] if kind == "GATHER" else shape[: idx_shape[-1]]
            arrays += index_inputs(shape, idx_shape, extents, dtype, seed)
        inputs.append(arrays)
    assert_matches_oracle(model, tmp_path, inputs=inputs, sanitize=True)


def test_gather_clamps_out_of_range_indices(tmp_path):
    """TFLM fails the inference; the generated code clamps and never reads outside (ASan)."""
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([-5, 0, 3, 4, 1000, -1], np.int32)
    _, outs = run_ours(gather_model([4, 3], [6], 0, 0, "float32"), tmp_path, inputs=[[x, idx]], sanitize=True)
    np.testing.assert_array_equal(outs[0][0], x[np.clip(idx, 0, 3)])


def test_gather_nd_clamps_out_of_range_indices(tmp_path):
    """Run-time indices outside the params are read as they are and clamped into range (TFLM fails)."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    idx = np.array([[1, 7], [-3, 2], [1, 1], [2**30, 0]], np.int32)
    _, outs = run_ours(
        gather_model([2, 3, 4], [4, 2], dtype="float32", kind="GATHER_ND"),
        tmp_path,
        inputs=[[x, idx]],
        sanitize=True,
    )
    np.testing.assert_array_equal(outs[0][0], x[np.clip(idx[:, 0], 0, 1), np.clip(idx[:, 1], 0, 2)])


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(shape=[4, 3], idx_shape=[2], axis=2, out_shape=[4, 3]), "out of range"),
        (dict(shape=[4, 3], idx_shape=[2], indices=[0, 4]), "out of range [0, 4)"),
        (dict(shape=[4, 3], idx_shape=[2], out_shape=[2, 4]), "does not match"),
        (dict(shape=[2, 3], idx_shape=[3, 1], axis=1, batch_dims=1, out_shape=[2, 1]), "differ"),
        (dict(shape=[4, 3], idx_shape=[2], dtype="int16"), "type int16 is not supported"),
        # TFLM's prepare: "Positions of type 'int64' are not supported by gather" (and by GATHER_ND)
        (dict(shape=[4, 3], idx_shape=[2], index_dtype="int64"), "indices of type int64 are not supported"),
        (dict(shape=[4, 3], idx_shape=[2, 1], kind="GATHER_ND", index_dtype="int64"), "int64 are not supported"),
        (dict(shape=[4, 3], idx_shape=[2, 3], kind="GATHER_ND", out_shape=[2]), "exceeds the params rank"),
        (dict(shape=[4, 3], idx_shape=[1, 2], kind="GATHER_ND", indices=[[3, 3]]), "out of range"),
    ],
)
def test_gather_rejections(tmp_path, kwargs, match):
    assert_clean_rejection(gather_model(**kwargs), tmp_path, match)
