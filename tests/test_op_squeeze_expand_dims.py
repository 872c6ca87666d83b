"""SQUEEZE and EXPAND_DIMS (aliases of RESHAPE) against the TFLM oracle: as a model output (a real
copy between two caller buffers) for each type, squeeze_dims given, negative and omitted, EXPAND_DIMS
axes at both ends and negative; inside a model (no code); malformed options through the CLI."""

import numpy as np
import pytest
from harness import assert_matches_oracle
from model_builder import ModelBuilder
from movement_models import assert_clean_rejection, q, side_by_side, single_op, squeeze_options

SQUEEZE_CASES = [  # shape, squeeze_dims, output shape, type
    ([1, 5, 1], [], [5], "int8"),
    ([1, 5, 1], [0], [5, 1], "int16"),
    ([1, 5, 1], [-1], [1, 5], "float32"),
    ([2, 1, 3, 1], [1, 3], [2, 3], "int32"),
    ([1], [0], [], "bool"),
]
EXPAND_DIMS_CASES = [  # shape, axis, output shape, type
    ([5], 0, [1, 5], "int8"),
    ([5, 2], -1, [5, 2, 1], "int16"),
    ([5, 2], 1, [5, 1, 2], "float32"),
    ([3], -2, [1, 3], "int8"),
]


def test_squeeze_and_expand_dims_as_model_outputs_match_tflm(tmp_path):
    """Model input straight into a model output: each one a real copy, side by side in one model."""
    cases = [("SQUEEZE", shape, dtype, [], [out], squeeze_options(dims)) for shape, dims, out, dtype in SQUEEZE_CASES]
    cases += [
        ("EXPAND_DIMS", shape, dtype, [np.array(axis, np.int32)], [out], None)
        for shape, axis, out, dtype in EXPAND_DIMS_CASES
    ]
    library = assert_matches_oracle(side_by_side(cases), tmp_path, n_inputs=2, sanitize=True)
    assert [o["kind"] for o in library.metadata["operators"]] == [c[0] for c in cases]


def test_squeeze_and_expand_dims_inside_a_model_cost_no_code(tmp_path):
    """x -> EXPAND_DIMS -> REVERSE_V2 -> SQUEEZE -> y: only the REVERSE_V2 runs."""
    b = ModelBuilder()
    x = b.activation("x", [4, 3], "int8", **q("int8"))
    e = b.activation("e", [4, 1, 3], "int8", **q("int8"))
    b.op("EXPAND_DIMS", [x, b.constant("axis", np.array([1], np.int32))], [e])
    r = b.activation("r", [4, 1, 3], "int8", **q("int8"))
    b.op("REVERSE_V2", [e, b.constant("axes", np.array([0], np.int32))], [r])
    y = b.activation("y", [4, 3], "int8", **q("int8"))
    b.op("SQUEEZE", [r], [y], squeeze_options([1]))
    library = assert_matches_oracle(b.finish([x], [y]), tmp_path, n_inputs=2)
    assert [o["kind"] for o in library.metadata["operators"]] == ["REVERSE_V2"]


@pytest.mark.parametrize(
    "model,match",
    [
        (lambda: single_op("SQUEEZE", [2, 5, 1], "int8", [], [[10]], squeeze_options([0])), "extent other than 1"),
        (lambda: single_op("SQUEEZE", [1, 5, 1], "int8", [], [[5, 1]], squeeze_options([3])), "out of range"),
        (lambda: single_op("EXPAND_DIMS", [5, 2], "int8", [np.array(4, np.int32)], [[5, 2, 1]]), "out of range"),
        (lambda: single_op("EXPAND_DIMS", [5, 2], "int8", [np.array(1, np.int32)], [[1, 5, 2]]), "does not match"),
    ],
)
def test_squeeze_expand_dims_rejections(tmp_path, model, match):
    assert_clean_rejection(model(), tmp_path, match)
