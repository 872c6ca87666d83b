"""DEPTH_TO_SPACE and SPACE_TO_DEPTH against the TFLM oracle: int8 and float32, block sizes 1..3,
batches; malformed block sizes and shapes rejected with one line."""

import pytest
from model_builder import ModelBuilder, _opts
from model_merge import assert_cases_match_oracle
from spatial_cli import assert_rejects

Q = {"int8": dict(scale=0.05, zero_point=-3), "float32": {}}
OPTIONS = {"DEPTH_TO_SPACE": "DepthToSpaceOptions", "SPACE_TO_DEPTH": "SpaceToDepthOptions"}


def depth_space_model(kind, dtype, shape, block, out_shape=None):
    b = ModelBuilder()
    x = b.activation("x", shape, dtype, **Q[dtype])
    n, h, w, c = shape
    if out_shape is None:
        out_shape = (
            [n, h * block, w * block, c // (block * block)]
            if kind == "DEPTH_TO_SPACE"
            else [n, h // block, w // block, c * block * block]
        )
    y = b.activation("y", out_shape, dtype, **Q[dtype])
    b.op(kind, [x], [y], _opts(OPTIONS[kind], blockSize=block))
    return b.finish([x], [y])


CASES = [
    ("DEPTH_TO_SPACE", "int8", [1, 2, 3, 8], 2),
    ("DEPTH_TO_SPACE", "int8", [2, 3, 2, 9], 3),
    ("DEPTH_TO_SPACE", "int8", [1, 1, 1, 4], 2),
    ("DEPTH_TO_SPACE", "float32", [1, 3, 3, 12], 2),
    ("DEPTH_TO_SPACE", "float32", [2, 2, 2, 5], 1),
    ("SPACE_TO_DEPTH", "int8", [1, 4, 6, 2], 2),
    ("SPACE_TO_DEPTH", "int8", [2, 6, 3, 1], 3),
    ("SPACE_TO_DEPTH", "int8", [1, 2, 2, 1], 2),
    ("SPACE_TO_DEPTH", "float32", [1, 4, 4, 3], 2),
    ("SPACE_TO_DEPTH", "float32", [3, 5, 5, 2], 5),
]


def test_depth_space_matches_tflm(tmp_path):
    assert_cases_match_oracle(
        {f"{c[0]}-{c[1]}-{'x'.join(map(str, c[2]))}-b{c[3]}": depth_space_model(*c) for c in CASES}, tmp_path
    )


def test_depth_space_sanitized(tmp_path):
    assert_cases_match_oracle(
        {
            "d2s": depth_space_model("DEPTH_TO_SPACE", "int8", [2, 3, 2, 8], 2),
            "s2d": depth_space_model("SPACE_TO_DEPTH", "float32", [1, 6, 4, 3], 2),
        },
        tmp_path,
        sanitize=True,
    )


@pytest.mark.parametrize(
    "model,kind,message,cli",
    [
        (
            lambda: depth_space_model("DEPTH_TO_SPACE", "int8", [1, 2, 2, 6], 2, out_shape=[1, 4, 4, 1]),
            "DEPTH_TO_SPACE",
            "multiple",
            True,
        ),
        (
            lambda: depth_space_model("DEPTH_TO_SPACE", "int8", [1, 2, 2, 4], 0, out_shape=[1, 2, 2, 4]),
            "DEPTH_TO_SPACE",
            "at least 1",
            False,
        ),
        (
            lambda: depth_space_model("SPACE_TO_DEPTH", "float32", [1, 5, 4, 1], 2, out_shape=[1, 2, 2, 4]),
            "SPACE_TO_DEPTH",
            "multiples",
            True,
        ),
        (
            lambda: depth_space_model("SPACE_TO_DEPTH", "float32", [1, 4, 4, 1], 2, out_shape=[1, 2, 2, 2]),
            "SPACE_TO_DEPTH",
            "output shape",
            False,
        ),
    ],
)
def test_depth_space_rejects(tmp_path, model, kind, message, cli):
    assert_rejects(model(), tmp_path, kind, message, cli)
