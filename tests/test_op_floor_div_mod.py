"""FLOOR_DIV and FLOOR_MOD against the TFLM oracle: float32 (the only type TFLM runs), broadcasting,
negative operands, exact multiples."""

import numpy as np
import pytest
from elementwise_models import assert_one_line_cli_error, assert_rejected, elementwise_model, side_by_side_model
from harness import assert_matches_oracle

SHAPES = [([2, 3, 5], [2, 3, 5]), ([1, 4, 4, 8], [8]), ([1], [2, 3, 5]), ([2, 1, 3, 1, 4], [1, 2, 1, 5, 1])]


def test_floor_div_mod_match_tflm(tmp_path):
    ops = [
        (kind, "float32", list(shapes), "float32", None, None)
        for kind in ("FLOOR_DIV", "FLOOR_MOD")
        for shapes in SHAPES
    ]
    rng = np.random.default_rng(2)
    sets = []
    for seed in range(3):
        arrays = []
        for _, _, (s1, s2), _, _, _ in ops:
            x = rng.uniform(-20, 20, s1).astype(np.float32)
            d = rng.uniform(0.5, 6, s2).astype(np.float32) * rng.choice([-1, 1], s2).astype(np.float32)
            if seed == 0:  # integral values: exact multiples and remainders of 0
                x, d = np.round(x), np.round(d) + np.sign(d)
            arrays += [x, d.astype(np.float32)]
        sets.append(arrays)
    assert_matches_oracle(side_by_side_model(ops), tmp_path, inputs=sets)


def test_floor_mod_of_zero_and_nonfinite_as_tflm(tmp_path):
    model = elementwise_model("FLOOR_MOD", "float32", [[6], [6]])
    x = np.array([7, -7, 0, np.inf, np.nan, 3e38], np.float32)
    d = np.array([0, 0, 0, 2, 1, 1e-3], np.float32)
    assert_matches_oracle(model, tmp_path, inputs=[[x, d]])


def test_constant_divisor(tmp_path):
    lib = assert_matches_oracle(
        elementwise_model("FLOOR_DIV", "float32", [[2, 4], [4]], consts={1: np.array([2, -3, 0.5, -0.25], np.float32)}),
        tmp_path,
    )
    assert len(lib.info.inputs) == 1


def test_sanitized(tmp_path):
    ops = [(kind, "float32", [[2, 3, 1], [4]], "float32", None, None) for kind in ("FLOOR_DIV", "FLOOR_MOD")]
    assert_matches_oracle(side_by_side_model(ops), tmp_path, sanitize=True)


MALFORMED = [
    # TFLM stops with "Division by 0": a constant zero divisor is refused at compile time.
    (
        lambda: elementwise_model("FLOOR_DIV", "float32", [[4], [4]], consts={1: np.array([1, 0, 2, 3], np.float32)}),
        "holds 0",
    ),
    (lambda: elementwise_model("FLOOR_DIV", "int32", [[4], [4]]), "not supported"),
    (lambda: elementwise_model("FLOOR_MOD", "int8", [[4], [4]]), "not supported"),
    (lambda: elementwise_model("FLOOR_MOD", "float32", [[2, 3], [4, 3]], out_shape=[4, 3]), "do not broadcast"),
]


@pytest.mark.parametrize("model,message", MALFORMED)
def test_malformed_is_rejected(tmp_path, model, message):
    assert_rejected(model(), tmp_path, message)


def test_malformed_gives_one_line_cli_error(tmp_path):
    assert_one_line_cli_error(MALFORMED[0][0](), tmp_path, "operator 0", MALFORMED[0][1])
