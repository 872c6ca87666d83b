"""EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL against the TFLM oracle: every type
TFLM runs for each, broadcasting, int8/int16 inputs of different scales."""

import numpy as np
import pytest
from elementwise_models import assert_one_line_cli_error, assert_rejected, elementwise_model, side_by_side_model
from harness import assert_matches_oracle

KINDS = ["EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL"]
TYPES = {
    "EQUAL": ["int8", "int32", "int64", "float32", "bool"],
    "NOT_EQUAL": ["int8", "int32", "int64", "float32", "bool"],
    "GREATER": ["int8", "int32", "int64", "float32"],
    "GREATER_EQUAL": ["int8", "int32", "int64", "float32"],
    "LESS": ["int8", "int32", "int64", "float32"],
    "LESS_EQUAL": ["int8", "int32", "int64", "float32"],
}
SHAPES = [([2, 3, 5], [2, 3, 5]), ([1], [4, 1, 3]), ([2, 1, 4, 1, 3], [5, 1, 1, 1]), ([7], [1])]
# Quantization of input1, input2 (and an unused output entry) for the quantized cases: equal
# scales, different scales, scales whose rescaled values tie.
QUANTS = {"int8": [[(0.05, -3), (0.05, -3), None], [(0.02, 10), (0.07, -20), None], [(0.5, 127), (0.25, -128), None]]}


def _small_ints(dtype, shape, rng):
    """Values with many equal pairs, so EQUAL and the ties of the orderings are exercised."""
    return rng.integers(-3, 4, shape).astype(dtype)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "float32", "bool"])
def test_comparisons_match_tflm(tmp_path, dtype):
    """One model per type: each comparison TFLM runs for it, on every shape pair and quantization."""
    ops = []
    quants = QUANTS.get(dtype, [None])
    for kind in KINDS:
        if dtype not in TYPES[kind]:
            continue
        for k, (s1, s2) in enumerate(SHAPES):
            ops.append((kind, dtype, [s1, s2], "bool", quants[k % len(quants)], None))
    model = side_by_side_model(ops)
    rng = np.random.default_rng(3)
    sets = []
    for seed in range(3):
        arrays = []
        for _, _, shapes, _, _, _ in ops:
            for s in shapes:
                if dtype == "bool":
                    arrays.append(rng.integers(0, 2, s).astype(np.bool_))
                elif dtype == "float32" and seed == 0:
                    arrays.append(_small_ints(np.float32, s, rng))  # exact ties
                elif dtype != "float32" and seed < 2:
                    arrays.append(_small_ints(dtype, s, rng))
                elif dtype == "float32":
                    arrays.append(rng.uniform(-2, 2, s).astype(np.float32))
                else:
                    info = np.iinfo(dtype)
                    arrays.append(rng.integers(info.min, info.max, s, endpoint=True).astype(dtype))
        sets.append(arrays)
    assert_matches_oracle(model, tmp_path, inputs=sets)


def test_quantized_comparison_of_values_equal_after_rescaling(tmp_path):
    # 0.5 * (x - 127) == 0.25 * (y + 128) for x = 127 - k, y = -128 - 2k: EQUAL must see the
    # rescaled values, not the stored ones.
    model = elementwise_model("EQUAL", "int8", [[8], [8]], out_dtype="bool", quant=[(0.5, 127), (0.25, -128), None])
    x = np.array([127, 126, 125, 120, 0, -1, 100, 127], np.int8)
    y = np.array([-128, -126, -124, -114, 126, 127, 0, -127], np.int8)
    lib = assert_matches_oracle(model, tmp_path, inputs=[[x, y]])
    assert lib.metadata["outputs"][0]["dtype"] == "bool"


def test_sanitized(tmp_path):
    assert_matches_oracle(
        elementwise_model(
            "LESS_EQUAL", "int8", [[3, 1], [1, 5]], out_dtype="bool", quant=[(0.02, 10), (0.07, -20), None]
        ),
        tmp_path / "i8",
        sanitize=True,
    )


MALFORMED = [
    (lambda: elementwise_model("LESS", "int16", [[4], [4]], out_dtype="bool"), "not supported"),
    # TFLM's int16 GREATER never computes the comparison (every element false): refused.
    (lambda: elementwise_model("GREATER", "int16", [[4], [4]], out_dtype="bool"), "not supported"),
    (
        lambda: elementwise_model("EQUAL", "float32", [[2, 3], [4, 3]], out_dtype="bool", out_shape=[4, 3]),
        "do not broadcast",
    ),
    (lambda: elementwise_model("GREATER", "float32", [[4], [4]], out_dtype="float32"), "expected bool"),
    (
        lambda: elementwise_model(
            "EQUAL", ["int8", "int32"], [[4], [4]], out_dtype="bool", quant=[(0.1, 0), None, None]
        ),
        "not supported",
    ),
    (
        lambda: elementwise_model("GREATER", "int8", [[4], [4]], out_dtype="bool", quant=[(2.0, 0), (0.1, 0), None]),
        "scale",
    ),
    (
        lambda: elementwise_model("NOT_EQUAL", "int32", [[1, 4], [4]], out_dtype="bool", out_shape=[4]),
        "broadcast shape",
    ),
]


@pytest.mark.parametrize("model,message", MALFORMED)
def test_malformed_is_rejected(tmp_path, model, message):
    assert_rejected(model(), tmp_path, message)


def test_malformed_gives_one_line_cli_error(tmp_path):
    assert_one_line_cli_error(MALFORMED[0][0](), tmp_path, "operator 0", MALFORMED[0][1])
