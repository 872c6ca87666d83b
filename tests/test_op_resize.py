"""RESIZE_BILINEAR (int8, float32) and RESIZE_NEAREST_NEIGHBOR (int8, int16, float32) against the TFLM
oracle: up- and down-scaling, non-integer ratios, 1-pixel inputs and outputs, align_corners and
half_pixel_centers; malformed sizes and options rejected with one line."""

import numpy as np
import pytest
from harness import assert_matches_oracle
from model_builder import ModelBuilder, _opts
from model_merge import assert_cases_match_oracle
from spatial_cli import assert_rejects

Q = {"int8": dict(scale=0.05, zero_point=-3), "int16": dict(scale=0.001, zero_point=0), "float32": {}}
OPTIONS = {"RESIZE_BILINEAR": "ResizeBilinearOptions", "RESIZE_NEAREST_NEIGHBOR": "ResizeNearestNeighborOptions"}


def resize_model(kind, dtype, shape, size, align=False, half=False, out_shape=None, size_const=True):
    b = ModelBuilder()
    x = b.activation("x", shape, dtype, **Q[dtype])
    s = b.constant("size", np.array(size, dtype=np.int32)) if size_const else b.activation("size", [2], "int32")
    y = b.activation("y", out_shape or [shape[0], *size, shape[3]], dtype, **Q[dtype])
    b.op(kind, [x, s], [y], _opts(OPTIONS[kind], alignCorners=align, halfPixelCenters=half))
    return b.finish([x] + ([] if size_const else [s]), [y])


GEOMETRIES = [  # (input shape, output size)
    ([1, 2, 3, 3], [4, 6]),  # 2x
    ([2, 5, 4, 2], [7, 9]),  # non-integer ratios
    ([1, 7, 9, 1], [3, 4]),  # down-scaling
    ([1, 1, 1, 4], [3, 2]),  # one input pixel
    ([1, 4, 5, 2], [1, 1]),  # one output pixel
]
MODES = [(False, False), (True, False), (False, True)]
CASES = [
    (kind, dtype, shape, size, align, half)
    for kind, dtypes in (
        ("RESIZE_BILINEAR", ("int8", "float32")),
        ("RESIZE_NEAREST_NEIGHBOR", ("int8", "int16", "float32")),
    )
    for dtype in dtypes
    for shape, size in GEOMETRIES
    for align, half in MODES
    if dtype == "int8" or (shape, size) in (GEOMETRIES[1], GEOMETRIES[2])
]


def _id(c):
    return (
        f"{c[0]}-{c[1]}-{'x'.join(map(str, c[2]))}-to{c[3][0]}x{c[3][1]}"
        + ("-align" if c[4] else "")
        + ("-half" if c[5] else "")
    )


@pytest.mark.parametrize("kind", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
def test_resize_matches_tflm(tmp_path, kind):
    assert_cases_match_oracle({_id(c): resize_model(*c) for c in CASES if c[0] == kind}, tmp_path)


def test_resize_bilinear_int8_extremes(tmp_path):
    """Inputs at the ends of the int8 range: the fixed-point sum and its rounding at their limits."""
    inputs = [[np.full([1, 3, 4, 2], v, dtype=np.int8)] for v in (-128, 127)]
    inputs.append([np.where(np.arange(24).reshape(1, 3, 4, 2) % 2, -128, 127).astype(np.int8)])
    assert_matches_oracle(
        resize_model("RESIZE_BILINEAR", "int8", [1, 3, 4, 2], [5, 7], half=True), tmp_path, inputs=inputs
    )


def test_resize_sanitized(tmp_path):
    assert_cases_match_oracle(
        {
            "bilinear": resize_model("RESIZE_BILINEAR", "int8", [2, 5, 4, 2], [7, 9], half=True),
            "bilinear-float": resize_model("RESIZE_BILINEAR", "float32", [1, 3, 4, 2], [5, 2], align=True),
            "nearest": resize_model("RESIZE_NEAREST_NEIGHBOR", "int16", [2, 5, 4, 2], [3, 9], align=True),
        },
        tmp_path,
        sanitize=True,
    )


@pytest.mark.parametrize(
    "model,kind,message,cli",
    [
        (
            lambda: resize_model("RESIZE_BILINEAR", "int8", [1, 2, 2, 1], [4, 4], True, True),
            "RESIZE_BILINEAR",
            "cannot both",
            True,
        ),
        (lambda: resize_model("RESIZE_BILINEAR", "int16", [1, 2, 2, 1], [4, 4]), "RESIZE_BILINEAR", "int16", False),
        (
            lambda: resize_model("RESIZE_NEAREST_NEIGHBOR", "int8", [1, 2, 2, 1], [4, 4], out_shape=[1, 4, 3, 1]),
            "RESIZE_NEAREST_NEIGHBOR",
            "output shape",
            True,
        ),
        (
            lambda: resize_model("RESIZE_NEAREST_NEIGHBOR", "float32", [1, 2, 2, 1], [4, 4], size_const=False),
            "RESIZE_NEAREST_NEIGHBOR",
            "not supported yet",
            False,
        ),
        (
            lambda: resize_model("RESIZE_NEAREST_NEIGHBOR", "float32", [1, 2, 2, 1], [0, 4], out_shape=[1, 1, 4, 1]),
            "RESIZE_NEAREST_NEIGHBOR",
            "positive",
            False,
        ),
    ],
)
def test_resize_rejects(tmp_path, model, kind, message, cli):
    assert_rejects(model(), tmp_path, kind, message, cli)
