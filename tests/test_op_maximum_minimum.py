"""MAXIMUM and MINIMUM against the TFLM oracle: float32, int8, int16, int32, int64, broadcasting,
NaN operands."""

import numpy as np
import pytest
from elementwise_models import assert_one_line_cli_error, assert_rejected, elementwise_model, side_by_side_model
from harness import assert_matches_oracle

SHAPES = [([2, 3, 5], [2, 3, 5]), ([1, 4, 4, 8], [8]), ([1], [2, 3, 5]), ([2, 1, 3, 1, 4], [1, 2, 1, 5, 1]), ([1], [1])]


@pytest.mark.parametrize("dtype", ["float32", "int8", "int16", "int32", "int64"])
def test_maximum_minimum_match_tflm(tmp_path, dtype):
    # Quantized inputs with different parameters: TFLM compares the stored values regardless.
    quant = [(0.05, -3), (0.2, 7), (0.1, 0)] if dtype == "int8" else None
    ops = [(kind, dtype, list(shapes), dtype, quant, None) for kind in ("MAXIMUM", "MINIMUM") for shapes in SHAPES]
    assert_matches_oracle(side_by_side_model(ops), tmp_path, n_inputs=3)


def test_nan_operands_as_tflm(tmp_path):
    ops = [(kind, "float32", [[4], [4]], "float32", None, None) for kind in ("MAXIMUM", "MINIMUM")]
    x = np.array([np.nan, 1.0, np.nan, -np.inf], np.float32)
    y = np.array([1.0, np.nan, np.nan, 3.0], np.float32)
    assert_matches_oracle(side_by_side_model(ops), tmp_path, inputs=[[x, y, x, y]])


def test_unquantized_int8_is_accepted(tmp_path):
    # TFLM's MAXIMUM needs no quantization parameters (it copies stored values).
    assert_matches_oracle(elementwise_model("MAXIMUM", "int8", [[3, 4], [4]], quant=[None, None, None]), tmp_path)


def test_sanitized(tmp_path):
    ops = [
        ("MINIMUM", "int16", [[2, 3, 1], [4]], "int16", None, None),
        ("MAXIMUM", "int8", [[3, 1], [1, 5]], "int8", None, None),
    ]
    assert_matches_oracle(side_by_side_model(ops), tmp_path, sanitize=True)


MALFORMED = [
    (lambda: elementwise_model("MAXIMUM", "float32", [[2, 3], [4, 3]], out_shape=[4, 3]), "do not broadcast"),
    (lambda: elementwise_model("MINIMUM", "bool", [[4], [4]]), "not supported"),
    (lambda: elementwise_model("MAXIMUM", ["int8", "int16"], [[4], [4]]), "not supported"),
    (lambda: elementwise_model("MINIMUM", "float32", [[4], [4]], out_dtype="int32"), "output type"),
]


@pytest.mark.parametrize("model,message", MALFORMED)
def test_malformed_is_rejected(tmp_path, model, message):
    assert_rejected(model(), tmp_path, message)


def test_malformed_gives_one_line_cli_error(tmp_path):
    assert_one_line_cli_error(MALFORMED[0][0](), tmp_path, "operator 0", MALFORMED[0][1])
