"""CAST against the TFLM oracle: every pair of float32, int8, int16, int32, uint32 and bool, bit for bit,
including NaN, infinities and out-of-range floats (TFLM saturates them), integer narrowing (wraps),
quantized tensors (their parameters are ignored) and constant folding."""

import subprocess
import sys

import model_builder
import numpy as np
import pytest
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from harness import assert_matches_oracle, compile_bytes
from model_builder import ModelBuilder, fb

from microcompiler.errors import UnsupportedModelError

model_builder.TYPES.setdefault("bool", fb.TensorType.BOOL)
model_builder.TYPES.setdefault("uint32", fb.TensorType.UINT32)

TYPES = ["float32", "int8", "int16", "int32", "uint32", "bool"]
SHAPES = {"float32": [4, 11], "int8": [1], "int16": [3, 7], "int32": [2, 2, 5], "uint32": [2, 9], "bool": [13]}
# Float values around every type's limits, ties, fractions of both signs, NaN and infinities.
FLOAT_EDGES = np.array(
    [
        np.nan,
        np.inf,
        -np.inf,
        -0.0,
        0.0,
        1e-45,
        0.99,
        -0.99,
        1.5,
        -1.5,
        127.5,
        128.0,
        -128.9,
        -129.0,
        255.7,
        32767.5,
        32768.0,
        -32768.9,
        -32769.0,
        65535.9,
        2147483520.0,
        2147483648.0,
        -2147483648.0,
        -2147483904.0,
        3e9,
        -3e9,
        4294967040.0,
        5e9,
        3.4028235e38,
        -3.4028235e38,
        16777217.0,
        -7.75,
        100.25,
        -100.25,
        1e-3,
        -1e-3,
        1e20,
        -1e20,
        0.5,
        -0.5,
        42.0,
        2.0,
        -2.0,
        9.99,
    ],
    dtype=np.float32,
)


def cast_model(src, dsts, shape, src_q=(None, None), dst_q=(None, None), options=None) -> bytes:
    """One input of type src cast to each type in dsts (one output each)."""
    b = ModelBuilder()
    x = b.activation("x", shape, src, scale=src_q[0], zero_point=src_q[1])
    outputs = []
    for dst in dsts:
        q = dst_q if dst in ("int8", "int16") else (None, None)
        y = b.activation(f"to_{dst}", shape, dst, scale=q[0], zero_point=q[1])
        b.op("CAST", [x], [y], options)
        outputs.append(y)
    return b.finish([x], outputs)


def source_values(src, shape, seed) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if src == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if src == "float32":
        x = rng.uniform(-1e5, 1e5, size=shape).astype(np.float32)
        x.ravel()[: len(FLOAT_EDGES)] = FLOAT_EDGES[: x.size]
        return x
    info = np.iinfo(src)
    x = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=src)
    edges = [info.min, info.max, -1, 0, 1, 128, -129, 32768, -32769][: x.size]
    x.ravel()[: len(edges)] = np.array(edges, dtype=np.int64).astype(src)
    return x


@pytest.mark.parametrize("src", TYPES)
def test_cast_to_every_type_matches_tflm(tmp_path, src):
    shape = SHAPES[src]
    model = cast_model(src, TYPES, shape)
    assert_matches_oracle(
        model, tmp_path, inputs=[[source_values(src, shape, s)] for s in range(3)], sanitize=src == "float32"
    )  # float -> int is where C has undefined behaviour


def test_cast_ignores_quantization_and_options(tmp_path):
    # TFLM converts the stored values: scales and zero points play no part, and neither do the
    # options' data types (here contradicting the tensors).
    options = model_builder._opts("CastOptions", inDataType=fb.TensorType.INT64, outDataType=fb.TensorType.UINT8)
    model = cast_model(
        "int8", ["float32", "int16", "int32"], [3, 5], src_q=(0.05, -7), dst_q=(0.3, 11), options=options
    )
    assert_matches_oracle(model, tmp_path, n_inputs=2)


def test_cast_of_constants_folds_to_flash(tmp_path):
    # c -> CAST(int32 / int8 / bool / int16 / uint32) -> CAST(float32) -> output: the first CAST of each chain
    # has a constant input and is computed at compile time (what the C code computes), the second
    # writes a model output and runs.
    b = ModelBuilder()
    c = b.constant("c", FLOAT_EDGES.reshape(4, 11))
    outputs = []
    for dst in ["int32", "int8", "bool", "int16", "uint32"]:
        mid = b.activation(f"mid_{dst}", [4, 11], dst)
        y = b.activation(f"y_{dst}", [4, 11], "float32")
        b.op("CAST", [c], [mid])
        b.op("CAST", [mid], [y])
        outputs.append(y)
    x = b.activation("x", [4, 11], "float32")
    ones = b.activation("ones", [4, 11], "int32")
    b.op("CAST", [x], [ones])
    model = b.finish([x], outputs + [ones])
    library = assert_matches_oracle(model, tmp_path, n_inputs=1)
    assert len(library.functions) == 6  # five second CASTs and the one of the model input


@pytest.mark.parametrize(
    "src,dst,message",
    [
        ("int64", "float32", "input type int64 is not supported"),
        ("float32", "uint8", "output type uint8 is not supported"),
    ],
)
def test_unsupported_types_are_rejected(tmp_path, src, dst, message):
    with pytest.raises(UnsupportedModelError, match=rf"operator 0 \(CAST\): {message}"):
        compile_bytes(cast_model(src, [dst], [4]), tmp_path)


def test_mismatched_shapes_give_one_line_error(tmp_path):
    b = ModelBuilder()
    x, y = b.activation("x", [2, 3], "int8"), b.activation("y", [5], "float32")
    b.op("CAST", [x], [y])
    path = tmp_path / "m.tflite"
    path.write_bytes(b.finish([x], [y]))
    proc = subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", "compile", str(path), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "operator 0 (CAST): input shape [2, 3] and output shape [5]" in lines[0], lines


@needs_board_tools
def test_cast_on_board(tmp_path):
    # int8 to every type, and float32 edge values (saturation, truncation) to every type, standalone
    # in QEMU. (Finite values: baked-in NaN and infinity inputs need the project's initialisers to
    # write them by bit pattern.)
    edges = FLOAT_EDGES[np.isfinite(FLOAT_EDGES)]
    b = ModelBuilder()
    x8 = b.activation("x8", [9], "int8", scale=0.1, zero_point=3)
    xf = b.activation("xf", [len(edges)], "float32")
    outputs = []
    for src, x, n in (("int8", x8, 9), ("float32", xf, len(edges))):
        for dst in TYPES:
            y = b.activation(f"{src}_to_{dst}", [n], dst)
            b.op("CAST", [x], [y])
            outputs.append(y)
    model = b.finish([x8, xf], outputs)
    inputs = [source_values("int8", [9], 0), edges]
    assert_matches_oracle_on_board(model, tmp_path, inputs=inputs)
