"""SUB against the TFLM oracle: int8, int16, int32, float32; broadcasting; every fused activation;
the DSP (SMMLAR) int8 variant."""

import numpy as np
import pytest
from elementwise_models import (
    activation_options,
    assert_one_line_cli_error,
    assert_rejected,
    elementwise_model,
    side_by_side_model,
)
from harness import assert_matches_oracle

ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]
SHAPES = [([1, 4, 4, 8], [1, 4, 4, 8]), ([1, 4, 4, 8], [8]), ([1], [2, 3, 5]), ([2, 1, 3, 1, 4], [1, 2, 1, 5, 1])]
QUANTS = {
    "int8": [
        [(0.05, -3), (0.1, 2), (0.08, 5)],
        [(0.02, 10), (0.3, -7), (0.05, -20)],
        [(0.5, -128), (0.5, 127), (1.0, -128)],
        [(0.001, 3), (0.9, -4), (0.03, 1)],
    ],
    "int16": [[(0.0004, 0), (0.0007, 0), (0.0009, 0)], [(0.00004, 0), (0.00003, 0), (0.00005, 0)]],
}


def _cases(dtype):
    quants = QUANTS.get(dtype, [None])
    return [
        ("SUB", dtype, list(shapes), dtype, quants[k % len(quants)], activation_options("SUB", ACTS[k % 4]))
        for k, shapes in enumerate(SHAPES)
    ] + [("SUB", dtype, [[3, 7], [3, 7]], dtype, quants[-1], activation_options("SUB", act)) for act in ACTS]


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "float32"])
def test_sub_matches_tflm(tmp_path, dtype):
    """One model per type holding every shape pair, quantization and fused activation."""
    assert_matches_oracle(side_by_side_model(_cases(dtype)), tmp_path, n_inputs=3)


def test_sub_int8_dsp_variant_matches_tflm(tmp_path):
    lib = assert_matches_oracle(side_by_side_model(_cases("int8")), tmp_path, n_inputs=2, features={"dsp"})
    assert "smmlar" in {o["kernel"]["variant"] for o in lib.metadata["operators"]}


def test_sub_constant_operand(tmp_path):
    const = np.arange(-12, 12, dtype=np.int8).reshape(3, 8)
    lib = assert_matches_oracle(
        elementwise_model(
            "SUB", "int8", [[3, 8], [3, 8]], consts={0: const}, options=activation_options("SUB", "RELU")
        ),
        tmp_path,
    )
    assert len(lib.info.inputs) == 1


def test_sanitized(tmp_path):
    assert_matches_oracle(
        elementwise_model("SUB", "int8", [[2, 3, 1, 5], [1, 1, 4, 1]], options=activation_options("SUB", "RELU")),
        tmp_path,
        sanitize=True,
    )
    assert_matches_oracle(
        elementwise_model("SUB", "int32", [[4, 5], [5]], options=activation_options("SUB", "RELU6")),
        tmp_path / "i32",
        sanitize=True,
    )


MALFORMED = [
    (lambda: elementwise_model("SUB", "int8", [[2, 3], [4, 3]], out_shape=[4, 3]), "do not broadcast"),
    (lambda: elementwise_model("SUB", "int16", [[4], [4]], quant=[(0.001, 3), (0.001, 0), (0.001, 0)]), "zero point 0"),
    (lambda: elementwise_model("SUB", ["int8", "int16"], [[4], [4]]), "not supported"),
    (lambda: elementwise_model("SUB", "int64", [[4], [4]]), "not supported"),
    (lambda: elementwise_model("SUB", "float32", [[1, 1, 1, 1, 1, 1, 2], [2]]), "up to 6D"),
    (
        lambda: elementwise_model("SUB", "float32", [[4], [4]], options=activation_options("SUB", "TANH")),
        "fused activation TANH",
    ),
]


@pytest.mark.parametrize("model,message", MALFORMED)
def test_malformed_is_rejected(tmp_path, model, message):
    assert_rejected(model(), tmp_path, message)


def test_malformed_gives_one_line_cli_error(tmp_path):
    assert_one_line_cli_error(MALFORMED[0][0](), tmp_path, "operator 0", MALFORMED[0][1])
