"""PRELU against the TFLM oracle: int8 and int16 (int8 alpha) and float32, alpha a per-channel
constant broadcast against the input (up to 4D), a full tensor, a scalar, or a model input."""

import numpy as np
import pytest
from activation_cases import assert_cli_rejects, every_int8_value, random_sets
from harness import assert_matches_oracle
from model_builder import ModelBuilder

QUANT = {  # dtype -> (input, alpha, output) (scale, zero point)
    "int8": ((0.05, 10), (0.01, 3), (0.04, -20)),
    "int16": ((0.001, 0), (0.01, -3), (0.002, 0)),
    "float32": ((None, None),) * 3,
}


def prelu_model(cases, alpha_as_input=False, seed=0):
    """One PRELU per case (input shape, alpha shape, dtype[, quantization]) side by side; alpha
    values are constants spanning negative, fractional and above-one slopes."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    inputs, outputs = [], []
    for k, case in enumerate(cases):
        shape, alpha_shape, dtype = case[:3]
        in_q, alpha_q, out_q = case[3] if len(case) > 3 else QUANT[dtype]
        alpha_dtype = "float32" if dtype == "float32" else "int8"
        x = b.activation(f"x{k}", shape, dtype, scale=in_q[0], zero_point=in_q[1])
        if alpha_as_input:
            alpha = b.activation(f"alpha{k}", alpha_shape, alpha_dtype, scale=alpha_q[0], zero_point=alpha_q[1])
            inputs += [x, alpha]
        else:
            values = (
                rng.uniform(-0.5, 1.5, alpha_shape).astype(np.float32)
                if dtype == "float32"
                else rng.integers(-128, 128, alpha_shape).astype(np.int8)
            )
            alpha = b.constant(f"alpha{k}", values, scale=alpha_q[0], zero_point=alpha_q[1])
            inputs.append(x)
        out_shape = np.broadcast_shapes(tuple(shape), tuple(alpha_shape))
        y = b.activation(f"y{k}", out_shape, dtype, scale=out_q[0], zero_point=out_q[1])
        b.op("PRELU", [x, alpha], [y])
        outputs.append(y)
    return b.finish(inputs, outputs)


INT8_CASES = [
    ([1, 4, 4, 16], [16], "int8"),  # per-channel alpha, every input value
    ([1, 16, 16], [1, 1, 16], "int8", ((0.1, -128), (0.004, -128), (0.1, -128))),
    ([2, 5, 3], [5, 1], "int8", ((0.02, 127), (0.02, 0), (0.03, 5))),  # alpha broadcast on the last axis
    ([3, 7], [3, 7], "int8"),  # alpha as large as the input
    ([1], [1], "int8"),
    ([2, 3, 4, 5], [1], "int8"),  # one alpha for all
]
INT16_CASES = [
    ([1, 4, 4, 3], [1, 1, 3], "int16"),
    ([5], [5], "int16"),
    ([2, 3, 7], [7], "int16", ((0.0004, 0), (0.02, 7), (0.0003, -5))),
]
FLOAT_CASES = [
    ([1, 4, 4, 3], [3], "float32"),
    ([2, 5, 3], [5, 1], "float32"),
    ([1], [1], "float32"),
    ([3, 1, 2], [1, 4, 1], "float32"),
]  # both operands broadcast


def _inputs(cases, n_sets=3):
    per_case = []
    for k, case in enumerate(cases):
        shape, dtype = case[0], case[2]
        if dtype == "int8" and int(np.prod(shape)) >= 256:
            per_case.append([s[0] for s in every_int8_value(shape, k)][:n_sets])
        else:
            per_case.append([s[0] for s in random_sets(shape, dtype, n_sets, seed=k, float_range=4.0)])
    return [[values[j] for values in per_case] for j in range(n_sets)]


def test_int8_prelu_matches_tflm(tmp_path):
    assert_matches_oracle(prelu_model(INT8_CASES), tmp_path, sanitize=True, inputs=_inputs(INT8_CASES))


def test_int16_prelu_matches_tflm(tmp_path):
    assert_matches_oracle(prelu_model(INT16_CASES), tmp_path, inputs=_inputs(INT16_CASES))


def test_float_prelu_matches_tflm(tmp_path):
    assert_matches_oracle(prelu_model(FLOAT_CASES), tmp_path, inputs=_inputs(FLOAT_CASES, n_sets=4))


def test_alpha_may_be_a_model_input(tmp_path):
    cases = [([2, 5, 3], [5, 1], "int8"), ([1, 4, 3], [3], "float32")]
    shapes = [([2, 5, 3], "int8"), ([5, 1], "int8"), ([1, 4, 3], "float32"), ([3], "float32")]
    per_input = [
        [s[0] for s in random_sets(shape, dtype, 3, seed=k, float_range=2.0)] for k, (shape, dtype) in enumerate(shapes)
    ]
    assert_matches_oracle(
        prelu_model(cases, alpha_as_input=True), tmp_path, inputs=[list(values) for values in zip(*per_input)]
    )


def _single_prelu(shape, alpha_shape, out_shape, dtype="int8", alpha_dtype="int8"):
    b = ModelBuilder()
    quant = {} if dtype == "float32" else dict(scale=0.1, zero_point=0)
    x = b.activation("x", shape, dtype, **quant)
    alpha = b.constant("alpha", np.ones(alpha_shape, dtype=alpha_dtype), **quant)
    y = b.activation("y", out_shape, dtype, **quant)
    b.op("PRELU", [x, alpha], [y])
    return b.finish([x], [y])


@pytest.mark.parametrize(
    "model,fragment",
    [
        (_single_prelu([2, 3], [4], [2, 3]), "input shape [2, 3] and alpha shape [4] do not broadcast"),
        (
            _single_prelu([1, 2, 3, 4, 5], [5], [1, 2, 3, 4, 5], "float32", "float32"),
            "broadcasting is supported up to 4D",
        ),
        (_single_prelu([2, 3], [3], [3, 3]), "output shape [3, 3] is not the broadcast shape [2, 3]"),
        (_single_prelu([4], [4], [4], "int16", "int16"), "int16 with int8 alpha"),
    ],
    ids=["shapes", "5d", "output-shape", "int16-alpha"],
)
def test_prelu_rejects_what_it_cannot_run(tmp_path, model, fragment):
    assert_cli_rejects(model, tmp_path, "operator 0 (PRELU)", fragment)
