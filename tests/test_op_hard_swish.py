"""HARD_SWISH against the TFLM oracle: int8 (16-bit fixed point, every input value of several
quantizations) and float32."""

import pytest
from activation_cases import assert_cli_rejects, case_inputs, side_by_side_model, unary_model
from harness import assert_matches_oracle

from microcompiler.ops.hard_swish import hard_swish_params

INT8_CASES = [  # (shape, input (scale, zero point), output (scale, zero point))
    ([256], (0.015, 10), (0.04, -20)),  # relu-ish exponent 1: one saturating left shift
    ([1, 16, 16], (0.2, -128), (0.1, -100)),  # relu-ish exponent 5: two saturating left shifts
    ([16, 17], (0.008, 127), (0.004, 100)),  # relu-ish exponent 0: no shift
    ([2, 128], (0.0005, 0), (0.0004, -1)),  # relu-ish exponent -4, output exponent -7
    ([256], (1.5, 3), (0.02, -128)),  # huge input range (MobileNetV3-like), saturates
    ([256], (0.0001, -7), (0.5, 0)),  # output exponent below -16: int16 rounding quirk
    ([256], (0.06330074369907379, -50), (0.11892548203468323, -90)),  # double, not float, ratio
    ([1], (0.03, -5), (0.03, -5)),
    ([3, 5], (0.07, 3), (0.01, 60)),
]
FLOAT_CASES = [
    ([1], "float32", (None, None), (None, None)),
    ([2, 3, 5], "float32", (None, None), (None, None)),
    ([1, 9], "float32", (None, None), (None, None)),
]


def test_cases_cover_every_shift_path():
    exponents = {min(max(hard_swish_params(i[0], o[0])["reluish_exponent"], -1), 2) for _, i, o in INT8_CASES}
    assert exponents == {-1, 0, 1, 2}  # right shift, none, the last-bit shift only, both left shifts
    assert min(hard_swish_params(i[0], o[0])["output_exponent"] for _, i, o in INT8_CASES) <= -16


def test_int8_hard_swish_matches_tflm_on_every_input_value(tmp_path):
    cases = [(shape, "int8", in_q, out_q) for shape, in_q, out_q in INT8_CASES]
    assert_matches_oracle(side_by_side_model("HARD_SWISH", cases), tmp_path, sanitize=True, inputs=case_inputs(cases))


def test_float_hard_swish_matches_tflm(tmp_path):
    assert_matches_oracle(
        side_by_side_model("HARD_SWISH", FLOAT_CASES),
        tmp_path,
        inputs=case_inputs(FLOAT_CASES, n_sets=4, float_range=5.0),
    )


@pytest.mark.parametrize(
    "model,fragments",
    [
        (unary_model("HARD_SWISH", [4], "int16", (0.01, 0), (0.01, 0)), ["input type int16 is not supported"]),
        (unary_model("HARD_SWISH", [4], "int8", (1.0, 0), (0.001, 0)), ["more than 128 times the output scale"]),
    ],
    ids=["int16", "output-scale-too-small"],
)
def test_hard_swish_rejects_what_tflm_does_not_run(tmp_path, model, fragments):
    assert_cli_rejects(model, tmp_path, "operator 0 (HARD_SWISH)", *fragments)
