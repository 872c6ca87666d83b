"""LEAKY_RELU against the TFLM oracle: int8 (every input value), int16 and float32, with alphas
below 0, between 0 and 1, above 1 and 0."""

import pytest
from activation_cases import assert_cli_rejects, case_inputs, leaky_relu_options, side_by_side_model, unary_model
from harness import assert_matches_oracle

INT8_CASES = [  # (shape, input (scale, zero point), output (scale, zero point), alpha)
    ([256], (0.05, 10), (0.04, -20), 0.2),
    ([1, 16, 16], (0.1, -128), (0.1, -128), 0.01),  # same quantization
    ([16, 17], (0.02, 127), (0.03, 5), -0.5),  # negative alpha
    ([2, 128], (0.05, 0), (0.2, -128), 1.7),  # alpha above 1
    ([256], (0.05, -3), (0.01, 0), 0.0),  # alpha 0: a requantizing RELU
    ([1], (0.03, -5), (0.03, -5), 0.3),
    ([3, 5], (0.07, 3), (0.01, 60), 0.125),  # scale ratio exactly 7/8 in float32, not in double
]
INT16_CASES = [
    ([3, 70], (0.001, 0), (0.0015, 0), -0.3),
    ([1, 1], (0.0002, 0), (0.0001, 0), 0.1),
    ([2, 3, 11], (0.0005, 10), (0.0004, -7), 2.5),  # TFLM allows int16 zero points here
    ([4, 64], (0.5, 0), (1.0, 10), -0.5),  # negative alpha on ties: TFLM negates after scaling
]
FLOAT_CASES = [([1], 0.1), ([2, 3, 5], -0.7), ([1, 7], 3.0), ([4, 4], 0.0)]


def _cases(dtype, cases):
    return [(shape, dtype, in_q, out_q, leaky_relu_options(alpha)) for shape, in_q, out_q, alpha in cases]


def test_int8_leaky_relu_matches_tflm_on_every_input_value(tmp_path):
    cases = _cases("int8", INT8_CASES)
    assert_matches_oracle(side_by_side_model("LEAKY_RELU", cases), tmp_path, sanitize=True, inputs=case_inputs(cases))


def test_int16_leaky_relu_matches_tflm(tmp_path):
    cases = _cases("int16", INT16_CASES)
    assert_matches_oracle(side_by_side_model("LEAKY_RELU", cases), tmp_path, inputs=case_inputs(cases, n_sets=4))


def test_float_leaky_relu_matches_tflm(tmp_path):
    cases = [(shape, "float32", (None, None), (None, None), leaky_relu_options(a)) for shape, a in FLOAT_CASES]
    assert_matches_oracle(side_by_side_model("LEAKY_RELU", cases), tmp_path, inputs=case_inputs(cases, n_sets=4))


@pytest.mark.parametrize(
    "model,fragments",
    [
        (
            unary_model("LEAKY_RELU", [4], "int8", (0.01, 0), (0.01, 0), leaky_relu_options(float("nan"))),
            ["alpha must be a finite number"],
        ),
        (
            unary_model("LEAKY_RELU", [4], "int32", (None, None), (None, None), leaky_relu_options(0.2)),
            ["input type int32 is not supported"],
        ),
        (unary_model("LEAKY_RELU", [4], "int8", (1e6, 0), (1e-6, 0), leaky_relu_options(0.2)), ["beyond 2^30"]),
    ],
    ids=["nan-alpha", "int32", "scale-ratio"],
)
def test_leaky_relu_rejects_what_it_cannot_run(tmp_path, model, fragments):
    assert_cli_rejects(model, tmp_path, "operator 0 (LEAKY_RELU)", *fragments)
