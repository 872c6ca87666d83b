"""Standalone RELU and RELU6 against the TFLM oracle: int8 (incl. requantizing RELU), int16, float32,
plus in-place execution (output buffer == input buffer); RELU_N1_TO_1, which TFLM does not run."""

import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
from harness import FLOAT_RTOL, assert_matches_oracle, compile_bytes
from model_builder import ModelBuilder
from oracle import Oracle

from microcompiler.codegen.model_info import TensorInfo
from microcompiler.errors import UnsupportedModelError
from microcompiler.host import SANITIZE_CFLAGS, STRICT_CFLAGS, HostProgram, compiler
from microcompiler.inputs import random_inputs


def unary_model(kind, shape, in_dtype, out_dtype, in_q=(None, None), out_q=(None, None)):
    b = ModelBuilder()
    x = b.activation("x", shape, in_dtype, scale=in_q[0], zero_point=in_q[1])
    y = b.activation("y", shape, out_dtype, scale=out_q[0], zero_point=out_q[1])
    b.op(kind, [x], [y])
    return b.finish([x], [y])


def assert_in_place_matches_oracle(model_bytes, tmp_path: Path, seed: int = 0):
    """Call the model's single operator function with one buffer as both input and output."""
    tmp_path = Path(tmp_path)
    library = compile_bytes(model_bytes, tmp_path)
    (fn,) = library.functions
    meta_in, meta_out = library.info.inputs[0], library.info.outputs[0]
    x = random_inputs([meta_in], seed=seed)[0]
    assert meta_in.dtype == meta_out.dtype, "in place needs equal element sizes"
    lib_dir = tmp_path / "lib"
    library.write(lib_dir)
    ctype = {"int8": "int8_t", "int16": "int16_t", "float32": "float"}[meta_in.dtype]
    is_float = meta_out.dtype == "float32"
    values = ", ".join(repr(float(v)) + "f" if is_float else str(int(v)) for v in x.ravel())
    fmt, cast = ('"%.9g\\n"', "(double)") if is_float else ('"%ld\\n"', "(long)")
    main = tmp_path / "in_place.c"
    main.write_text(
        '#include <stdint.h>\n#include <stdio.h>\n#include "model.h"\n'
        f"static {ctype} buf[{x.size}] = {{{values}}};\n"
        "int main(void) {\n  int i;\n"
        f"  {fn.name}(buf, ({ctype}*)buf);\n"
        f"  for (i = 0; i < {x.size}; ++i) printf({fmt}, {cast}buf[i]);\n  return 0;\n}}\n"
    )
    exe = tmp_path / "in_place"
    subprocess.run(
        [
            *compiler(),
            *STRICT_CFLAGS,
            *SANITIZE_CFLAGS,
            f"-I{lib_dir / 'include'}",
            str(main),
            str(lib_dir / "src" / "model_ops.c"),
            "-o",
            str(exe),
            "-lm",
        ],
        check=True,
    )
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    want = Oracle(model_bytes).run([x])[0].ravel()
    if is_float:
        np.testing.assert_allclose(np.array(out, dtype=np.float32), want, rtol=FLOAT_RTOL, atol=1e-6)
    else:
        np.testing.assert_array_equal(np.array(out, dtype=np.int64), want.astype(np.int64))


INT8_CASES = [  # (shape, input (scale, zero point), output (scale, zero point))
    ([37], (0.05, -3), (0.05, -3)),  # same quantization: a clamp
    ([2, 9], (0.1, -128), (0.1, -128)),
    ([3, 4, 5], (0.02, 127), (0.02, 127)),
    ([1, 4, 4, 3], (0.1, -3), (0.05, 4)),  # requantizes (scale ratio 2)
    ([1, 6, 7], (0.02, 127), (0.1, -128)),  # ratio < 1, extreme zero points
    ([5, 8], (0.05, 0), (0.05, 20)),  # equal scales, zero point moves
    ([64], (0.3, 10), (0.007, -100)),  # large ratio, saturates
]


@pytest.mark.parametrize("shape,in_q,out_q", INT8_CASES)
@pytest.mark.parametrize("kind", ["RELU", "RELU6"])
def test_int8_activation_matches_tflm(tmp_path, kind, shape, in_q, out_q):
    # RELU6 ignores the output quantization in TFLM (clamps in the input's); RELU requantizes.
    assert_matches_oracle(unary_model(kind, shape, "int8", "int8", in_q, out_q), tmp_path)


@pytest.mark.parametrize(
    "kind,in_scale,out_scale",
    [
        ("RELU", 0.001, 0.001),
        ("RELU", 0.002, 0.0005),
        ("RELU", 0.0005, 0.003),
        ("RELU6", 0.001, 0.001),
        ("RELU6", 0.0001, 0.0001),  # 6.0 beyond int16 range: clamps at 32767
    ],
)
def test_int16_activation_matches_tflm(tmp_path, kind, in_scale, out_scale):
    model = unary_model(kind, [2, 3, 11], "int16", "int16", (in_scale, 0), (out_scale, 0))
    assert_matches_oracle(model, tmp_path)


@pytest.mark.parametrize("kind", ["RELU", "RELU6"])
def test_float_activation_matches_tflm(tmp_path, kind):
    model = unary_model(kind, [1, 3, 5, 2], "float32", "float32")
    big = [np.linspace(-10, 10, 30, dtype=np.float32).reshape(1, 3, 5, 2)]  # crosses 0 and 6
    assert_matches_oracle(
        model,
        tmp_path,
        inputs=[big] + [random_inputs([TensorInfo("x", "x", (1, 3, 5, 2), "float32", 120)], seed=s) for s in range(4)],
    )


@pytest.mark.parametrize(
    "kind,dtype,in_q,out_q",
    [
        ("RELU", "int8", (0.1, -3), (0.05, 4)),
        ("RELU6", "float32", (None, None), (None, None)),
    ],
)
def test_activation_sanitized(tmp_path, kind, dtype, in_q, out_q):
    assert_matches_oracle(unary_model(kind, [3, 17], dtype, dtype, in_q, out_q), tmp_path, sanitize=True)


@pytest.mark.parametrize(
    "kind,dtype,in_q,out_q",
    [
        ("RELU", "int8", (0.1, -3), (0.05, 4)),
        ("RELU6", "int16", (0.001, 0), (0.001, 0)),
        ("RELU", "float32", (None, None), (None, None)),
    ],
)
def test_activation_in_place(tmp_path, kind, dtype, in_q, out_q):
    assert_in_place_matches_oracle(unary_model(kind, [4, 13], dtype, dtype, in_q, out_q), tmp_path)


def test_activation_rejections(tmp_path):
    with pytest.raises(UnsupportedModelError, match=r"RELU\).*zero points must be 0"):
        compile_bytes(unary_model("RELU", [4], "int16", "int16", (0.01, 3), (0.01, 0)), tmp_path / "a")
    with pytest.raises(UnsupportedModelError, match=r"RELU6\).*differs from input type"):
        compile_bytes(unary_model("RELU6", [4], "int8", "int16", (0.01, 0), (0.01, 0)), tmp_path / "b")


# ---- RELU_N1_TO_1 -------------------------------------------------------------------------------
# TFLM does not register RELU_N1_TO_1 (its interpreter refuses the model), so there is no oracle:
# the kernel follows TFLite's (QuantizedReluX with the clamp at the quantized -1.0 and 1.0 of the
# output), checked here against an independent Python model of that integer arithmetic.


def _rounding_doubling_high_mul(a: int, b: int) -> int:
    if a == b == -(2**31):
        return 2**31 - 1
    ab = a * b
    total = ab + ((1 << 30) if ab >= 0 else 1 - (1 << 30))
    return abs(total) // (1 << 31) * (1 if total >= 0 else -1)  # C division truncates toward zero


def _rounding_divide_by_pot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if (x & mask) > threshold else 0)


def relu_n1_to_1_reference(x: np.ndarray, in_q, out_q) -> np.ndarray:
    """TFLite's int8 RELU_N1_TO_1, written out in Python integers."""
    real = float(np.float32(in_q[0])) / float(np.float32(out_q[0]))
    fraction, shift = math.frexp(real)
    multiplier = math.floor(fraction * (1 << 31) + 0.5)
    if multiplier == 1 << 31:
        multiplier, shift = multiplier // 2, shift + 1
    steps = math.floor(float(np.float32(1.0) / np.float32(out_q[0])) + 0.5)  # roundf(1.0f / scale)
    lo, hi = max(-128, out_q[1] - steps), min(127, out_q[1] + steps)
    out = []
    for v in x.ravel().astype(int):
        scaled = _rounding_doubling_high_mul((v - in_q[1]) * (1 << max(shift, 0)), multiplier)
        out.append(min(max(out_q[1] + _rounding_divide_by_pot(scaled, max(-shift, 0)), lo), hi))
    return np.array(out, dtype=np.int8).reshape(x.shape)


RELU_N1_TO_1_INT8 = [  # (input (scale, zero point), output (scale, zero point))
    ((0.01, -3), (0.01, -3)),  # same quantization: a clamp at -100 and 100 steps from zero
    ((0.05, 10), (0.02, -20)),  # requantizes
    ((0.002, 127), (0.01, 0)),
    ((0.1, 0), (0.1, 0)),  # +-1.0 only 10 steps away
]


def test_relu_n1_to_1_is_not_in_tflm():
    with pytest.raises(RuntimeError):  # the interpreter has no such operator
        Oracle(unary_model("RELU_N1_TO_1", [4], "float32", "float32"))


@pytest.mark.parametrize("in_q,out_q", RELU_N1_TO_1_INT8)
def test_int8_relu_n1_to_1_matches_tflite_arithmetic(tmp_path, in_q, out_q):
    x = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)
    lib = compile_bytes(unary_model("RELU_N1_TO_1", [16, 16], "int8", "int8", in_q, out_q), tmp_path)
    got = HostProgram(lib, tmp_path / "build", sanitize=True).run([[x]])[0].outputs[0]
    np.testing.assert_array_equal(got, relu_n1_to_1_reference(x, in_q, out_q))


def test_float_relu_n1_to_1_clamps_and_keeps_nan(tmp_path):
    x = np.array([-3.0, -1.0, -0.5, -0.0, 0.0, 0.25, 1.0, 1.5, np.inf, -np.inf, np.nan], dtype=np.float32)
    lib = compile_bytes(unary_model("RELU_N1_TO_1", [x.size], "float32", "float32"), tmp_path)
    got = HostProgram(lib, tmp_path / "build").run([[x]])[0].outputs[0]
    np.testing.assert_array_equal(got, [-1.0, -1.0, -0.5, -0.0, 0.0, 0.25, 1.0, 1.0, 1.0, -1.0, np.nan])


def test_relu_n1_to_1_rejects_int16(tmp_path):
    with pytest.raises(UnsupportedModelError, match=r"RELU_N1_TO_1\).*input type int16 is not supported"):
        compile_bytes(unary_model("RELU_N1_TO_1", [4], "int16", "int16", (0.01, 0), (0.01, 0)), tmp_path)
