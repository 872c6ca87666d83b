"""SELECT_V2 against the TFLM oracle: float32, int8, int16 values with a bool condition, each of
the three broadcast."""

import pytest
from elementwise_models import assert_one_line_cli_error, assert_rejected, elementwise_model, side_by_side_model
from harness import assert_matches_oracle

SHAPES = [
    ([2, 3, 5], [2, 3, 5], [2, 3, 5]),
    ([1], [2, 3, 5], [2, 3, 5]),
    ([2, 3, 1], [1, 5], [3, 5]),
    ([4, 1, 1], [1, 3, 1], [1, 1, 2]),
    ([1, 2, 1, 3, 1], [2, 1, 1, 1, 4], [1]),
    ([1], [1], [1]),
]


@pytest.mark.parametrize("dtype", ["float32", "int8", "int16"])
def test_select_v2_matches_tflm(tmp_path, dtype):
    # Values are copied as stored: x and y may carry different quantization parameters.
    quant = [None, (0.05, -3), (0.1, 2), (0.05, -3)] if dtype == "int8" else None
    ops = [("SELECT_V2", ["bool", dtype, dtype], list(shapes), dtype, quant, None) for shapes in SHAPES]
    assert_matches_oracle(side_by_side_model(ops), tmp_path, n_inputs=3, sanitize=dtype == "int8")


MALFORMED = [
    (
        lambda: elementwise_model("SELECT_V2", ["int8", "float32", "float32"], [[4], [4], [4]], quant=[None] * 4),
        "condition must be bool",
    ),
    (lambda: elementwise_model("SELECT_V2", ["bool", "int32", "int32"], [[4], [4], [4]]), "not supported"),
    (
        lambda: elementwise_model("SELECT_V2", ["bool", "float32", "int8"], [[4], [4], [4]], quant=[None] * 4),
        "not supported",
    ),
    (
        lambda: elementwise_model("SELECT_V2", ["bool", "float32", "float32"], [[3], [4], [4]], out_shape=[4]),
        "do not broadcast",
    ),
]


@pytest.mark.parametrize("model,message", MALFORMED)
def test_malformed_is_rejected(tmp_path, model, message):
    assert_rejected(model(), tmp_path, message)


def test_malformed_gives_one_line_cli_error(tmp_path):
    assert_one_line_cli_error(MALFORMED[3][0](), tmp_path, "operator 0", MALFORMED[3][1])
