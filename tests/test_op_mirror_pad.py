"""MIRROR_PAD against the TFLM oracle: int8 and float32, REFLECT and SYMMETRIC, 1-D..5-D, zero and
asymmetric paddings, int32/int64 paddings; malformed paddings rejected with one line."""

import numpy as np
import pytest
from harness import assert_matches_oracle
from model_builder import ModelBuilder, _opts
from model_merge import assert_cases_match_oracle
from spatial_cli import assert_rejects

Q = {"int8": dict(scale=0.05, zero_point=-3), "float32": {}}
MODE = {"REFLECT": 0, "SYMMETRIC": 1}


def mirror_pad_model(shape, dtype, paddings, mode, paddings_dtype=np.int32, out_shape=None, paddings_const=True):
    b = ModelBuilder()
    x = b.activation("x", shape, dtype, **Q[dtype])
    pads = np.array(paddings, dtype=paddings_dtype).reshape(-1, 2)
    p = b.constant("paddings", pads) if paddings_const else b.activation("paddings", list(pads.shape), "int32")
    out_shape = out_shape or [d + a + c for d, (a, c) in zip(shape, paddings)]
    y = b.activation("y", out_shape, dtype, **Q[dtype])
    b.op("MIRROR_PAD", [x, p], [y], _opts("MirrorPadOptions", mode=MODE[mode]))
    return b.finish([x] + ([] if paddings_const else [p]), [y])


CASES = [
    ("int8", [1, 5, 5, 3], [[0, 0], [1, 1], [2, 2], [0, 0]], "REFLECT", np.int32),
    ("int8", [1, 5, 5, 3], [[0, 0], [1, 1], [2, 2], [0, 0]], "SYMMETRIC", np.int32),
    ("int8", [2, 3, 4], [[1, 0], [0, 2], [3, 3]], "REFLECT", np.int64),
    ("int8", [2, 3, 4], [[2, 1], [3, 0], [4, 4]], "SYMMETRIC", np.int32),  # pads as large as the input
    ("int8", [1], [[0, 1]], "SYMMETRIC", np.int32),  # one element
    ("int8", [3, 4], [[0, 0], [0, 0]], "REFLECT", np.int32),  # nothing to pad: a copy
    ("float32", [7], [[3, 2]], "REFLECT", np.int32),
    ("float32", [2, 3, 2, 2, 3], [[0, 1], [1, 1], [0, 0], [1, 0], [2, 2]], "SYMMETRIC", np.int64),
    ("float32", [1, 4, 6, 1], [[0, 0], [3, 3], [5, 5], [0, 0]], "REFLECT", np.int32),
]


def test_mirror_pad_matches_tflm(tmp_path):
    assert_cases_match_oracle(
        {f"{c[0]}-{'x'.join(map(str, c[1]))}-{c[3]}": mirror_pad_model(c[1], c[0], c[2], c[3], c[4]) for c in CASES},
        tmp_path,
    )


def test_mirror_pad_sanitized(tmp_path):
    model = mirror_pad_model([2, 4, 3, 2], "int8", [[1, 1], [2, 3], [2, 0], [0, 1]], "SYMMETRIC")
    assert_matches_oracle(model, tmp_path, sanitize=True)


@pytest.mark.parametrize(
    "model,message,cli",
    [
        (lambda: mirror_pad_model([3, 4], "float32", [[0, 0], [4, 0]], "REFLECT"), "too large", True),
        (
            lambda: mirror_pad_model([3, 4], "float32", [[0, 0], [1, 1]], "REFLECT", out_shape=[3, 5]),
            "output shape",
            False,
        ),
        (
            lambda: mirror_pad_model([3, 4], "float32", [[0, 0], [-1, 1]], "SYMMETRIC", out_shape=[3, 4]),
            "negative",
            False,
        ),
        (
            lambda: mirror_pad_model([3, 4], "int8", [[0, 0], [1, 1]], "REFLECT", paddings_const=False),
            "not supported yet",
            False,
        ),
    ],
)
def test_mirror_pad_rejects(tmp_path, model, message, cli):
    assert_rejects(model(), tmp_path, "MIRROR_PAD", message, cli)
