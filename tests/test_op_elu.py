"""ELU against the TFLM oracle: int8 (a compile-time table, every input value of several
quantizations checked) and float32."""

import re

from activation_cases import assert_cli_rejects, case_inputs, side_by_side_model, unary_model
from harness import assert_matches_oracle

INT8_CASES = [  # (shape, input (scale, zero point), output (scale, zero point))
    ([256], (0.05, 10), (0.04, -20)),
    ([1, 16, 16], (0.1, -128), (0.1, -128)),  # same quantization
    ([16, 17], (0.02, 127), (0.008, 127)),  # odd size; only negative inputs
    ([2, 128], (0.5, 0), (0.002, -128)),  # saturates both ways
    ([1], (0.03, -5), (0.03, -5)),
    ([3, 5], (0.07, 3), (0.01, 60)),
]
FLOAT_CASES = [
    ([1], "float32", (None, None), (None, None)),
    ([2, 3, 5], "float32", (None, None), (None, None)),
    ([1, 7], "float32", (None, None), (None, None)),
]


def test_int8_elu_matches_tflm_on_every_input_value(tmp_path):
    cases = [(shape, "int8", in_q, out_q) for shape, in_q, out_q in INT8_CASES]
    lib = assert_matches_oracle(side_by_side_model("ELU", cases), tmp_path, sanitize=True, inputs=case_inputs(cases))
    ops_c = next(text for path, text in lib.files.items() if path.endswith("_ops.c"))
    assert re.search(r"static const int8_t \w+_lut\[256\]", ops_c)  # the table is a flash constant
    assert "expf" not in ops_c  # and nothing of the float math is left at run time


def test_float_elu_matches_tflm(tmp_path):
    assert_matches_oracle(
        side_by_side_model("ELU", FLOAT_CASES), tmp_path, inputs=case_inputs(FLOAT_CASES, n_sets=4, float_range=6.0)
    )


def test_elu_rejects_what_tflm_does_not_run(tmp_path):
    assert_cli_rejects(
        unary_model("ELU", [4], "int16", (0.01, 0), (0.01, 0)),
        tmp_path / "int16",
        "operator 0 (ELU)",
        "input type int16 is not supported",
    )
    b_model = unary_model("ELU", [4], "int8", (0.01, 0), (0.01, 0), out_dtype="float32")
    assert_cli_rejects(b_model, tmp_path / "mixed", "output type float32 differs from input type int8")
