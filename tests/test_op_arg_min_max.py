"""ARG_MAX and ARG_MIN against the TFLM oracle: float32 and int8 inputs, every axis (negative too),
ties (the first index wins), an axis of extent 1; malformed axes, int64 axes and outputs (TFLM
refuses both) rejected with one line."""

import numpy as np
import pytest
from model_builder import ModelBuilder, _opts
from model_merge import assert_cases_match_oracle
from spatial_cli import assert_rejects

OPTIONS = {"ARG_MAX": "ArgMaxOptions", "ARG_MIN": "ArgMinOptions"}
OUT_TYPES = {"int32": 2, "int64": 4}


def arg_model(kind, dtype, shape, axis, axis_dtype=np.int32, out_dtype="int32", out_shape=None, axis_const=True):
    b = ModelBuilder()
    q = dict(scale=0.1, zero_point=3) if dtype == "int8" else {}
    x = b.activation("x", shape, dtype, **q)
    ax = b.constant("axis", np.array([axis], dtype=axis_dtype)) if axis_const else b.activation("axis", [1], "int32")
    if out_shape is None:
        out_shape = [n for d, n in enumerate(shape) if d != axis % len(shape)]
    y = b.activation("y", out_shape, out_dtype)
    b.op(kind, [x, ax], [y], _opts(OPTIONS[kind], outputType=OUT_TYPES[out_dtype]))
    return b.finish([x] + ([] if axis_const else [ax]), [y])


CASES = [
    (kind, dtype, shape, axis, adt)
    for kind in ("ARG_MAX", "ARG_MIN")
    for dtype, shape, axis, adt in [
        ("int8", [2, 5, 3], 1, np.int32),
        ("int8", [2, 5, 3], -1, np.int32),
        ("int8", [4, 6], 0, np.int32),
        ("int8", [7], 0, np.int32),
        ("int8", [3, 1, 4], 1, np.int32),  # axis of extent 1
        ("float32", [2, 3, 4, 5], 2, np.int32),
        ("float32", [1, 1, 10], -1, np.int32),
    ]
]


def test_arg_min_max_matches_tflm(tmp_path):
    assert_cases_match_oracle(
        {f"{c[0]}-{c[1]}-{'x'.join(map(str, c[2]))}-ax{c[3]}": arg_model(*c) for c in CASES}, tmp_path
    )


def test_arg_min_max_ties_take_the_first(tmp_path):
    rng = np.random.default_rng(1)
    inputs = [[rng.integers(-2, 2, size=[4, 9]).astype(np.int8) for _ in range(2)] for _ in range(3)]
    assert_cases_match_oracle(
        {k: arg_model(k, "int8", [4, 9], 1) for k in ("ARG_MAX", "ARG_MIN")}, tmp_path, inputs=inputs, sanitize=True
    )


@pytest.mark.parametrize(
    "model,kind,message,cli",
    [
        (lambda: arg_model("ARG_MAX", "int8", [2, 3], 2, out_shape=[2, 3]), "ARG_MAX", "out of range", True),
        (lambda: arg_model("ARG_MIN", "int8", [2, 3], 1, out_dtype="int64"), "ARG_MIN", "int64", False),
        (lambda: arg_model("ARG_MAX", "int8", [2, 3], 1, axis_dtype=np.int64), "ARG_MAX", "int64", False),
        (lambda: arg_model("ARG_MAX", "float32", [2, 3], 1, axis_const=False), "ARG_MAX", "not supported yet", False),
        (lambda: arg_model("ARG_MIN", "float32", [2, 3], 1, out_shape=[3]), "ARG_MIN", "output shape", False),
    ],
)
def test_arg_min_max_rejects(tmp_path, model, kind, message, cli):
    assert_rejects(model(), tmp_path, kind, message, cli)
