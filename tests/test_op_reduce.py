"""REDUCE_MAX, REDUCE_MIN (int8, float32) and SUM (int8, int16, float32) against the TFLM oracle:
single, several, negative, duplicate and all axes, keep_dims, 1-element reductions, requantized
sums; malformed axes and quantization rejected with one line."""

import numpy as np
import pytest
from model_builder import ModelBuilder, reducer_options
from model_merge import assert_cases_match_oracle
from spatial_cli import assert_rejects

IN_Q = {"int8": (0.05, -3), "int16": (0.0004, 0)}
SUM_OUT_Q = {"int8": (0.4, 5), "int16": (0.01, 0)}


def reduce_model(kind, dtype, shape, axes, keep_dims, in_q=None, out_q=None, out_shape=None, axis_const=True):
    b = ModelBuilder()
    qi = qo = {}
    if dtype != "float32":
        in_q = in_q or IN_Q[dtype]
        out_q = out_q or (SUM_OUT_Q[dtype] if kind == "SUM" else in_q)
        qi, qo = dict(scale=in_q[0], zero_point=in_q[1]), dict(scale=out_q[0], zero_point=out_q[1])
    x = b.activation("x", shape, dtype, **qi)
    ax = (
        b.constant("axis", np.array(axes, dtype=np.int32)) if axis_const else b.activation("axis", [len(axes)], "int32")
    )
    if out_shape is None:
        red = {a % len(shape) for a in axes}
        out_shape = (
            [1 if d in red else n for d, n in enumerate(shape)]
            if keep_dims
            else [n for d, n in enumerate(shape) if d not in red]
        )
    y = b.activation("y", out_shape, dtype, **qo)
    b.op(kind, [x, ax], [y], reducer_options(keep_dims))
    return b.finish([x] + ([] if axis_const else [ax]), [y])


SHAPES_AXES = [  # (shape, axes, keep_dims)
    ([2, 5, 6, 3], [1, 2], True),
    ([2, 5, 6, 3], [-1], False),
    ([2, 4, 3, 5], [0, 2], False),  # non-adjacent
    ([2, 4, 3, 5], [3, 3, -1], True),  # duplicates
    ([6, 7], [0, 1], False),  # everything: a scalar
    ([3, 1, 4], [1], False),  # reduces a dimension of extent 1
    ([2, 2, 3, 2, 3], [1, 3], True),  # 5-D
]
EXTREME_ONLY = [([2, 3, 4, 5], [0, 1, 3], False)]  # more than two axes: REDUCE_MAX/MIN only
CASES = [
    (k, d, s, a, kd)
    for k in ("REDUCE_MAX", "REDUCE_MIN")
    for d in ("int8", "float32")
    for s, a, kd in SHAPES_AXES + EXTREME_ONLY
    if d == "int8" or s in ([2, 5, 6, 3], [2, 3, 4, 5])
]
CASES += [
    ("SUM", d, s, a, kd)
    for d in ("int8", "int16", "float32")
    for s, a, kd in SHAPES_AXES
    if d == "int8" or a in ([1, 2], [0, 2], [0, 1])
]


def _id(c):
    return f"{c[0]}-{c[1]}-{'x'.join(map(str, c[2]))}-ax{'_'.join(map(str, c[3]))}-{'keep' if c[4] else 'drop'}"


@pytest.mark.parametrize("kind", ["REDUCE_MAX", "REDUCE_MIN", "SUM"])
def test_reduce_matches_tflm(tmp_path, kind):
    assert_cases_match_oracle({_id(c): reduce_model(*c) for c in CASES if c[0] == kind}, tmp_path)


def test_sum_requantization(tmp_path):
    quantizations = [
        ("int8", (0.05, -128), (0.05, -128)),  # same quantization: still requantized by TFLM's path
        ("int8", (0.02, 127), (1.5, -100)),
        ("int8", (0.5, 0), (0.01, 0)),  # saturates
        ("int16", (0.001, 0), (0.001, 0)),
        ("int16", (0.0004, 7), (0.02, -9)),  # non-zero int16 zero points
    ]
    assert_cases_match_oracle(
        {f"{d}-{qi}-{qo}": reduce_model("SUM", d, [2, 9, 4], [1], False, qi, qo) for d, qi, qo in quantizations},
        tmp_path,
    )


def test_reduce_sanitized(tmp_path):
    assert_cases_match_oracle(
        {
            "sum": reduce_model("SUM", "int8", [2, 4, 3, 5], [1, 3], True),
            "min": reduce_model("REDUCE_MIN", "float32", [2, 4, 3, 5], [0, 1, 3], False),
            "max": reduce_model("REDUCE_MAX", "int8", [3, 4, 5], [0, 2], False),
        },
        tmp_path,
        sanitize=True,
    )


@pytest.mark.parametrize(
    "model,kind,message,cli",
    [
        (lambda: reduce_model("SUM", "int8", [2, 3, 4, 5], [0, 1, 2], False), "SUM", "at most 2", True),
        (
            lambda: reduce_model("REDUCE_MAX", "int8", [2, 3, 4], [1], False, axis_const=False),
            "REDUCE_MAX",
            "not supported yet",
            False,
        ),
        (
            lambda: reduce_model("REDUCE_MIN", "float32", [2, 3, 4], [3], False, out_shape=[2, 3, 4]),
            "REDUCE_MIN",
            "out of range",
            True,
        ),
        (lambda: reduce_model("SUM", "float32", [2, 3, 4], [1], True, out_shape=[2, 4]), "SUM", "output shape", False),
        (
            lambda: reduce_model("REDUCE_MAX", "int8", [2, 3, 4], [1], False, out_q=(0.1, 0)),
            "REDUCE_MAX",
            "quantization must be the same",
            False,
        ),
        (lambda: reduce_model("REDUCE_MAX", "int16", [2, 3, 4], [1], False), "REDUCE_MAX", "int16", False),
    ],
)
def test_reduce_rejects(tmp_path, model, kind, message, cli):
    assert_rejects(model(), tmp_path, kind, message, cli)
