"""The int8 ADD/SUB "affine" kernel (microcompiler/ops/fast/add_affine.py): TFLM's three rescalings
replaced by (w1 * x1 + w2 * x2 + bias) >> shift where that equals TFLM on every input pair.

The models here feed every one of the 65,536 (input1, input2) pairs through the operator at once, so
the oracle comparison is the whole proof, not a sample; the other cases cover the code paths (8
elements per step with a remainder, one block without a loop, the broadcast loop nest, the SSAT and
the general clamp, in place) and the fallback to the SMMLAR variant where no weights fit."""

import numpy as np
import pytest
from board_oracle import needs_board_tools
from elementwise_models import activation_options, side_by_side_model
from harness import assert_matches_oracle, compile_bytes
from model_builder import ModelBuilder
from oracle import Oracle
from test_op_add_mul import _run_in_place, binary_model

from microcompiler.inputs import random_inputs
from microcompiler.ops.fast.add_affine import affine_add

DSP = frozenset({"dsp"})
_GRID = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128), indexing="ij")
ALL_PAIRS = [g.astype(np.int8).reshape(1, 256, 256) for g in _GRID]


def sub_model(shape1, shape2, activation, quant):
    b = ModelBuilder()
    xs = [
        b.activation(f"x{k}", s, "int8", scale=quant[k][0], zero_point=quant[k][1])
        for k, s in enumerate((shape1, shape2))
    ]
    y = b.activation(
        "y", list(np.broadcast_shapes(tuple(shape1), tuple(shape2))), "int8", scale=quant[2][0], zero_point=quant[2][1]
    )
    b.op("SUB", xs, [y], activation_options("SUB", activation))
    return b.finish(xs, [y])


def model_of(kind, shape1, shape2, activation, quant):
    if kind == "SUB":
        return sub_model(shape1, shape2, activation, quant)
    return binary_model(kind, "int8", shape1, shape2, activation, quant)


def variant_of_op(operator: dict) -> str:
    return operator["kernel"]["variant"]


def variant_of(library) -> str:
    return variant_of_op(library.metadata["operators"][0])


# (kind, activation, quant (scale, zero point) of input1, input2, output, expected variant)
EXHAUSTIVE = {
    "add_resnet_block": ("ADD", "RELU", [(0.0394, -128), (0.1042, 4), (0.0509, -128)], "affine"),
    "add_relu6": ("ADD", "RELU6", [(0.02, 10), (0.3, -7), (0.05, -20)], "affine"),  # general clamp
    "add_equal_scales": ("ADD", "NONE", [(0.05, 127), (0.05, -128), (0.05, 127)], "affine"),
    "add_halving": ("ADD", "NONE", [(0.05, 3), (0.05, -3), (0.1, 1)], "affine"),
    "add_output_finer": ("ADD", "NONE", [(0.05, -3), (0.1, 2), (0.08, 5)], "affine"),
    "sub": ("SUB", "NONE", [(0.05, -3), (0.1, 2), (0.08, 5)], "affine"),
    "sub_relu": ("SUB", "RELU", [(0.07, 20), (0.03, -50), (0.09, -100)], "affine"),
    # input scales 900x apart: TFLM's rounding of the small input is not affine, SMMLAR stays
    "add_scales_900x_apart": ("ADD", "NONE", [(0.001, 3), (0.9, -4), (0.03, 1)], "smmlar"),
}


@pytest.mark.parametrize("case", list(EXHAUSTIVE))
def test_every_input_pair_matches_tflm(tmp_path, case):
    kind, activation, quant, variant = EXHAUSTIVE[case]
    model = model_of(kind, [1, 256, 256], [1, 256, 256], activation, quant)
    lib = assert_matches_oracle(model, tmp_path, inputs=[ALL_PAIRS], features=DSP)
    assert variant_of(lib) == variant


def test_every_input_pair_sanitized(tmp_path):
    """UBSan: the proof that neither partial sum overflows int32 holds (the largest weights: the
    output scale finest next to the inputs')."""
    model = model_of("ADD", [1, 256, 256], [1, 256, 256], "NONE", [(0.09, -128), (0.1, 127), (0.1001, 0)])
    lib = assert_matches_oracle(model, tmp_path, inputs=[ALL_PAIRS], sanitize=True)
    assert variant_of(lib) == "affine"


@pytest.mark.parametrize(
    "kind,shape1,shape2,activation",
    [
        ("ADD", [1, 4, 4, 8], [8], "NONE"),  # broadcast: the loop nest
        ("SUB", [1], [2, 3, 5], "RELU"),  # scalar first
        ("ADD", [3, 1, 6], [2, 1, 1, 1], "RELU6"),  # both sides broadcast, general clamp
        ("ADD", [1, 11], [1, 11], "NONE"),  # one step of the assembly loop, then 3
        ("SUB", [1, 11], [1, 11], "RELU6"),  # general clamp: one block of 8 without a loop, then 3
        ("SUB", [2, 21], [2, 21], "RELU6"),  # 5 steps of 8 and 2 more
        ("ADD", [1, 5], [1, 5], "NONE"),  # fewer than 8: the loop nest
    ],
)
def test_shapes_match_tflm(tmp_path, kind, shape1, shape2, activation):
    model = model_of(kind, shape1, shape2, activation, [(0.05, -3), (0.1, 2), (0.08, 5)])
    lib = assert_matches_oracle(model, tmp_path, n_inputs=3, features=DSP)
    assert variant_of(lib) == "affine"


@pytest.mark.parametrize("kind,alias", [("ADD", 0), ("ADD", 1), ("SUB", 0), ("SUB", 1)])
def test_in_place(tmp_path, kind, alias):
    """The output pointer is one input: each element is read before it is written."""
    model = model_of(kind, [1, 4, 5, 7], [1, 4, 5, 7], "NONE", [(0.05, -3), (0.1, 2), (0.08, 5)])
    library = compile_bytes(model, tmp_path)
    assert variant_of(library) == "affine"
    inputs = random_inputs(library.info.inputs, seed=9)
    want = Oracle(model).run(inputs)[0].reshape(-1)
    np.testing.assert_array_equal(_run_in_place(library, tmp_path, alias, inputs, sanitize=True), want)


def test_reference_kernels_keep_tflm_arithmetic(tmp_path):
    """--kernels reference still emits TFLM's rescalings."""
    from microcompiler.compiler import compile_model

    path = tmp_path / "add.tflite"
    path.write_bytes(model_of("ADD", [1, 16], [1, 16], "NONE", [(0.05, -3), (0.1, 2), (0.08, 5)]))
    lib = compile_model(path, kernels="reference")
    assert variant_of(lib) == "reference"
    body = lib.functions[0].body
    assert "mc_requantize(" in body and "MC_SSAT8_ASR" not in body


def test_search_refuses_left_shifts():
    """The search models right shifts only: an input multiplier with a left shift gets no plan."""
    q = dict(left_shift=20, input1_q=(1 << 30, 1), input2_q=(1 << 30, -1), output_q=(1 << 30, -20))
    assert affine_add(q, (0, 0, 0), (-128, 127), False) is None


@needs_board_tools
@pytest.mark.parametrize("board", ["mps2_an386", "mps2_an500", "mps2_an385"], ids=["m4", "m7", "m3"])
def test_every_input_pair_on_device(tmp_path, board):
    """The inline assembly (Cortex-M4, M7) and the portable C (Cortex-M3) on every input pair: ADD
    with SSAT (the assembly loop), SUB with the general clamp, side by side; and 37 elements (4
    steps of 8 and 5 single elements with SSAT)."""
    from microcompiler.boards import load_board
    from microcompiler.compiler import compile_model
    from microcompiler.project import run_on_board

    q = [(0.0394, -128), (0.1042, 4), (0.0509, -128)]
    model = side_by_side_model(
        [
            ("ADD", "int8", [[1, 256, 256]] * 2, "int8", q, activation_options("ADD", "RELU")),
            ("SUB", "int8", [[1, 256, 256]] * 2, "int8", q, activation_options("SUB", "RELU6")),
            ("ADD", "int8", [[1, 37]] * 2, "int8", q, activation_options("ADD", "NONE")),
        ]
    )
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    b = load_board(board)
    lib = compile_model(path, features=b.cpu.features)
    assert [variant_of_op(o) for o in lib.metadata["operators"]] == ["affine"] * 3
    inputs = ALL_PAIRS * 2 + [g.reshape(-1)[::1771][:37].reshape(1, 37) for g in ALL_PAIRS]  # spread pairs
    _, _, result = run_on_board(lib, b, tmp_path / "project", input=inputs, log=lambda _: None)
    assert len(result.outputs) == 3
    for got, want in zip(result.outputs, Oracle(model).run(inputs)):
        np.testing.assert_array_equal(got.reshape(-1), want.reshape(-1))
