"""Elementwise unary operators against the TFLM oracle: ABS, NEG, SQUARE, SQRT, RSQRT, EXP, LOG, SIN,
COS, CEIL, FLOOR, ROUND (float32; ABS and RSQRT also int8/int16), LOGICAL_NOT (bool) and
ZEROS_LIKE (float32, int8, int32, int64).

Cases of one type are compiled side by side in one model (one input and one output per operator
instance), so each host build checks many of them; every output is compared with TFLM's."""

import re
import subprocess
import sys

import model_builder
import numpy as np
import pytest
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from harness import assert_matches_oracle, compile_bytes
from model_builder import ModelBuilder, fb
from test_op_activation import assert_in_place_matches_oracle

from microcompiler.errors import UnsupportedModelError

model_builder.TYPES.setdefault("bool", fb.TensorType.BOOL)

FLOAT_KINDS = ["ABS", "NEG", "SQUARE", "SQRT", "RSQRT", "EXP", "LOG", "SIN", "COS", "CEIL", "FLOOR", "ROUND"]
SHAPES = [[1], [7], [2, 3, 5], [1, 4, 4, 3]]
# Values where each operator is defined (TFLM gives NaN elsewhere; the non-finite test covers that).
FLOAT_RANGES = {
    "SQRT": (1e-3, 1e3),
    "RSQRT": (1e-3, 1e3),
    "LOG": (1e-6, 1e6),
    "EXP": (-30.0, 30.0),
    "SIN": (-100.0, 100.0),
    "COS": (-100.0, 100.0),
}
# NaN, infinities, signed zeros, a subnormal, the float extremes, ties for ROUND, negative
# arguments of SQRT/RSQRT/LOG, arguments where EXP overflows and underflows.
SPECIAL = np.array(
    [
        np.nan,
        np.inf,
        -np.inf,
        -0.0,
        0.0,
        1e-45,
        3.4028235e38,
        -3.4028235e38,
        0.5,
        -0.5,
        1.5,
        -2.5,
        2.5,
        3.5,
        -1.0,
        89.0,
        -104.0,
        8388607.5,
        -8388609.0,
        1e7 + 0.5,
    ],
    dtype=np.float32,
)


def side_by_side(cases) -> bytes:
    """One model running each case (kind, shape, dtype, input quant, output quant) on its own input."""
    b = ModelBuilder()
    inputs, outputs = [], []
    for n, (kind, shape, dtype, in_q, out_q) in enumerate(cases):
        x = b.activation(f"x{n}", shape, dtype, scale=in_q[0], zero_point=in_q[1])
        y = b.activation(f"{kind.lower()}{n}", shape, dtype, scale=out_q[0], zero_point=out_q[1])
        b.op(kind, [x], [y])
        inputs.append(x)
        outputs.append(y)
    return b.finish(inputs, outputs)


def float_values(kind, shape, rng) -> np.ndarray:
    lo, hi = FLOAT_RANGES.get(kind, (-10.0, 10.0))
    if lo > 0:  # log-uniform over the positive range
        return np.exp(rng.uniform(np.log(lo), np.log(hi), shape)).astype(np.float32)
    x = rng.uniform(lo, hi, shape).astype(np.float32)
    if kind in ("ROUND", "CEIL", "FLOOR"):  # every other value a tie k + 0.5
        x.ravel()[::2] = np.floor(x.ravel()[::2]) + 0.5
    return x


NO_Q = (None, None)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_float_operators_match_tflm(tmp_path, shape):
    model = side_by_side([(kind, shape, "float32", NO_Q, NO_Q) for kind in FLOAT_KINDS])
    inputs = [[float_values(kind, shape, np.random.default_rng(seed)) for kind in FLOAT_KINDS] for seed in range(3)]
    assert_matches_oracle(model, tmp_path, inputs=inputs)


@pytest.mark.parametrize("executor", ["aot", "graph"])
def test_float_operators_on_non_finite_inputs_match_tflm(tmp_path, executor):
    # NaN must come out as NaN where TFLM gives NaN, infinities as the same infinity; sanitized.
    shape = [len(SPECIAL)]
    model = side_by_side([(kind, shape, "float32", NO_Q, NO_Q) for kind in FLOAT_KINDS])
    library = assert_matches_oracle(
        model, tmp_path, inputs=[[SPECIAL] * len(FLOAT_KINDS)], sanitize=True, executor=executor
    )
    assert len(library.functions) == len(FLOAT_KINDS)


ABS_INT8_CASES = [  # (shape, input (scale, zero point), output (scale, zero point))
    ([1], (0.05, -3), (0.05, -3)),  # equal scales: no rescale, only the zero points
    ([37], (0.05, 0), (0.05, 20)),
    ([2, 9], (0.1, -128), (0.1, -128)),  # |x - zp| up to 255: saturates
    ([3, 4, 5], (0.02, 127), (0.05, -128)),  # rescales down
    ([1, 4, 4, 3], (0.1, 5), (0.03, -100)),  # rescales up, saturating
    ([64], (0.3, 10), (0.007, -128)),  # large ratio
]


def test_abs_int8_matches_tflm(tmp_path):
    model = side_by_side([("ABS", shape, "int8", in_q, out_q) for shape, in_q, out_q in ABS_INT8_CASES])
    assert_matches_oracle(model, tmp_path, n_inputs=3)


def test_abs_int16_matches_tflm(tmp_path):
    cases = [
        ("ABS", [1, 5, 7], "int16", (0.001, 0), (0.001, 0)),  # no rescale: |-32768| clamps to 32767
        ("ABS", [9], "int16", (0.002, 0), (0.0005, 0)),  # rescales up, saturating
        ("ABS", [2, 8], "int16", (0.0005, 0), (0.003, 0)),  # rescales down
        ("ABS", [3, 5], "int16", NO_Q, NO_Q),
    ]  # unquantized: std::abs, -32768 stays -32768
    model = side_by_side(cases)
    rng = np.random.default_rng(1)
    extremes = [-32768, 32767, -32767, -1, 0, 1]
    sets = []
    for _ in range(3):
        arrays = []
        for _, shape, _, _, _ in cases:
            a = rng.integers(-32768, 32767, size=shape, endpoint=True).astype(np.int16)
            a.ravel()[: len(extremes)] = extremes[: a.size]
            arrays.append(a)
        sets.append(arrays)
    assert_matches_oracle(model, tmp_path, inputs=sets, sanitize=True)


RSQRT_INT8_CASES = [
    ([1], (0.05, -128), (0.05, -128)),
    ([19], (0.01, -128), (0.05, -128)),
    ([2, 3, 7], (0.1, -3), (0.02, 0)),
    ([4, 4, 3], (1.0, 0), (0.004, -128)),  # 1/sqrt(1..127) in [0.09, 1]
    ([33], (0.001, 100), (0.5, 30)),  # large results saturate
]


def rsqrt_int_inputs(cases, dtype, seed):
    """Values at or above the input zero point (TFLM stops with an error below it)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for _, shape, _, (_, zp), _ in cases:
        hi = np.iinfo(dtype).max
        a = rng.integers(zp, hi, size=shape, endpoint=True).astype(dtype)
        edge = [zp, zp + 1, zp + 2, hi][: a.size]
        a.ravel()[: len(edge)] = edge
        arrays.append(a)
    return arrays


def test_rsqrt_int8_matches_tflm(tmp_path):
    cases = [("RSQRT", shape, "int8", in_q, out_q) for shape, in_q, out_q in RSQRT_INT8_CASES]
    assert_matches_oracle(
        side_by_side(cases), tmp_path, inputs=[rsqrt_int_inputs(cases, np.int8, s) for s in range(3)], sanitize=True
    )


def test_rsqrt_int16_matches_tflm(tmp_path):
    cases = [
        ("RSQRT", [1, 40], "int16", (0.01, 0), (0.001, 0)),
        ("RSQRT", [7], "int16", (0.0001, 0), (0.05, 0)),
        ("RSQRT", [3, 3], "int16", (1.0, 0), (1.0 / 32768, 0)),
    ]
    assert_matches_oracle(
        side_by_side(cases), tmp_path, inputs=[rsqrt_int_inputs(cases, np.int16, s) for s in range(3)], sanitize=True
    )


def test_quantized_abs_and_rsqrt_on_every_input_value_match_tflm(tmp_path):
    # Every int8 value, and every valid int16 RSQRT input (0..32767), in one model.
    cases = [
        ("ABS", [256], "int8", (0.1, 5), (0.03, -100)),
        ("ABS", [256], "int8", (0.02, -128), (0.02, 0)),
        ("RSQRT", [256], "int8", (0.01, -128), (0.05, -128)),
        ("RSQRT", [32768], "int16", (0.01, 0), (0.001, 0)),
    ]
    every = np.arange(-128, 128, dtype=np.int8)
    inputs = [[every, every, every, np.arange(32768, dtype=np.int16)]]
    assert_matches_oracle(side_by_side(cases), tmp_path, inputs=inputs)


# int16 RSQRT scales as a converter gives them: the output scale puts 1/sqrt of the input below which
# the output saturates (x_sat) at the int16 maximum (x_sat 256 and 1024: 8 and 13 exceptions).
RSQRT_SQRT_GUESS_SCALES = [
    (in_s, 1 / (np.sqrt(in_s * x_sat) * 32767)) for in_s, x_sat in ((0.001, 1), (2**-12, 16), (0.37, 256), (0.01, 1024))
] + [(0.01, 0.001)]


def rsqrt_sqrt_guess_model():
    return side_by_side([("RSQRT", [32768], "int16", (i, 0), (o, 0)) for i, o in RSQRT_SQRT_GUESS_SCALES])


def test_rsqrt_int16_sqrt_guess_on_every_input_matches_tflm(tmp_path):
    """The int16 RSQRT without the Newton iteration (cores with an FPU, ops/rsqrt_int.py): every
    valid int16 input (0..32767; TFLM stops below 0), scales with and without exceptions, on the
    host with sanitizers."""
    every = np.arange(32768, dtype=np.int16)
    n = len(RSQRT_SQRT_GUESS_SCALES)
    lib = assert_matches_oracle(
        rsqrt_sqrt_guess_model(), tmp_path, inputs=[[every] * n], sanitize=True, features=frozenset({"fpu"})
    )
    assert {op["kernel"]["variant"] for op in lib.metadata["operators"]} == {"sqrt-guess"}
    ops_c = next(text for path, text in lib.files.items() if path.endswith("_ops.c"))
    assert "mc_inv_sqrt_multiplier" not in ops_c and "mc_inv_sqrt_q20_nearest" in ops_c
    assert re.search(r"_exception_input\[37\]", ops_c)  # x_sat 1024: 13 exceptions at x % 37


def test_logical_not_matches_tflm(tmp_path):
    model = side_by_side([("LOGICAL_NOT", shape, "bool", NO_Q, NO_Q) for shape in SHAPES])
    assert_matches_oracle(model, tmp_path, n_inputs=2)


def test_zeros_like_matches_tflm(tmp_path):
    cases = [
        ("ZEROS_LIKE", [1], "float32", NO_Q, NO_Q),
        ("ZEROS_LIKE", [2, 3], "int8", (0.1, 3), (0.1, 3)),
        ("ZEROS_LIKE", [5], "int8", NO_Q, NO_Q),
        ("ZEROS_LIKE", [3, 1, 2], "int32", NO_Q, NO_Q),
        ("ZEROS_LIKE", [4], "int64", NO_Q, NO_Q),
    ]
    model = side_by_side(cases)
    inputs = [[np.full(shape, 7, dtype=dtype if dtype != "float32" else np.float32) for _, shape, dtype, _, _ in cases]]
    assert_matches_oracle(model, tmp_path, inputs=inputs, sanitize=True)


def test_constant_subgraphs_fold_to_flash(tmp_path):
    # y = SIN(ZEROS_LIKE(x)) + ROUND(c) + ABS(c): ZEROS_LIKE depends only on the shape and ROUND/ABS of
    # a constant are exact, so all three become constants; SIN and the ADDs remain.
    b = ModelBuilder()
    x = b.activation("x", [2, 4], "float32")
    c = b.constant("c", np.array([[0.5, 1.5, -2.5, 3.7], [-0.2, 2.5, 1e30, -7.5]], np.float32))
    zeros, sine = b.activation("zeros", [2, 4], "float32"), b.activation("sine", [2, 4], "float32")
    rounded = b.activation("rounded", [2, 4], "float32")
    absolute = b.activation("absolute", [2, 4], "float32")
    s1, y = b.activation("s1", [2, 4], "float32"), b.activation("y", [2, 4], "float32")
    b.op("ZEROS_LIKE", [x], [zeros])
    b.op("SIN", [zeros], [sine])
    b.op("ROUND", [c], [rounded])
    b.op("ABS", [c], [absolute])
    b.op("ADD", [sine, rounded], [s1], model_builder.add_options())
    b.op("ADD", [s1, absolute], [y], model_builder.add_options())
    library = assert_matches_oracle(b.finish([x], [y]), tmp_path, n_inputs=1)
    assert sorted(fn.op.kind for fn in library.functions) == ["ADD", "ADD", "SIN"]


@pytest.mark.parametrize(
    "kind,dtype,q", [("ABS", "int8", (0.05, -3)), ("ABS", "int16", (0.001, 0)), ("COS", "float32", NO_Q)]
)
def test_elementwise_unary_in_place(tmp_path, kind, dtype, q):
    assert_in_place_matches_oracle(side_by_side([(kind, [4, 13], dtype, q, q)]), tmp_path)


@pytest.mark.parametrize(
    "case,message",
    [
        (("SIN", [4], "int8", (0.1, 0), (0.1, 0)), "input type int8 is not supported (float32)"),
        (("FLOOR", [4], "int16", NO_Q, NO_Q), "input type int16 is not supported (float32)"),
        (("ABS", [4], "int8", NO_Q, NO_Q), "int8 input and output need quantization parameters"),
        (("LOGICAL_NOT", [4], "float32", NO_Q, NO_Q), "input type float32 is not supported (bool)"),
        (("ZEROS_LIKE", [4], "int16", (0.1, 0), (0.1, 0)), "input type int16 is not supported"),
        (("ABS", [4], "int16", (0.01, 3), (0.01, 0)), "int16 input and output zero points must be 0"),
        (("RSQRT", [4], "int16", (0.01, 0), (0.01, 5)), "int16 input and output zero points must be 0"),
    ],
)
def test_unsupported_configurations_are_rejected(tmp_path, case, message):
    with pytest.raises(UnsupportedModelError, match=re.escape(f"operator 0 ({case[0]}): {message}")):
        compile_bytes(side_by_side([case]), tmp_path)


def _cli_compile(tmp_path, model_bytes):
    path = tmp_path / "m.tflite"
    path.write_bytes(model_bytes)
    return subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", "compile", str(path), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )


def _mismatched(kind, in_shape, out_shape, in_dtype, out_dtype, q=NO_Q):
    b = ModelBuilder()
    x = b.activation("x", in_shape, in_dtype, scale=q[0], zero_point=q[1])
    y = b.activation("y", out_shape, out_dtype, scale=q[0], zero_point=q[1])
    b.op(kind, [x], [y])
    return b.finish([x], [y])


@pytest.mark.parametrize(
    "model,fragment",
    [
        (_mismatched("NEG", [2, 3], [7], "float32", "float32"), "(NEG): input shape [2, 3] and output shape [7]"),
        (
            _mismatched("ABS", [4], [4], "int8", "int16", (0.1, 0)),
            "(ABS): output type int16 differs from input type int8",
        ),
        (_mismatched("RSQRT", [4], [4], "int8", "int8"), "has no quantization parameters"),
    ],
    ids=["shape", "type", "quantization"],
)
def test_malformed_models_give_one_line_error(tmp_path, model, fragment):
    proc = _cli_compile(tmp_path, model)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], proc.stderr


@needs_board_tools
def test_every_unary_operator_on_board(tmp_path):
    # One instance of each operator in its first supported type (int8 where TFLM has it), and the
    # int16 RSQRT on every valid input.
    cases = [
        ("ABS", [9], "int8", (0.1, 5), (0.03, -100)),
        ("RSQRT", [9], "int8", (0.01, -128), (0.05, -128)),
        ("ZEROS_LIKE", [9], "int8", (0.1, 3), (0.1, 3)),
        ("LOGICAL_NOT", [9], "bool", NO_Q, NO_Q),
    ]
    # float32: 9 values in each operator's range, then the finite special values (ties, extremes,
    # overflowing EXP, negative SQRT/LOG arguments: NaN on the device as in TFLM).
    finite = SPECIAL[np.isfinite(SPECIAL)]
    n = 9 + len(finite)
    cases += [(kind, [n], "float32", NO_Q, NO_Q) for kind in FLOAT_KINDS if kind not in ("ABS", "RSQRT")]
    rng = np.random.default_rng(5)
    inputs = [
        rng.integers(-128, 127, size=[9], endpoint=True).astype(np.int8),
        rsqrt_int_inputs([cases[1]], np.int8, 5)[0],
        rng.integers(-128, 127, size=[9], endpoint=True).astype(np.int8),
        rng.integers(0, 2, size=[9]).astype(np.bool_),
    ]
    inputs += [np.concatenate([float_values(kind, [9], rng), finite]) for kind, *_ in cases[4:]]
    # int16 RSQRT without the Newton iteration (the M4's FPU: sqrt-guess), with 13 exceptions
    cases.append(("RSQRT", [32768], "int16", (0.01, 0), (RSQRT_SQRT_GUESS_SCALES[3][1], 0)))
    inputs.append(np.arange(32768, dtype=np.int16))
    assert_matches_oracle_on_board(side_by_side(cases), tmp_path, inputs=inputs)
