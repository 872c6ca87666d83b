"""EMBEDDING_LOOKUP against the TFLM oracle: float32 and int8 tables (constant or computed at run
time), the hybrid int8 -> float32 case, rank-3 tables, constant ids; out-of-range run-time ids are
clamped (TFLM fails the inference), checked under ASan/UBSan; rejections."""

import numpy as np
import pytest
from harness import assert_matches_oracle
from model_builder import ModelBuilder
from movement_models import assert_clean_rejection, run_ours


def add_lookup(
    b,
    prefix,
    n_ids,
    table_shape,
    table_dtype="float32",
    out_dtype=None,
    const_table=True,
    ids=None,
    seed=0,
    scale=0.02,
    zero_point=0,
    out_shape=None,
):
    """One EMBEDDING_LOOKUP; returns (model inputs, model outputs)."""
    rng = np.random.default_rng(seed)
    quant = dict(scale=scale, zero_point=zero_point) if table_dtype == "int8" else {}
    inputs = []
    if ids is None:
        i = b.activation(f"{prefix}ids", [n_ids], "int32")
        inputs.append(i)
    else:
        i = b.constant(f"{prefix}ids", np.array(ids, np.int32))
    if const_table:
        data = (
            rng.uniform(-2, 2, table_shape).astype(np.float32)
            if table_dtype == "float32"
            else rng.integers(-128, 128, table_shape).astype(np.int8)
        )
        t = b.constant(f"{prefix}table", data, **quant)
    else:
        t = b.activation(f"{prefix}table", table_shape, table_dtype, **quant)
        inputs.append(t)
    out_dtype = out_dtype or table_dtype
    y = b.activation(
        f"{prefix}y", out_shape or [n_ids] + list(table_shape[1:]), out_dtype, **(quant if out_dtype == "int8" else {})
    )
    b.op("EMBEDDING_LOOKUP", [i, t], [y])
    return inputs, [y]


def lookup_model(cases) -> bytes:
    b = ModelBuilder()
    inputs, outputs = [], []
    for n, kwargs in enumerate(cases):
        i, o = add_lookup(b, f"case{n}_", seed=n, **kwargs)
        inputs += i
        outputs += o
    return b.finish(inputs, outputs)


CASES = [
    dict(n_ids=3, table_shape=[5, 4]),
    dict(n_ids=1, table_shape=[7, 6], table_dtype="int8"),
    dict(n_ids=4, table_shape=[6, 2, 3], table_dtype="int8"),
    dict(n_ids=5, table_shape=[9, 5], table_dtype="int8", out_dtype="float32", scale=0.037),
    dict(n_ids=2, table_shape=[4, 1], table_dtype="int8", out_dtype="float32", scale=0.5),
    dict(n_ids=3, table_shape=[4, 3], const_table=False),
]


def id_inputs(cases, seed):
    rng = np.random.default_rng(100 + seed)
    arrays = []
    for c in cases:
        arrays.append(rng.integers(0, c["table_shape"][0], c["n_ids"]).astype(np.int32))
        if not c.get("const_table", True):
            arrays.append(rng.uniform(-1, 1, c["table_shape"]).astype(np.float32))
    return arrays


def test_embedding_lookup_matches_tflm_under_sanitizers(tmp_path):
    inputs = [id_inputs(CASES, s) for s in range(3)]
    lib = assert_matches_oracle(lookup_model(CASES), tmp_path, inputs=inputs, sanitize=True)
    kinds = {op["kind"] for op in lib.metadata["operators"]}
    assert kinds == {"EMBEDDING_LOOKUP"}, kinds


def test_embedding_lookup_constant_ids_match_tflm(tmp_path):
    cases = [
        dict(n_ids=4, table_shape=[5, 3], ids=[4, 0, 0, 2], const_table=False),
        dict(n_ids=2, table_shape=[3, 2], table_dtype="int8", ids=[2, 1], const_table=False),
    ]
    assert_matches_oracle(lookup_model(cases), tmp_path, n_inputs=2)


def test_embedding_lookup_clamps_out_of_range_ids(tmp_path):
    """TFLM fails the inference; the generated code clamps and never reads outside (ASan)."""
    model = lookup_model([dict(n_ids=5, table_shape=[4, 3], const_table=False)])
    ids = np.array([-7, 0, 3, 4, 1 << 30], np.int32)
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    _, outs = run_ours(model, tmp_path, inputs=[[ids, table]], sanitize=True)
    np.testing.assert_array_equal(outs[0][0], table[np.clip(ids, 0, 3)])


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(n_ids=2, table_shape=[4, 3], ids=[0, 4], const_table=False), "id [4] is out of range [0, 4)"),
        (dict(n_ids=2, table_shape=[4, 3], out_shape=[2, 4]), "does not match the expected [2, 3]"),
        (dict(n_ids=2, table_shape=[4, 3], table_dtype="int8", out_dtype="float32", zero_point=3), "zero point 0"),
        (dict(n_ids=2, table_shape=[4, 3], out_dtype="int8"), "does not go with a float32 table"),
    ],
)
def test_embedding_lookup_rejections(tmp_path, kwargs, match):
    assert_clean_rejection(lookup_model([kwargs]), tmp_path, match)


def test_embedding_lookup_of_constants_folds_to_the_rows():
    """Constant ids into a constant table: computed at compile time (hybrid dequantization too)."""
    from microcompiler.frontend.tflite import parse_tflite
    from microcompiler.ops import kernel_for

    b = ModelBuilder()
    x = b.activation("x", [2], "float32")
    table = np.arange(-6, 6, dtype=np.int8).reshape(4, 3)
    ids = b.constant("ids", np.array([3, 0, 3], np.int32))
    t = b.constant("table", table, scale=0.25, zero_point=0)
    y = b.activation("y", [3, 3], "float32")
    b.op("EMBEDDING_LOOKUP", [ids, t], [y])
    graph = parse_tflite(b.finish([x], [y]))
    op = graph.operators[0]
    (rows,) = kernel_for(op).fold(op, graph)
    np.testing.assert_array_equal(rows, table[[3, 0, 3]].astype(np.float32) * 0.25)
