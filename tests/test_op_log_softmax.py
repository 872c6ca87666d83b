"""LOG_SOFTMAX against the TFLM oracle: int8 (fixed-point exp, log and reverse scaling; every input
value) and float32."""

import numpy as np
import pytest
from activation_cases import assert_cli_rejects, case_inputs, side_by_side_model, unary_model
from harness import assert_matches_oracle

OUT = (16.0 / 256, 127)
INT8_CASES = [  # (shape, input (scale, zero point), output (scale, zero point))
    ([4, 64], (0.05, 10), OUT),
    ([1, 256], (0.1, -128), OUT),  # one long row
    ([1, 5000], (0.01, 0), OUT),  # the Q12 sum wraps past 2^31 on a constant row, as in TFLM
    ([16, 17], (0.02, 127), OUT),  # odd depth, small differences
    ([2, 8, 16], (0.5, 0), OUT),  # large scale: most entries fall below the range
    ([64, 4], (1.0, -3), OUT),
    ([1], (0.03, -5), OUT),  # a single element: log(1) = 0
    ([5, 1], (0.03, -5), OUT),
    ([3, 5], (0.001, 3), OUT),  # tiny scale: every row nearly uniform
]
FLOAT_CASES = [
    ([1], "float32", (None, None), (None, None)),
    ([2, 3, 5], "float32", (None, None), (None, None)),
    ([4, 9], "float32", (None, None), (None, None)),
]


def test_int8_log_softmax_matches_tflm(tmp_path):
    cases = [(shape, "int8", in_q, out_q) for shape, in_q, out_q in INT8_CASES]
    sets = case_inputs(cases, n_sets=3)
    sets.append([np.full(shape, 7, dtype=np.int8) for shape, _, _, _ in cases])  # constant rows
    assert_matches_oracle(side_by_side_model("LOG_SOFTMAX", cases), tmp_path, sanitize=True, inputs=sets)


def test_float_log_softmax_matches_tflm(tmp_path):
    assert_matches_oracle(
        side_by_side_model("LOG_SOFTMAX", FLOAT_CASES),
        tmp_path,
        inputs=case_inputs(FLOAT_CASES, n_sets=4, float_range=10.0),
    )


@pytest.mark.parametrize(
    "model,fragment",
    [
        (unary_model("LOG_SOFTMAX", [2, 4], "int8", (0.1, 0), (1.0 / 256, -128)), "scale 16/256 and zero point 127"),
        (unary_model("LOG_SOFTMAX", [2, 4], "int16", (0.001, 0), (0.001, 0)), "is not supported (float32, int8)"),
    ],
    ids=["output-quantization", "int16"],
)
def test_log_softmax_rejects_what_tflm_does_not_run(tmp_path, model, fragment):
    assert_cli_rejects(model, tmp_path, "operator 0 (LOG_SOFTMAX)", fragment)
