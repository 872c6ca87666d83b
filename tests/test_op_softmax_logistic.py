"""SOFTMAX and LOGISTIC against the TFLM oracle: int8, int16 and float32, bit-exact for integers.

Each model runs on ten seeded inputs: uniform over the whole dtype range, clustered around a random
centre (small differences, where the fixed-point exp and the table interpolation matter most), and
saturating mixes of extreme values.
"""

import ctypes
import ctypes.util

import numpy as np
import pytest
from harness import assert_matches_oracle, compile_bytes
from model_builder import ModelBuilder, softmax_options

from microcompiler.errors import UnsupportedModelError
from microcompiler.host import HostProgram
from microcompiler.ops import softmax_logistic as sl

N_INPUTS = 10
SOFTMAX_OUT_QUANT = {"int8": (1.0 / 256, -128), "int16": (1.0 / 32768, 0)}


def varied_inputs(shape, dtype, seed=0, float_range=1.0):
    """N_INPUTS input sets: 4 uniform, 4 clustered, 2 saturating (extremes and a constant tensor)."""
    rng = np.random.default_rng(seed)
    sets = []
    if dtype == "float32":
        for k in range(N_INPUTS):
            if k < 4:
                x = rng.uniform(-float_range, float_range, shape)
            elif k < 8:
                x = rng.normal(rng.uniform(-float_range, float_range), 0.05 * float_range * k, shape)
            elif k == 8:
                x = rng.choice([-30.0, -9.5, 0.0, 17.0, 30.0], shape)
            else:
                x = np.full(shape, rng.uniform(-float_range, float_range))
            sets.append([x.astype(np.float32)])
        return sets
    info = np.iinfo(dtype)
    for k in range(N_INPUTS):
        if k < 4:
            x = rng.integers(info.min, info.max, shape, endpoint=True)
        elif k < 8:
            spread = (2, 6, 20, 60)[k - 4] * (1 if dtype == "int8" else 120)
            x = np.rint(rng.normal(rng.integers(info.min, info.max), spread, shape))
        elif k == 8:
            x = rng.choice([info.min, info.min + 1, 0, info.max - 1, info.max], shape)
        else:
            x = np.full(shape, rng.integers(info.min, info.max))
        sets.append([np.clip(x, info.min, info.max).astype(dtype)])
    return sets


def softmax_model(in_dtype, out_dtype, shape, beta=1.0, scale=0.1, zero_point=0):
    b = ModelBuilder()
    if in_dtype == "float32":
        x = b.activation("x", shape, "float32")
        y = b.activation("y", shape, "float32")
    else:
        x = b.activation("x", shape, in_dtype, scale=scale, zero_point=zero_point)
        if in_dtype == "int8" and out_dtype == "int16":
            y = b.activation("y", shape, "int16", scale=1.0 / 65536, zero_point=-32768)
        else:
            out_scale, out_zp = SOFTMAX_OUT_QUANT[out_dtype]
            y = b.activation("y", shape, out_dtype, scale=out_scale, zero_point=out_zp)
    b.op("SOFTMAX", [x], [y], softmax_options(beta))
    return b.finish([x], [y])


def logistic_model(dtype, shape, scale=0.1, zero_point=0, out_scale=None, out_zp=None):
    b = ModelBuilder()
    if dtype == "float32":
        x = b.activation("x", shape, "float32")
        y = b.activation("y", shape, "float32")
    else:
        default_scale, default_zp = (1.0 / 256, -128) if dtype == "int8" else (1.0 / 32768, 0)
        x = b.activation("x", shape, dtype, scale=scale, zero_point=zero_point)
        y = b.activation(
            "y", shape, dtype, scale=out_scale or default_scale, zero_point=default_zp if out_zp is None else out_zp
        )
    b.op("LOGISTIC", [x], [y])
    return b.finish([x], [y])


# (input dtype, output dtype, shape, beta, input scale, input zero point, sanitize)
SOFTMAX_CASES = [
    ("int8", "int8", [1, 12], 1.0, 0.01, -5, False),
    ("int8", "int8", [3, 10], 0.5, 0.1, 0, False),
    ("int8", "int8", [1, 2, 3, 16], 2.0, 0.5, 20, False),
    ("int8", "int8", [3, 10], 1.0, 0.0625, -128, True),
    ("int8", "int16", [3, 10], 1.0, 0.02, 3, False),
    ("int8", "int16", [1, 2, 3, 16], 2.0, 0.25, 0, True),
    ("int16", "int16", [1, 12], 1.0, 0.0005, 0, False),
    ("int16", "int16", [3, 10], 0.5, 0.002, 0, True),
    ("int16", "int16", [1, 2, 3, 16], 2.0, 0.0001, 0, False),
    ("float32", "float32", [1, 12], 1.0, None, None, False),
    ("float32", "float32", [3, 10], 0.5, None, None, False),
    ("float32", "float32", [1, 2, 3, 16], 2.0, None, None, False),
]


@pytest.mark.parametrize(
    "in_dtype,out_dtype,shape,beta,scale,zp,sanitize",
    SOFTMAX_CASES,
    ids=[f"{c[0]}-{c[1]}-{'x'.join(map(str, c[2]))}-b{c[3]}-s{c[4]}" for c in SOFTMAX_CASES],
)
def test_softmax_matches_tflm(tmp_path, in_dtype, out_dtype, shape, beta, scale, zp, sanitize):
    model = softmax_model(in_dtype, out_dtype, shape, beta, scale, zp)
    lib = assert_matches_oracle(
        model,
        tmp_path,
        sanitize=sanitize,
        inputs=varied_inputs(shape, in_dtype, seed=len(shape) + int(beta * 4), float_range=8.0),
    )
    assert lib.metadata["operators"][0]["kind"] == "SOFTMAX"


# (dtype, shape, input scale, input zero point, sanitize)
LOGISTIC_CASES = [
    ("int8", [1, 12], 0.01, 0, False),
    ("int8", [3, 10], 0.1, -10, False),
    ("int8", [1, 2, 3, 16], 0.5, 100, True),
    ("int8", [3, 10], 0.0625, -128, False),
    ("int16", [1, 12], 1.0 / 4096, 0, False),  # power-of-two scale TFLM handles without a multiplier
    ("int16", [3, 10], 0.001, 0, True),
    ("int16", [1, 2, 3, 16], 1.0 / 1024, 0, False),  # power of two, but not 2^-12: general path
    ("int16", [3, 10], 0.0003, 0, False),
    ("int16", [3, 10], 4.0, 0, False),  # multiplier 49152: above TFLM's (debug-only) 32767 check
    ("float32", [1, 12], None, None, False),
    ("float32", [1, 2, 3, 16], None, None, True),
]


@pytest.mark.parametrize(
    "dtype,shape,scale,zp,sanitize",
    LOGISTIC_CASES,
    ids=[f"{c[0]}-{'x'.join(map(str, c[1]))}-s{c[2]}-z{c[3]}" for c in LOGISTIC_CASES],
)
def test_logistic_matches_tflm(tmp_path, dtype, shape, scale, zp, sanitize):
    model = logistic_model(dtype, shape, scale, zp)
    lib = assert_matches_oracle(
        model, tmp_path, sanitize=sanitize, inputs=varied_inputs(shape, dtype, seed=len(shape), float_range=12.0)
    )
    assert lib.metadata["operators"][0]["kind"] == "LOGISTIC"


def test_int16_tables_are_flash_constants(tmp_path):
    lib = compile_bytes(softmax_model("int16", "int16", [1, 12], scale=0.001), tmp_path)
    ops_c = next(text for path, text in lib.files.items() if path.endswith("_ops.c"))
    fn = lib.metadata["operators"][0]["function"]
    assert f"static const int16_t {fn}_exp_lut[513]" in ops_c
    assert f"static const int16_t {fn}_one_over_one_plus_x_lut[513]" in ops_c
    lib = compile_bytes(logistic_model("int16", [4], scale=0.001), tmp_path / "b")
    ops_c = next(text for path, text in lib.files.items() if path.endswith("_ops.c"))
    fn = lib.metadata["operators"][0]["function"]
    assert f"static const int32_t {fn}_segment_base[512]" in ops_c  # the piecewise table (ops/lut16.py)
    assert f"static const int16_t {fn}_segment_slope[512]" in ops_c


def test_exp_table_matches_the_c_library():
    """The int16 softmax table is built with float32 exp; ours must agree with the C library's expf."""
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.expf.restype, libm.expf.argtypes = ctypes.c_float, [ctypes.c_float]
    want = sl.int16_lut(lambda v: np.float32(libm.expf(float(v))), -10.0, 0.0, -1.0, 1.0)
    got = sl.softmax_exp_lut()
    np.testing.assert_array_equal(got, want)
    assert got[-1] == 32767 and 0 <= got.min() <= 2


def _bad_softmax_output(dtype, scale, zp):
    b = ModelBuilder()
    x = b.activation("x", [1, 8], "int8", scale=0.1, zero_point=0)
    y = b.activation("y", [1, 8], dtype, scale=scale, zero_point=zp)
    b.op("SOFTMAX", [x], [y], softmax_options(1.0))
    return b.finish([x], [y])


@pytest.mark.parametrize(
    "model,message",
    [
        (lambda: _bad_softmax_output("int8", 1.0 / 128, -128), "scale 1/256 and zero point -128"),
        (lambda: _bad_softmax_output("int8", 1.0 / 256, 0), "scale 1/256 and zero point -128"),
        (lambda: _bad_softmax_output("int16", 1.0 / 32768, 0), "zero point -32768"),
        (lambda: logistic_model("int8", [4], 0.1, 0, out_zp=0), "zero point must be -128"),
        (lambda: logistic_model("int16", [4], 0.001, 3), "zero points 0"),
        (lambda: logistic_model("int16", [4], 0.001, 0, out_scale=1.0 / 1000), r"2\^-15"),
    ],
)
def test_unsupported_quantization_is_rejected(tmp_path, model, message):
    with pytest.raises(UnsupportedModelError, match=message):
        compile_bytes(model(), tmp_path)


def test_int8_softmax_long_rows(tmp_path):
    """Rows of 512+ elements can sum past what TFLM's int8 softmax handles (it stops with a check
    failure); ours must match it below that limit and give the exact answer, 0 (q = -128), above."""
    shape = [1, 600]
    model = softmax_model("int8", "int8", shape, scale=0.05)
    lib = assert_matches_oracle(model, tmp_path, sanitize=True, inputs=varied_inputs(shape, "int8")[:4])
    program = HostProgram(lib, tmp_path / "flat", sanitize=True)
    flat = program.run([[np.full(shape, 7, dtype=np.int8)]])[0].outputs[0]
    assert flat.shape == (1, 600) and np.all(flat == -128)
