"""CUMSUM against the TFLM oracle: float32 and int8, every axis (negative too), exclusive and reverse,
requantization, long axes whose int32 sum wraps as TFLM's does; malformed axes rejected with one line."""

import numpy as np
import pytest
from model_builder import ModelBuilder, _opts
from model_merge import assert_cases_match_oracle
from spatial_cli import assert_rejects


def cumsum_model(
    dtype,
    shape,
    axis,
    exclusive=False,
    reverse=False,
    in_q=(0.05, -3),
    out_q=(0.2, 4),
    out_shape=None,
    axis_values=None,
    axis_const=True,
):
    b = ModelBuilder()
    qi = dict(scale=in_q[0], zero_point=in_q[1]) if dtype == "int8" else {}
    qo = dict(scale=out_q[0], zero_point=out_q[1]) if dtype == "int8" else {}
    x = b.activation("x", shape, dtype, **qi)
    values = np.array(axis_values if axis_values is not None else [axis], dtype=np.int32)
    ax = b.constant("axis", values) if axis_const else b.activation("axis", [1], "int32")
    y = b.activation("y", out_shape or shape, dtype, **qo)
    b.op("CUMSUM", [x, ax], [y], _opts("CumsumOptions", exclusive=exclusive, reverse=reverse))
    return b.finish([x] + ([] if axis_const else [ax]), [y])


FLAGS = [(False, False), (True, False), (False, True), (True, True)]
CASES = [
    (dtype, shape, axis, ex, rev)
    for dtype, shape, axis in [
        ("int8", [2, 5, 3], 1),
        ("int8", [4, 6], -1),
        ("int8", [7], 0),
        ("float32", [2, 3, 4], 0),
        ("float32", [3, 6], 1),
    ]
    for ex, rev in FLAGS
]


def test_cumsum_matches_tflm(tmp_path):
    cases = {
        f"{c[0]}-{'x'.join(map(str, c[1]))}-ax{c[2]}"
        + ("-excl" if c[3] else "")
        + ("-rev" if c[4] else ""): cumsum_model(*c)
        for c in CASES
    }
    for in_q, out_q in [((0.05, -128), (0.05, -128)), ((0.01, 127), (0.5, -100)), ((0.1, 0), (0.02, 0))]:
        cases[f"requantize-{in_q}-{out_q}"] = cumsum_model("int8", [3, 8], 1, in_q=in_q, out_q=out_q)
    assert_cases_match_oracle(cases, tmp_path)


def test_cumsum_sanitized_and_long_axis_wraps_like_tflm(tmp_path):
    assert_cases_match_oracle(
        {
            "wraps": cumsum_model("int8", [2, 40], 1, in_q=(0.05, -128), out_q=(5.0, 0)),
            "float": cumsum_model("float32", [2, 3, 4], 1, True, True),
        },
        tmp_path,
        sanitize=True,
    )


@pytest.mark.parametrize(
    "model,message,cli",
    [
        (lambda: cumsum_model("int8", [2, 3], 2), "out of range", True),
        (lambda: cumsum_model("int8", [2, 3], 0, axis_values=[0, 1]), "exactly one", False),
        (lambda: cumsum_model("float32", [2, 3], 0, axis_const=False), "not supported yet", False),
        (lambda: cumsum_model("float32", [2, 3], 0, out_shape=[3, 2]), "output shape", False),
    ],
)
def test_cumsum_rejects(tmp_path, model, message, cli):
    assert_rejects(model(), tmp_path, "CUMSUM", message, cli)
