"""Constant subgraphs of the binary family fold at compile time (no code), with TFLM's results:
each operator on two constants feeds one operator with a runtime input."""

import numpy as np
from elementwise_models import activation_options
from harness import assert_matches_oracle
from model_builder import ModelBuilder

RNG = np.random.default_rng(8)
I32 = RNG.integers(-(2**31), 2**31 - 1, (2, 3), endpoint=True).astype(np.int32)
I32_B = RNG.integers(-(2**31), 2**31 - 1, (3,), endpoint=True).astype(np.int32)
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


def test_constant_operators_fold_to_tflm_results(tmp_path):
    """One model: each case's operator on constants feeds a consumer with runtime inputs; only the
    consumers remain as code, and every output matches TFLM."""
    b = ModelBuilder()
    inputs, outputs, consumers = [], [], []
    for n, (kind, consts, out_dtype, options) in enumerate(CASES):
        cs = [b.constant(f"c{n}_{k}", c) for k, c in enumerate(consts)]
        folded = b.activation(f"folded{n}", [2, 3], out_dtype)
        b.op(kind, cs, [folded], options)
        if out_dtype == "bool":  # the folded condition selects between two runtime inputs
            x = b.activation(f"x{n}", [2, 3], "float32")
            z = b.activation(f"z{n}", [2, 3], "float32")
            y = b.activation(f"y{n}", [2, 3], "float32")
            b.op("SELECT_V2", [folded, x, z], [y])
            inputs += [x, z]
            consumers.append("SELECT_V2")
        else:  # the folded value is added to a runtime input (int32 ADD wraps and has no clamp)
            x = b.activation(f"x{n}", [2, 3], out_dtype)
            y = b.activation(f"y{n}", [2, 3], out_dtype)
            b.op("ADD", [folded, x], [y], activation_options("ADD", "NONE"))
            inputs.append(x)
            consumers.append("ADD")
        outputs.append(y)
    lib = assert_matches_oracle(b.finish(inputs, outputs), tmp_path, n_inputs=2)
    assert [o["kind"] for o in lib.metadata["operators"]] == consumers
