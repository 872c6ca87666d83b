"""QUANTIZE and DEQUANTIZE against the TFLM oracle, and fold_constants on constant inputs."""

import subprocess
import sys

import numpy as np
import pytest
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from harness import assert_matches_oracle, compile_bytes
from model_builder import ModelBuilder, concatenation_options
from model_merge import assert_cases_match_oracle
from test_op_activation import assert_in_place_matches_oracle, unary_model

from microcompiler.codegen.model_info import TensorInfo
from microcompiler.errors import UnsupportedModelError
from microcompiler.inputs import random_inputs

# Quotients that are exact ties in float32 (TFLM rounds them away from zero) and ones whose float32
# quotient is a tie while the double quotient is not, plus NaN/inf/huge values (x86 TFLM maps them
# to INT32_MIN before adding the zero point).
TIES = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, -127.5, 0.0, -0.0], dtype=np.float32)
SPECIAL = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 3e38, 2.2e9, 1e-30], dtype=np.float32)


def quantize_inputs(scale, n, shape):
    """Five input sets: the ties and specials scaled to the quantization, then random values."""
    edge = np.concatenate([TIES * np.float32(scale), SPECIAL])
    f32_ties = np.array([0.16014801, -0.23512162, 5.769881], dtype=np.float32)  # ties only in float32
    edge = np.concatenate([edge, f32_ties])
    first = np.resize(edge, n).astype(np.float32)
    sets = [[first.reshape(shape)]]
    sets += [random_inputs([TensorInfo("x", "x", tuple(shape), "float32", 4 * n)], seed=s) for s in range(4)]
    return sets


@pytest.mark.parametrize(
    "out_dtype,shape,scale,zero_point",
    [
        ("int8", [37], 0.01, -5),
        ("int8", [2, 15], 0.0078125, 127),
        ("int8", [1, 4, 3, 2], 0.02, -128),
        ("int8", [3, 7], 1.0, 0),
        ("int16", [2, 3, 7], 0.0001, 0),
        ("int16", [24], 3.0517578125e-05, 0),  # 1/32768: saturates near 1.0
        ("int16", [30], 0.003, -7),
    ],
)
def test_quantize_float_matches_tflm(tmp_path, out_dtype, shape, scale, zero_point):
    model = unary_model("QUANTIZE", shape, "float32", out_dtype, out_q=(scale, zero_point))
    n = int(np.prod(shape))
    assert_matches_oracle(model, tmp_path, inputs=quantize_inputs(scale, n, shape))


def test_quantize_special_values_sanitized(tmp_path):
    """NaN/inf/overflowing quotients must not hit undefined float-to-int conversions."""
    model = unary_model("QUANTIZE", [29], "float32", "int8", out_q=(0.05, -3))
    assert_matches_oracle(model, tmp_path, sanitize=True, inputs=quantize_inputs(0.05, 29, [29]))


@pytest.mark.parametrize(
    "in_dtype,out_dtype,in_q,out_q",
    [
        ("int8", "int8", (0.1, -3), (0.05, 4)),
        ("int8", "int8", (0.05, -128), (0.2, 127)),
        ("int8", "int8", (0.05, 0), (0.05, 20)),  # equal scales, zero point moves
        ("int8", "int8", (0.02, 5), (0.02, 5)),  # identity
        ("int8", "int16", (0.1, -3), (0.001, 0)),
        ("int16", "int8", (0.001, 0), (0.1, 3)),
        ("int16", "int16", (0.001, 5), (0.0005, -7)),
        ("int16", "int16", (0.0005, 0), (0.003, 0)),
    ],
)
def test_requantize_matches_tflm(tmp_path, in_dtype, out_dtype, in_q, out_q):
    model = unary_model("QUANTIZE", [3, 5, 7], in_dtype, out_dtype, in_q, out_q)
    assert_matches_oracle(model, tmp_path, sanitize=(in_dtype, out_dtype) == ("int8", "int16"))


@pytest.mark.parametrize(
    "in_dtype,shape,q",
    [
        ("int8", [37], (0.1, -3)),
        ("int8", [2, 3, 4, 5], (0.02, -128)),
        ("int8", [6, 2], (0.0039, 127)),
        ("int16", [3, 13], (0.001, 0)),
        ("int16", [40], (0.0005, 7)),
    ],
)
def test_dequantize_matches_tflm(tmp_path, in_dtype, shape, q):
    model = unary_model("DEQUANTIZE", shape, in_dtype, "float32", in_q=q)
    assert_matches_oracle(model, tmp_path, sanitize=in_dtype == "int16" and q[1] == 0)


@pytest.mark.parametrize("dtype,in_q,out_q", [("int8", (0.1, -3), (0.05, 4)), ("int16", (0.001, 5), (0.0005, 0))])
def test_requantize_in_place(tmp_path, dtype, in_q, out_q):
    assert_in_place_matches_oracle(unary_model("QUANTIZE", [5, 9], dtype, dtype, in_q, out_q), tmp_path)


def test_quantize_of_constant_is_folded(tmp_path):
    """const float -> QUANTIZE -> CONCATENATION(x, .): folded at compile time, bit-exact with TFLM
    (which quantizes at run time), including ties that round-half-even would get wrong."""
    scale, zp = 0.5, -1
    data = np.concatenate([TIES * np.float32(scale), [0.16014801, 300.0, -300.0]]).astype(np.float32)
    b = ModelBuilder()
    x = b.activation("x", [4, len(data)], "int8", scale=scale, zero_point=zp)
    c = b.constant("c", data.reshape(1, -1))
    q = b.activation("q", [1, len(data)], "int8", scale=scale, zero_point=zp)
    y = b.activation("y", [5, len(data)], "int8", scale=scale, zero_point=zp)
    b.op("QUANTIZE", [c], [q])
    b.op("CONCATENATION", [x, q], [y], concatenation_options(0))
    library = assert_matches_oracle(b.finish([x], [y]), tmp_path)
    assert [o["kind"] for o in library.metadata["operators"]] == ["CONCATENATION"]


def test_dequantize_of_constant_is_folded(tmp_path):
    b = ModelBuilder()
    x = b.activation("x", [2, 3], "float32")
    c = b.constant("c", np.array([[-128, -1, 0], [1, 77, 127]], dtype=np.int8), scale=0.0123, zero_point=-5)
    d = b.activation("d", [2, 3], "float32")
    y = b.activation("y", [2, 6], "float32")
    b.op("DEQUANTIZE", [c], [d])
    b.op("CONCATENATION", [x, d], [y], concatenation_options(-1))
    library = assert_matches_oracle(b.finish([x], [y]), tmp_path)
    assert [o["kind"] for o in library.metadata["operators"]] == ["CONCATENATION"]


INTEGER_PAIRS = [
    ("int8", "int32", (0.1, -3), (0.001, 7), [3, 5]),
    ("int8", "int32", (0.5, 4), (0.0001, -100000), [17]),
    ("int16", "int32", (0.001, 0), (0.00001, 0), [2, 3, 7]),
    ("int16", "int32", (0.001, 5), (0.002, -9), [1]),
    ("int16", "int32", (3.0, 0), (0.0001, 2**31 - 1000), [13]),  # wraps past INT32_MAX as TFLM does
    ("int32", "int8", (0.0001, 0), (0.05, -4), [29]),
    ("int32", "int8", (1e-7, 12345), (0.5, 0), [4, 4]),
    ("int32", "int16", (0.00001, -7), (0.0002, 3), [31]),
    ("int32", "int16", (2.0, 2**31 - 5), (0.5, 0), [9]),  # input zero point wraps
    ("int8", "uint8", (0.1, -3), (0.1, 125), [23]),  # TFLM's xor fast path
    ("int8", "uint8", (0.1, -3), (0.05, 128), [2, 11]),
    ("uint8", "int8", (0.02, 128), (0.02, 0), [23]),  # TFLM's xor fast path
    ("uint8", "int8", (0.03, 120), (0.05, -5), [3, 3, 3]),
]


def test_quantize_integer_pairs_match_tflm(tmp_path):
    """Every integer pair TFLM's QUANTIZE has, including int16 <-> int32 (the issue's), side by side in
    one model (one compile), under the sanitizers."""
    cases = {
        f"{a}->{b} {in_q} {out_q} {shape}": unary_model("QUANTIZE", shape, a, b, in_q, out_q)
        for a, b, in_q, out_q, shape in INTEGER_PAIRS
    }
    library = assert_cases_match_oracle(cases, tmp_path, sanitize=True)
    assert len(library.metadata["outputs"]) == len(INTEGER_PAIRS)


@pytest.mark.parametrize(
    "in_dtype,q", [("int8", ([0.1, 0.2, 0.3], [1, 2, 3])), ("int16", ([0.001, 0.002, 0.003], [0, 0, 0]))]
)
def test_dequantize_per_channel_input_uses_first_parameters(tmp_path, in_dtype, q):
    """TFLM accepts per-channel DEQUANTIZE inputs and applies the first scale and zero point."""
    b = ModelBuilder()
    x = b.activation("x", [2, 3], in_dtype, scale=q[0], zero_point=q[1], axis=1)
    y = b.activation("y", [2, 3], "float32")
    b.op("DEQUANTIZE", [x], [y])
    assert_matches_oracle(b.finish([x], [y]), tmp_path)


def test_dequantize_uint8_matches_tflm(tmp_path):
    model = unary_model("DEQUANTIZE", [5, 7], "uint8", "float32", in_q=(0.037, 131))
    assert_matches_oracle(model, tmp_path, sanitize=True)


@pytest.mark.parametrize(
    "in_dtype,out_dtype",
    [
        ("float32", "uint8"),
        ("float32", "int32"),
        ("int16", "uint8"),
        ("uint8", "int16"),
        ("int32", "int32"),
        ("int32", "uint8"),
    ],
)
def test_quantize_pairs_tflm_lacks_are_refused_in_one_line(tmp_path, in_dtype, out_dtype):
    in_q = (None, None) if in_dtype == "float32" else (0.1, 0)
    model = unary_model("QUANTIZE", [4], in_dtype, out_dtype, in_q, (0.1, 0))
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    result = subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", "compile", str(path), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"{in_dtype} -> {out_dtype} is not supported" in lines[0]


def test_quantize_rejections(tmp_path):
    with pytest.raises(UnsupportedModelError, match=r"QUANTIZE\).*float32 -> float32 is not supported"):
        compile_bytes(unary_model("QUANTIZE", [4], "float32", "float32"), tmp_path / "a")
    with pytest.raises(UnsupportedModelError, match=r"DEQUANTIZE\).*int8 -> int16 is not supported"):
        compile_bytes(unary_model("DEQUANTIZE", [4], "int8", "int16", (0.1, 0), (0.1, 0)), tmp_path / "b")
    b = ModelBuilder()  # per-channel output quantization
    x = b.activation("x", [2, 3], "float32")
    y = b.activation("y", [2, 3], "int8", scale=[0.1, 0.2, 0.3], zero_point=[0, 0, 0], axis=1)
    b.op("QUANTIZE", [x], [y])
    with pytest.raises(UnsupportedModelError, match=r"QUANTIZE\).*per-tensor"):
        compile_bytes(b.finish([x], [y]), tmp_path / "c")


@needs_board_tools
def test_quantize_int8_pairs_on_board(tmp_path):
    """One int8 input through QUANTIZE to int8, int16, int32 and uint8 and DEQUANTIZE, side by side,
    standalone on mps2_an386 (QEMU), bit-exact with TFLM."""
    b = ModelBuilder()
    x = b.activation("x", [3, 7], "int8", scale=0.1, zero_point=-3)
    outs = [
        b.activation("q8", [3, 7], "int8", scale=0.05, zero_point=4),
        b.activation("q16", [3, 7], "int16", scale=0.001, zero_point=0),
        b.activation("q32", [3, 7], "int32", scale=0.0001, zero_point=9),
        b.activation("qu8", [3, 7], "uint8", scale=0.1, zero_point=125),
        b.activation("f", [3, 7], "float32"),
    ]
    for y in outs[:-1]:
        b.op("QUANTIZE", [x], [y])
    b.op("DEQUANTIZE", [x], [outs[-1]])
    assert_matches_oracle_on_board(b.finish([x], outs), tmp_path)
