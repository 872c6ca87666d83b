"""The binary family in place: each kernel that offers an input's memory to its output
(``inplace_inputs``) computes the same result when the output pointer is that input."""

import numpy as np
import pytest
from elementwise_models import activation_options, elementwise_model
from harness import compile_bytes
from oracle import Oracle
from test_op_add_mul import _run_in_place

from microcompiler.frontend.tflite import parse_tflite
from microcompiler.inputs import random_inputs
from microcompiler.ops import kernel_for

Q = [(0.05, -3), (0.1, 2), (0.08, 5)]
CASES = [
    ("SUB", "int32", [[3, 5], [5]], 0, dict(options=activation_options("SUB", "RELU"))),
    ("DIV", "float32", [[3, 1], [3, 4]], 1, dict(options=activation_options("DIV", "RELU6"))),
    ("MAXIMUM", "int16", [[2, 6], [2, 6]], 1, {}),
    ("SQUARED_DIFFERENCE", "int8", [[4, 6], [6]], 0, dict(quant=Q)),
    ("MINIMUM", "float32", [[5], [2, 5]], 1, {}),
    ("LOGICAL_OR", "bool", [[2, 7], [7]], 0, {}),
    ("ADD_N", "int8", [[3, 4]] * 3, 2, dict(quant=[Q[0]] * 3 + [Q[2]])),
]


@pytest.mark.parametrize("kind,dtype,shapes,alias,extra", CASES, ids=[c[0] for c in CASES])
def test_in_place(tmp_path, kind, dtype, shapes, alias, extra):
    model = elementwise_model(kind, dtype, shapes, **extra)
    library = compile_bytes(model, tmp_path)
    graph = parse_tflite(model)
    assert alias in kernel_for(graph.operators[0]).inplace_inputs(graph.operators[0], graph)
    inputs = random_inputs(library.info.inputs, seed=5)
    want = Oracle(model).run(inputs)[0].reshape(-1)
    got = _run_in_place(library, tmp_path, alias, inputs, sanitize=True)
    if dtype == "float32":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want.astype(got.dtype))
