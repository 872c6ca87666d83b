"""L2_NORMALIZATION against the TFLM oracle: int8 (run-time fixed-point inverse square root; every
input value) and float32, including all-zero rows (TFLM's x <= 1 and epsilon cases)."""

import numpy as np
import pytest
from activation_cases import assert_cli_rejects, case_inputs, l2_norm_options, side_by_side_model, unary_model
from harness import assert_matches_oracle

OUT = (1.0 / 128, 0)
INT8_CASES = [  # (shape, input (scale, zero point), output (scale, zero point))
    ([4, 64], (0.05, 10), OUT),
    ([1, 256], (0.1, -128), OUT),  # one long row
    ([1, 9000], (0.1, -128), OUT),  # sums of squares past 2^29 (the all-127 input set)
    ([16, 17], (0.02, 127), OUT),  # odd depth
    ([2, 8, 16], (0.5, 0), (0.05, 3)),  # TFLM ignores the output quantization
    ([1, 2, 2, 64], (1.0, -3), OUT),  # 4D
    ([1], (0.03, -5), OUT),
    ([5, 1], (0.03, 0), OUT),  # one element per row: +-1 (or 0)
    ([3, 5], (0.001, 3), OUT),
]
FLOAT_CASES = [
    ([1], "float32", (None, None), (None, None)),
    ([2, 3, 5], "float32", (None, None), (None, None)),
    ([4, 9], "float32", (None, None), (None, None)),
]


def test_int8_l2_normalization_matches_tflm(tmp_path):
    cases = [(shape, "int8", in_q, out_q, l2_norm_options()) for shape, in_q, out_q in INT8_CASES]
    sets = case_inputs(cases, n_sets=3)
    # rows equal to the zero point (sum 0) or one step from it (sum 1): TFLM's special case
    sets.append([np.full(shape, min(q[1] + k % 2, 127), dtype=np.int8) for k, (shape, _, q, _, _) in enumerate(cases)])
    sets.append([np.full(shape, 127, dtype=np.int8) for shape, *_ in cases])
    assert_matches_oracle(side_by_side_model("L2_NORMALIZATION", cases), tmp_path, sanitize=True, inputs=sets)


def test_float_l2_normalization_matches_tflm(tmp_path):
    cases = [c + (l2_norm_options(),) for c in FLOAT_CASES]
    sets = case_inputs(cases, n_sets=4, float_range=3.0)
    sets.append([np.zeros(shape, dtype=np.float32) for shape, *_ in cases])  # norm below epsilon
    sets.append([np.full(shape, 1e-8, dtype=np.float32) for shape, *_ in cases])
    assert_matches_oracle(side_by_side_model("L2_NORMALIZATION", cases), tmp_path, inputs=sets)


@pytest.mark.parametrize(
    "model,fragment",
    [
        (
            unary_model("L2_NORMALIZATION", [2, 4], "int8", (0.1, 0), OUT, l2_norm_options(1)),
            "fused activation RELU is not supported",
        ),
        (
            unary_model("L2_NORMALIZATION", [1, 2, 2, 2, 4], "float32", options=l2_norm_options()),
            "input must have 1 to 4 dimensions",
        ),
        (
            unary_model("L2_NORMALIZATION", [2, 4], "int16", (0.001, 0), (0.001, 0), l2_norm_options()),
            "is not supported (float32, int8)",
        ),
    ],
    ids=["activation", "5d", "int16"],
)
def test_l2_normalization_rejects_what_tflm_does_not_run(tmp_path, model, fragment):
    assert_cli_rejects(model, tmp_path, "operator 0 (L2_NORMALIZATION)", fragment)
