"""L2_POOL_2D against the TFLM oracle: float32 (TFLM's only type), SAME/VALID padding, strides, filter
sizes (larger than the input under SAME), batches, fused activations; malformed options rejected."""

import pytest
from harness import assert_matches_oracle
from model_builder import ModelBuilder, pool_options
from model_merge import assert_cases_match_oracle
from spatial_cli import assert_rejects

from microcompiler.ops.pooling import pool_geometry


def l2_pool_model(in_shape, filter_hw, stride, padding, activation="NONE", dtype="float32", out_shape=None):
    b = ModelBuilder()
    q = dict(scale=0.05, zero_point=0) if dtype == "int8" else {}
    x = b.activation("x", in_shape, dtype, **q)
    if out_shape is None:
        oh = pool_geometry(in_shape[1], filter_hw[0], stride[0], padding)[0]
        ow = pool_geometry(in_shape[2], filter_hw[1], stride[1], padding)[0]
        out_shape = [in_shape[0], oh, ow, in_shape[3]]
    y = b.activation("y", out_shape, dtype, **q)
    b.op("L2_POOL_2D", [x], [y], pool_options(filter_hw, stride, padding, activation))
    return b.finish([x], [y])


CASES = [
    ([1, 8, 8, 4], (2, 2), (2, 2), "VALID", "NONE"),
    ([2, 7, 6, 3], (3, 3), (2, 2), "SAME", "RELU"),
    ([1, 7, 9, 5], (3, 4), (2, 1), "SAME", "RELU6"),
    ([1, 9, 9, 2], (3, 2), (3, 1), "VALID", "RELU_N1_TO_1"),
    ([1, 3, 4, 6], (5, 7), (1, 1), "SAME", "NONE"),  # filter larger than the input
    ([1, 1, 1, 3], (1, 1), (1, 1), "VALID", "NONE"),  # one pixel
]


def test_l2_pool_matches_tflm(tmp_path):
    assert_cases_match_oracle(
        {
            f"{'x'.join(map(str, c[0]))}-f{c[1][0]}x{c[1][1]}-s{c[2][0]}x{c[2][1]}-{c[3]}-{c[4]}": l2_pool_model(*c)
            for c in CASES
        },
        tmp_path,
    )


def test_l2_pool_sanitized(tmp_path):
    assert_matches_oracle(l2_pool_model([2, 7, 6, 3], (3, 4), (2, 1), "SAME", "RELU"), tmp_path, sanitize=True)


@pytest.mark.parametrize(
    "model,message,cli",
    [
        (lambda: l2_pool_model([1, 4, 4, 1], (2, 2), (2, 2), "VALID", dtype="int8"), "float32", False),
        (lambda: l2_pool_model([1, 3, 3, 2], (4, 4), (1, 1), "VALID", out_shape=[1, 1, 1, 2]), "does not fit", False),
        (lambda: l2_pool_model([1, 4, 4, 1], (2, 2), (0, 2), "VALID", out_shape=[1, 2, 2, 1]), "at least 1", True),
        (lambda: l2_pool_model([1, 4, 4, 1], (2, 2), (2, 2), "VALID", out_shape=[1, 2, 3, 1]), "output shape", False),
    ],
)
def test_l2_pool_rejects(tmp_path, model, message, cli):
    assert_rejects(model(), tmp_path, "L2_POOL_2D", message, cli)
