"""ADD_N against the TFLM oracle: float32 and int8, two to many inputs."""

import numpy as np
import pytest
from elementwise_models import (
    assert_one_line_cli_error,
    assert_rejected,
    elementwise_model,
    random_array,
    side_by_side_model,
)
from harness import assert_matches_oracle


def _op(dtype, n, shape, zp=-3, scale=0.05, out=(0.1, 4)):
    quant = [(scale, zp)] * n + [out] if dtype == "int8" else None
    return ("ADD_N", dtype, [shape] * n, dtype, quant, None)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_add_n_matches_tflm(tmp_path, dtype):
    ops = [
        _op(dtype, 2, [2, 3, 5]),
        _op(dtype, 3, [1]),
        _op(dtype, 5, [4, 7], zp=0, scale=0.02, out=(0.3, -10)),
        _op(dtype, 4, [1, 2, 2, 3], zp=127, scale=0.5, out=(1.0, -128)),
        _op(dtype, 7, [9]),
    ]
    assert_matches_oracle(side_by_side_model(ops), tmp_path, n_inputs=3, sanitize=dtype == "int8")


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_add_n_of_many_inputs_mostly_constant(tmp_path, dtype):
    """16 inputs, 12 of them constants: the int8 sum of rescaled terms wraps in int32 as TFLM's does."""
    rng = np.random.default_rng(4)
    consts = {k: random_array(dtype, [3, 4], rng) for k in range(2, 16, 1) if k % 4}
    quant = [(0.01, -128)] * 16 + [(0.05, 0)] if dtype == "int8" else None
    model = elementwise_model("ADD_N", dtype, [[3, 4]] * 16, quant=quant, consts=consts)
    lib = assert_matches_oracle(model, tmp_path, n_inputs=2, sanitize=dtype == "int8")
    assert len(lib.info.inputs) == 16 - len(consts)


MALFORMED = [
    (
        lambda: elementwise_model("ADD_N", "int8", [[4], [4]], quant=[(0.1, 0), (0.2, 0), (0.1, 0)]),
        "share one scale and zero point",
    ),
    (lambda: elementwise_model("ADD_N", "float32", [[4], [1]], out_shape=[4]), "does not broadcast"),
    (lambda: elementwise_model("ADD_N", "int16", [[4], [4]]), "not supported"),
    (lambda: elementwise_model("ADD_N", "int8", [[4], [4]], quant=[(1.0, 0), (1.0, 0), (1e-8, 0)]), "output rescale"),
]


@pytest.mark.parametrize("model,message", MALFORMED)
def test_malformed_is_rejected(tmp_path, model, message):
    assert_rejected(model(), tmp_path, message)


def test_malformed_gives_one_line_cli_error(tmp_path):
    assert_one_line_cli_error(MALFORMED[0][0](), tmp_path, "operator 0", MALFORMED[0][1])
