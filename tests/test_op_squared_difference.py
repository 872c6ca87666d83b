"""SQUARED_DIFFERENCE against the TFLM oracle: float32, int32, int8, int16, broadcasting."""

import pytest
from elementwise_models import assert_one_line_cli_error, assert_rejected, elementwise_model, side_by_side_model
from harness import assert_matches_oracle

SHAPES = [([2, 3, 5], [2, 3, 5]), ([1, 4, 4, 8], [8]), ([1], [2, 3, 5]), ([2, 1, 3, 1, 4], [1, 2, 1, 5, 1])]
QUANTS = {
    "int8": [
        [(0.05, -3), (0.1, 2), (0.08, 5)],
        [(0.02, 10), (0.3, -7), (0.5, -128)],
        [(0.5, -128), (0.5, 127), (0.01, -100)],
        [(0.001, 3), (0.9, -4), (2.0, 1)],
    ],
    "int16": [
        [(0.0004, 0), (0.0007, 0), (0.0009, 0)],
        [(0.01, 0), (0.003, 0), (0.5, 0)],
        [(0.0001, 0), (0.0001, 0), (0.00001, 0)],
    ],
}


@pytest.mark.parametrize("dtype", ["float32", "int32", "int8", "int16"])
def test_squared_difference_matches_tflm(tmp_path, dtype):
    quants = QUANTS.get(dtype, [None])
    ops = [
        ("SQUARED_DIFFERENCE", dtype, list(shapes), dtype, quants[k % len(quants)], None)
        for k, shapes in enumerate(SHAPES)
    ]
    assert_matches_oracle(side_by_side_model(ops), tmp_path, n_inputs=3)


def test_sanitized(tmp_path):
    ops = [
        ("SQUARED_DIFFERENCE", "int8", [[2, 3, 1], [4]], "int8", QUANTS["int8"][1], None),
        ("SQUARED_DIFFERENCE", "int16", [[3, 1], [1, 5]], "int16", QUANTS["int16"][1], None),
        ("SQUARED_DIFFERENCE", "int32", [[6], [6]], "int32", None, None),
    ]
    assert_matches_oracle(side_by_side_model(ops), tmp_path, sanitize=True)


MALFORMED = [
    (
        lambda: elementwise_model("SQUARED_DIFFERENCE", "int16", [[4], [4]], quant=[(0.01, 1), (0.01, 0), (0.01, 0)]),
        "zero point 0",
    ),
    (lambda: elementwise_model("SQUARED_DIFFERENCE", "int64", [[4], [4]]), "not supported"),
    (lambda: elementwise_model("SQUARED_DIFFERENCE", "float32", [[3], [4]], out_shape=[4]), "do not broadcast"),
]


@pytest.mark.parametrize("model,message", MALFORMED)
def test_malformed_is_rejected(tmp_path, model, message):
    assert_rejected(model(), tmp_path, message)


def test_malformed_gives_one_line_cli_error(tmp_path):
    assert_one_line_cli_error(MALFORMED[2][0](), tmp_path, "operator 0", MALFORMED[2][1])
