"""LOGICAL_AND and LOGICAL_OR against the TFLM oracle: bool tensors, broadcasting, in place."""

import numpy as np
import pytest
from elementwise_models import assert_one_line_cli_error, assert_rejected, elementwise_model, side_by_side_model
from harness import assert_matches_oracle

SHAPES = [([2, 3, 5], [2, 3, 5]), ([1, 4, 4, 8], [8]), ([1], [2, 3, 5]), ([2, 1, 3, 1, 4], [1, 2, 1, 5, 1])]


def test_logical_match_tflm(tmp_path):
    ops = [
        (kind, "bool", list(shapes), "bool", None, None) for kind in ("LOGICAL_AND", "LOGICAL_OR") for shapes in SHAPES
    ]
    lib = assert_matches_oracle(side_by_side_model(ops), tmp_path, n_inputs=3, sanitize=True)
    assert {o["dtype"] for o in lib.metadata["outputs"]} == {"bool"}


def test_logical_and_of_comparisons_matches_tflm(tmp_path):
    """A typical use: a range test (x > lo) && (x < hi) on float32 compiled as three operators."""
    from model_builder import ModelBuilder

    b = ModelBuilder()
    x = b.activation("x", [2, 8], "float32")
    lo = b.constant("lo", np.array([-0.25], np.float32))
    hi = b.constant("hi", np.array([0.5], np.float32))
    above = b.activation("above", [2, 8], "bool")
    below = b.activation("below", [2, 8], "bool")
    inside = b.activation("inside", [2, 8], "bool")
    b.op("GREATER", [x, lo], [above])
    b.op("LESS", [x, hi], [below])
    b.op("LOGICAL_AND", [above, below], [inside])
    assert_matches_oracle(b.finish([x], [inside]), tmp_path)


MALFORMED = [
    (lambda: elementwise_model("LOGICAL_OR", "int8", [[4], [4]], out_dtype="bool", quant=[None] * 3), "not supported"),
    (lambda: elementwise_model("LOGICAL_AND", "bool", [[2, 3], [4, 3]], out_shape=[4, 3]), "do not broadcast"),
    (lambda: elementwise_model("LOGICAL_AND", "bool", [[4], [4]], out_dtype="int8", quant=[None] * 3), "output type"),
]


@pytest.mark.parametrize("model,message", MALFORMED)
def test_malformed_is_rejected(tmp_path, model, message):
    assert_rejected(model(), tmp_path, message)


def test_malformed_gives_one_line_cli_error(tmp_path):
    assert_one_line_cli_error(MALFORMED[1][0](), tmp_path, "operator 0", MALFORMED[1][1])
