"""MEAN against the TFLM oracle: int8, int16, float32; spatial and other axes, keep_dims, requantization."""

import numpy as np
import pytest
from harness import compile_bytes
from model_builder import ModelBuilder, reducer_options
from model_merge import assert_cases_match_oracle

from microcompiler.errors import UnsupportedModelError

IN_Q = {"int8": (0.05, -3), "int16": (0.0004, 0)}
OUT_Q = {"int8": (0.02, 7), "int16": (0.0003, 0)}


def mean_model(dtype, shape, axes, keep_dims, in_q=None, out_q=None, out_shape=None, axis_constant=True):
    b = ModelBuilder()
    qi = qo = {}
    if dtype != "float32":
        in_q, out_q = in_q or IN_Q[dtype], out_q or OUT_Q[dtype]
        qi = dict(scale=in_q[0], zero_point=in_q[1])
        qo = dict(scale=out_q[0], zero_point=out_q[1])
    x = b.activation("x", shape, dtype, **qi)
    axes_arr = np.array(axes, dtype=np.int32)
    ax = b.constant("axis", axes_arr) if axis_constant else b.activation("axis", [len(axes)], "int32")
    if out_shape is None:
        red = {a % len(shape) for a in axes}
        out_shape = (
            [1 if d in red else n for d, n in enumerate(shape)]
            if keep_dims
            else [n for d, n in enumerate(shape) if d not in red]
        )
    y = b.activation("y", out_shape, dtype, **qo)
    b.op("MEAN", [x, ax], [y], reducer_options(keep_dims))
    return b.finish([x] + ([] if axis_constant else [ax]), [y])


SAME = "same"  # output quantization identical to the input's

# (dtype, shape, axes, keep_dims, input quantization, output quantization)
CASES = [
    ("int8", [1, 5, 6, 3], [1, 2], True, None, None),
    ("int8", [1, 5, 6, 3], [1, 2], False, None, SAME),
    ("int8", [2, 4, 4, 8], [2, 1], True, (0.1, -128), (0.01, 127)),  # axes reversed, ratio > 1
    ("int8", [1, 16, 16, 8], [1, 2], False, (0.02, 127), (0.05, -128)),  # 256 elements
    ("int8", [2, 5, 6, 3], [-1], False, None, None),
    ("int8", [2, 4, 3, 5], [0], True, None, SAME),
    ("int8", [2, 4, 3, 5], [1, 3], False, None, None),  # non-adjacent axes
    ("int8", [2, 4, 3, 5], [3, 3, -1], True, None, None),  # duplicates
    ("int8", [3, 4, 5], [0, 2], False, (0.03, 0), (0.03, 4)),
    ("int8", [6, 7], [0, 1], False, None, None),  # everything: a scalar
    ("int8", [2, 2, 3, 2, 3], [1, 3], True, None, None),  # 5D
    ("int16", [1, 5, 6, 3], [1, 2], True, None, None),
    ("int16", [1, 5, 6, 3], [1, 2], False, None, SAME),
    ("int16", [2, 4, 3, 5], [0, -2], False, (0.001, 0), (0.0002, 0)),
    ("int16", [3, 4, 5], [2], True, (0.0004, 12), (0.0005, -30)),  # non-zero int16 zero points
    ("int16", [6, 7], [0, 1], False, None, None),  # everything: a scalar
    ("int16", [2, 2, 3, 2, 3], [4, 0], True, None, SAME),  # 5D, first and last axes
    ("float32", [1, 5, 6, 3], [1, 2], True, None, None),
    ("float32", [1, 5, 6, 3], [2, 1], False, None, None),
    ("float32", [2, 4, 3, 5], [0, 3], True, None, None),
    ("float32", [3, 4, 5], [-1], False, None, None),
    ("float32", [2, 2, 3, 2, 3], [0, 4], False, None, None),
]


def _case_id(c):
    return f"{c[0]}-{'x'.join(map(str, c[1]))}-ax{'_'.join(map(str, c[2]))}-{'keep' if c[3] else 'drop'}" + (
        "-same" if c[5] == SAME else ""
    )


def _case_model(dtype, shape, axes, keep_dims, in_q, out_q):
    if out_q == SAME:
        in_q = out_q = in_q or IN_Q[dtype]
    return mean_model(dtype, shape, axes, keep_dims, in_q, out_q)


@pytest.mark.parametrize("dtype", ["int8", "int16", "float32"])
def test_mean_matches_tflm(tmp_path, dtype):
    """Every case of one type side by side in one model (one build); each output compared."""
    assert_cases_match_oracle({_case_id(c): _case_model(*c) for c in CASES if c[0] == dtype}, tmp_path)


def test_sanitized(tmp_path):
    assert_cases_match_oracle(
        {
            "int8": mean_model("int8", [2, 4, 3, 5], [1, 3], True),
            "float32": mean_model("float32", [1, 5, 6, 3], [1, 2], False),
        },
        tmp_path,
        sanitize=True,
    )


def test_macs_and_requantize_constant(tmp_path):
    lib = compile_bytes(mean_model("int8", [1, 5, 6, 3], [1, 2], True), tmp_path)
    assert lib.metadata["operators"][0]["macs"] == 90
    source = lib.files["src/model_ops.c"]
    assert "sum + 90" in source  # the input zero point (-3) times the 30 summed values, folded


@pytest.mark.parametrize(
    "model,message",
    [
        (lambda: mean_model("int8", [2, 3, 4, 5], [0, 1, 2], False), "at most 2"),
        (lambda: mean_model("int8", [2, 3, 4], [1], False, axis_constant=False), "constant int32"),
        (lambda: mean_model("float32", [2, 3, 4], [3], False, out_shape=[2, 3, 4]), "out of range"),
        (lambda: mean_model("float32", [2, 3, 4], [1], True, out_shape=[2, 4]), "output shape"),
        (lambda: mean_model("int16", [1, 256, 256, 1], [1, 2], True), "overflow"),
    ],
)
def test_rejects_unsupported(tmp_path, model, message):
    with pytest.raises(UnsupportedModelError, match=message) as info:
        compile_bytes(model(), tmp_path)
    assert "operator 0" in str(info.value)
