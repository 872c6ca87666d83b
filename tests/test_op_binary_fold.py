"""Constant subgraphs of the binary family fold at compile time (no code), with TFLM's results:
each operator on two constants feeds one operator with a runtime input."""
import numpy as np
import pytest

from elementwise_models import activation_options
from harness import assert_matches_oracle
from model_builder import ModelBuilder

RNG = np.random.default_rng(8)
I32 = RNG.integers(-2**31, 2**31 - 1, (2, 3), endpoint=True).astype(np.int32)
I32_B = RNG.integers(-2**31, 2**31 - 1, (3,), endpoint=True).astype(np.int32)
F32 = RNG.uniform(-5, 5, (2, 3)).astype(np.float32)
F32_B = (RNG.uniform(0.5, 3, (3,)) * np.array([1, -1, 1])).astype(np.float32)
DIVISOR = np.array([7, -3, 1000], np.int32)

# (kind, constant inputs, output dtype, options)
CASES = [
    ("ADD", [I32, I32_B], "int32", activation_options("ADD", "RELU")),
    ("SUB", [I32, I32_B], "int32", activation_options("SUB", "RELU6")),
    ("MUL", [I32, I32_B], "int32", activation_options("MUL", "NONE")),
    ("MUL", [F32, F32_B], "float32", activation_options("MUL", "RELU_N1_TO_1")),
    ("DIV", [I32, DIVISOR], "int32", activation_options("DIV", "NONE")),
    ("DIV", [F32, F32_B], "float32", activation_options("DIV", "RELU")),
    ("MAXIMUM", [I32, I32_B], "int32", None),
    ("MINIMUM", [F32, F32_B], "float32", None),
    ("SQUARED_DIFFERENCE", [I32, I32_B], "int32", None),
    ("SQUARED_DIFFERENCE", [F32, F32_B], "float32", None),
    ("FLOOR_DIV", [F32, F32_B], "float32", None),
    ("FLOOR_MOD", [F32, F32_B], "float32", None),
    ("ADD_N", [F32, F32, F32 * 2], "float32", None),
    ("GREATER", [F32, F32_B], "bool", None),
    ("EQUAL", [I32, I32[0]], "bool", None),
]


def _case_id(case):
    return f"{case[0]}-{case[2]}"


@pytest.mark.parametrize("kind,consts,out_dtype,options", CASES, ids=[_case_id(c) for c in CASES])
def test_constant_operator_folds_to_tflm_result(tmp_path, kind, consts, out_dtype, options):
    b = ModelBuilder()
    cs = [b.constant(f"c{k}", c) for k, c in enumerate(consts)]
    folded = b.activation("folded", [2, 3], out_dtype)
    b.op(kind, cs, [folded], options)
    if out_dtype == "bool":  # the folded condition selects between two runtime inputs
        x = b.activation("x", [2, 3], "float32")
        z = b.activation("z", [2, 3], "float32")
        y = b.activation("y", [2, 3], "float32")
        b.op("SELECT_V2", [folded, x, z], [y])
        inputs = [x, z]
    else:  # the folded value is added to a runtime input (int32 ADD wraps and has no clamp)
        x = b.activation("x", [2, 3], out_dtype)
        y = b.activation("y", [2, 3], out_dtype)
        b.op("ADD", [folded, x], [y], activation_options("ADD", "NONE"))
        inputs = [x]
    lib = assert_matches_oracle(b.finish(inputs, [y]), tmp_path, n_inputs=2)
    assert [o["kind"] for o in lib.metadata["operators"]] == [("SELECT_V2" if out_dtype == "bool" else "ADD")]
