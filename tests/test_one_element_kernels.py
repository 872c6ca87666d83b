"""Kernels of one-element tensors (loop counters, flags, scalars of the control-flow examples): no
loop that runs once and no loop variable (issue 11), and still TFLM's results."""

import re

from elementwise_models import activation_options, side_by_side_model
from harness import assert_matches_oracle

I8 = (0.05, -3)
OPS = [  # (kind, dtypes, shapes, out dtype, quantization of the inputs then the output, options)
    ("ADD", "int32", [[1], [1]], "int32", None, activation_options("ADD")),
    ("ADD", "int8", [[1, 1], [1]], "int8", [I8, (0.02, 7), (0.07, -10)], activation_options("ADD")),
    ("MUL", "float32", [[1], [1]], "float32", None, activation_options("MUL")),
    ("LESS", "int32", [[1], [1]], "bool", None, None),
    ("MAXIMUM", "float32", [[1], [1]], "float32", None, None),
    ("ABS", "float32", [[1]], "float32", None, None),
    ("ABS", "int8", [[1]], "int8", [I8, (0.03, 5)], None),
    ("LOGISTIC", "int8", [[1, 1]], "int8", [I8, (1 / 256, -128)], None),
    ("DEQUANTIZE", "int8", [[1]], "float32", [I8, None], None),
]


def test_one_element_kernels_have_no_loop_and_match_tflm(tmp_path):
    library = assert_matches_oracle(side_by_side_model(OPS), tmp_path, n_inputs=4, sanitize=True)
    ops = library.files["src/model_ops.c"]
    assert "for (" not in ops, ops
    assert not re.search(r"\bint i\w*[;,]", ops), ops
    assert "[0]" in ops
