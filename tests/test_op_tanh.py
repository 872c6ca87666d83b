"""TANH against the TFLM oracle: int8 (gemmlowp fixed point, every input value of several
quantizations), int16 (piecewise table from the sigmoid table; power-of-two and general input
scales) and float32."""

import pytest
from activation_cases import assert_cli_rejects, case_inputs, side_by_side_model, unary_model
from harness import assert_matches_oracle

from microcompiler.ops.tanh import tanh_int16_params

INT8_OUT = (1.0 / 128, 0)
INT8_CASES = [  # (shape, input (scale, zero point), output (scale, zero point))
    ([256], (0.05, 10), INT8_OUT),
    ([1, 16, 16], (0.01, -128), INT8_OUT),  # small inputs: nearly linear
    ([16, 17], (0.1, 127), INT8_OUT),  # odd size, saturating radius reached
    ([2, 128], (0.0625, 0), (0.02, 5)),  # TFLM ignores the output quantization
    ([1], (0.03, -5), INT8_OUT),
    ([3, 5], (0.2, 3), INT8_OUT),
]
INT16_OUT = (1.0 / 32768, 0)
INT16_CASES = [
    ([1, 40], (1.0 / 4096, 0), INT16_OUT),  # power of two, left shift 0: multiplier 3
    ([3, 17], (1.0 / 2048, 0), INT16_OUT),  # power of two, left shift 1: multiplier 6
    ([2, 3, 11], (1.0 / 1024, 0), INT16_OUT),  # power of two, general path
    ([5, 13], (0.001, 0), INT16_OUT),
    ([1], (0.0003, 0), INT16_OUT),
    ([64], (4.0, 0), INT16_OUT),  # multiplier above 2^15 (TFLM only DCHECKs it)
]
FLOAT_CASES = [
    ([1], "float32", (None, None), (None, None)),
    ([2, 3, 5], "float32", (None, None), (None, None)),
    ([1, 9], "float32", (None, None), (None, None)),
]


def test_int16_cases_cover_both_power_of_two_shortcuts():
    assert [tanh_int16_params(c[1][0]) for c in INT16_CASES[:2]] == [(3, 0), (6, 0)]
    assert tanh_int16_params(INT16_CASES[-1][1][0])[0] > 32767


def test_int8_tanh_matches_tflm_on_every_input_value(tmp_path):
    cases = [(shape, "int8", in_q, out_q) for shape, in_q, out_q in INT8_CASES]
    assert_matches_oracle(side_by_side_model("TANH", cases), tmp_path, sanitize=True, inputs=case_inputs(cases))


def test_int16_tanh_matches_tflm(tmp_path):
    cases = [(shape, "int16", in_q, out_q) for shape, in_q, out_q in INT16_CASES]
    assert_matches_oracle(
        side_by_side_model("TANH", cases), tmp_path, sanitize=True, inputs=case_inputs(cases, n_sets=5)
    )


def test_float_tanh_matches_tflm(tmp_path):
    assert_matches_oracle(
        side_by_side_model("TANH", FLOAT_CASES), tmp_path, inputs=case_inputs(FLOAT_CASES, n_sets=4, float_range=5.0)
    )


@pytest.mark.parametrize(
    "model,fragment",
    [
        (unary_model("TANH", [4], "int16", (0.001, 3), INT16_OUT), "int16 tanh needs zero points 0"),
        (unary_model("TANH", [4], "int16", (0.001, 0), (1.0 / 1000, 0)), "int16 output scale must be 2^-15"),
        (unary_model("TANH", [4], "int16", (8.0, 0), INT16_OUT), "would overflow int32"),
        (unary_model("TANH", [4], "int8", (0.01, 0), INT8_OUT, out_dtype="int16"), "differs from input type"),
    ],
    ids=["zero-point", "output-scale", "input-scale", "mixed-types"],
)
def test_tanh_rejects_what_it_cannot_run(tmp_path, model, fragment):
    assert_cli_rejects(model, tmp_path, "operator 0 (TANH)", fragment)
