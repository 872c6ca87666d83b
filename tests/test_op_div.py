"""DIV against the TFLM oracle: float32, int32, int8 (TFLM's integer division, checked on every
pair of int8 values), broadcasting, every fused activation."""

import numpy as np
import pytest
from elementwise_models import (
    activation_options,
    assert_one_line_cli_error,
    assert_rejected,
    elementwise_model,
    random_array,
    side_by_side_model,
)
from harness import assert_matches_oracle

ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]
SHAPES = [([2, 3, 5], [2, 3, 5]), ([1, 4, 4, 8], [8]), ([1], [2, 3, 5]), ([2, 1, 3, 1, 4], [1, 2, 1, 5, 1])]


def _inputs(ops, seeds, nonzero_divisor):
    """Random inputs whose divisors (input2) are never 0 (or, for int8, never the zero point);
    int32 dividends avoid INT32_MIN (INT32_MIN / -1 has no result in TFLM)."""
    sets = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        arrays = []
        for _, dtype, shapes, _, quant, _ in ops:
            x = random_array(dtype, shapes[0], rng, low=-(2**31) + 1 if dtype == "int32" else None, high=None)
            d = random_array(
                dtype,
                shapes[1],
                rng,
                low=-1000 if dtype == "int32" and seed else None,
                high=1000 if dtype == "int32" and seed else None,
            )
            if nonzero_divisor:
                zero = quant[1][1] if dtype == "int8" else 0
                d = np.where(d == zero, zero + 1, d).astype(d.dtype)
            arrays += [x, d]
        sets.append(arrays)
    return sets


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_div_matches_tflm(tmp_path, dtype):
    ops = [
        ("DIV", dtype, list(shapes), dtype, None, activation_options("DIV", ACTS[k % 4]))
        for k, shapes in enumerate(SHAPES)
    ]
    ops += [("DIV", dtype, [[9], [9]], dtype, None, activation_options("DIV", act)) for act in ACTS]
    assert_matches_oracle(side_by_side_model(ops), tmp_path, inputs=_inputs(ops, range(3), True))


def test_div_float32_by_zero_and_nonfinite_as_tflm(tmp_path):
    # x / 0 is +-inf, clamped to +-FLT_MAX with no activation; 0 / 0 and NaN stay NaN.
    model = elementwise_model("DIV", "float32", [[6], [6]])
    x = np.array([7, -7, 0, np.inf, np.nan, 3e38], np.float32)
    d = np.array([0, 0, 0, 2, 1, 1e-3], np.float32)
    assert_matches_oracle(model, tmp_path, inputs=[[x, d]])


INT8_QUANTS = [
    [(0.05, -3), (0.1, 2), (0.08, 5)],
    [(0.5, 0), (0.01, -128), (0.02, 3)],
    [(0.002, 100), (0.3, 7), (0.9, -50)],
    [(0.1, 127), (0.1, -128), (0.1, 0)],
]


def test_div_int8_every_value_pair_matches_tflm(tmp_path):
    """All 256 x 256 (dividend, divisor) pairs for four quantizations, including the small
    quotients whose rounding shift exceeds 31 bits in TFLM's arithmetic."""
    values = np.arange(-128, 128, dtype=np.int8)
    x = np.repeat(values, 256).reshape(256, 256)
    ops, arrays = [], []
    for k, q in enumerate(INT8_QUANTS):
        ops.append(("DIV", "int8", [[256, 256], [256, 256]], "int8", q, activation_options("DIV", ACTS[k])))
        d = np.tile(values, 256).reshape(256, 256)
        arrays += [x, np.where(d == q[1][1], q[1][1] + 1, d).astype(np.int8)]
    assert_matches_oracle(side_by_side_model(ops), tmp_path, inputs=[arrays])


def test_div_int8_broadcast_matches_tflm(tmp_path):
    ops = [("DIV", "int8", list(shapes), "int8", INT8_QUANTS[k], None) for k, shapes in enumerate(SHAPES)]
    assert_matches_oracle(side_by_side_model(ops), tmp_path, inputs=_inputs(ops, range(2), True))


def test_sanitized(tmp_path):
    ops = [
        ("DIV", "int8", [[2, 3, 1, 5], [1, 1, 4, 1]], "int8", INT8_QUANTS[2], activation_options("DIV", "RELU")),
        ("DIV", "int32", [[4, 5], [5]], "int32", None, activation_options("DIV", "RELU6")),
    ]
    assert_matches_oracle(side_by_side_model(ops), tmp_path, sanitize=True, inputs=_inputs(ops, range(2), True))


def test_int_division_by_zero_is_defined(tmp_path):
    """TFLM has no result for an int32 divisor of 0 or INT32_MIN / -1, nor for an int8 divisor at
    its zero point: the generated code must still run them without undefined behaviour (UBSan)."""
    from harness import compile_bytes

    from microcompiler.host import HostProgram

    ops = [
        ("DIV", "int32", [[4], [4]], "int32", None, None),
        ("DIV", "int8", [[3], [3]], "int8", INT8_QUANTS[0], activation_options("DIV", "RELU6")),
    ]
    library = compile_bytes(side_by_side_model(ops), tmp_path)
    inputs = [
        np.array([7, -(2**31), 0, 5], np.int32),
        np.array([0, -1, 0, 1], np.int32),
        np.array([10, -10, -3], np.int8),
        np.array([2, 2, 2], np.int8),
    ]
    result = HostProgram(library, tmp_path / "build", sanitize=True).run([inputs])[0]
    assert result.outputs[0].tolist() == [0, -(2**31), 0, 5]
    lo, hi = 5, 5 + round(6 / 0.08)  # RELU6 in the output's quantization
    assert result.outputs[1].tolist() == [hi, lo, 5]


MALFORMED = [
    (lambda: elementwise_model("DIV", "int16", [[4], [4]]), "not supported"),
    (lambda: elementwise_model("DIV", "float32", [[2, 3], [4, 3]], out_shape=[4, 3]), "do not broadcast"),
    (lambda: elementwise_model("DIV", "int8", [[4], [4]], quant=[(1.0, 0), (1e-6, 0), (1e-3, 0)]), "out of the range"),
    (
        lambda: elementwise_model("DIV", "float32", [[4], [4]], options=activation_options("DIV", "TANH")),
        "fused activation TANH",
    ),
    (lambda: elementwise_model("DIV", ["float32", "int32"], [[4], [4]]), "not supported"),
]


@pytest.mark.parametrize("model,message", MALFORMED)
def test_malformed_is_rejected(tmp_path, model, message):
    assert_rejected(model(), tmp_path, message)


def test_malformed_gives_one_line_cli_error(tmp_path):
    assert_one_line_cli_error(MALFORMED[1][0](), tmp_path, "operator 0", MALFORMED[1][1])
