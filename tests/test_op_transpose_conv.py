"""TRANSPOSE_CONV against the TFLM oracle: int8 (per-tensor, per-channel), int16x8 (int64, int16 or no
bias), float32; SAME/VALID, strides 1-3, kernels larger than the stride and smaller, odd channel
counts, batch 2, with and without bias, fused activations; malformed options refused in one line."""

import math
import subprocess
import sys

import numpy as np
import pytest
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from harness import assert_matches_oracle
from model_builder import ACTIVATIONS, PADDINGS, ModelBuilder, _opts
from model_merge import assert_cases_match_oracle


def transpose_conv_options(padding="SAME", stride=(1, 1), activation="NONE"):
    return _opts(
        "TransposeConvOptions",
        padding=PADDINGS[padding],
        strideH=stride[0],
        strideW=stride[1],
        fusedActivationFunction=ACTIVATIONS[activation],
    )


def transposed_size(padding, size, k, stride):
    """The output size a converter gives a transposed convolution of an input of ``size``."""
    return size * stride if padding == "SAME" else (size - 1) * stride + k


def transpose_conv_model(
    dtype="int8",
    hwc=(4, 4, 3),
    kernel=(3, 3),
    out_c=4,
    stride=(2, 2),
    padding="SAME",
    activation="NONE",
    per_channel=True,
    bias="default",
    input_zp=-5,
    output_zp=3,
    batches=1,
    out_hw=None,
    seed=0,
    options=None,
    weights_as_input=False,
    weights=None,
    y_scale=None,
):
    rng = np.random.default_rng(seed)
    h, w, c = hwc
    oh, ow = out_hw or (
        transposed_size(padding, h, kernel[0], stride[0]),
        transposed_size(padding, w, kernel[1], stride[1]),
    )
    if bias == "default":
        bias = {"int8": "int32", "int16": "int64", "float32": "float32"}[dtype]
    b = ModelBuilder()
    shape = b.constant("output_shape", np.array([batches, oh, ow, out_c], dtype=np.int32))
    w_shape = (out_c, *kernel, c)
    model_inputs = []
    if dtype == "float32":
        x = b.activation("x", [batches, h, w, c], "float32")
        if weights_as_input:
            wt = b.activation("w", list(w_shape), "float32")
            model_inputs.append(wt)
        else:
            wt = b.constant("w", rng.normal(0, 0.5, w_shape).astype(np.float32))
        bias_t = b.constant("bias", rng.normal(0, 0.5, out_c).astype(np.float32)) if bias else None
        y = b.activation("y", [batches, oh, ow, out_c], "float32")
    else:
        wide = dtype == "int16"
        x_scale = 0.02
        x = b.activation("x", [batches, h, w, c], dtype, scale=x_scale, zero_point=0 if wide else input_zp)
        w_scale = rng.uniform(0.002, 0.02, out_c if per_channel else 1)
        wt = b.constant(
            "w",
            rng.integers(-127, 128, w_shape, dtype=np.int8) if weights is None else weights,
            scale=w_scale,
            zero_point=[0] * len(w_scale),
            axis=0,
        )
        bias_t = None
        if bias:
            bias_range = {"int64": 40000, "int16": 3000, "int32": 3000}[bias]
            bias_t = b.constant(
                "bias",
                rng.integers(-bias_range, bias_range, out_c).astype(bias),
                scale=list(x_scale * np.resize(w_scale, out_c)),
                zero_point=[0] * out_c,
            )
        taps = max(1, kernel[0] * kernel[1] // (stride[0] * stride[1])) * c
        x_std, target = (18900, 8000) if wide else (74, 40)
        y_scale = y_scale or x_scale * float(np.mean(w_scale)) * math.sqrt(taps) * 74 * x_std / target
        y = b.activation("y", [batches, oh, ow, out_c], dtype, scale=y_scale, zero_point=0 if wide else output_zp)
    inputs = [shape, wt, x] + ([bias_t] if bias_t is not None else [])
    b.op("TRANSPOSE_CONV", inputs, [y], options or transpose_conv_options(padding, stride, activation))
    return b.finish([x, *model_inputs], [y])


CASES = {
    "i8_3x3_s2_same_pc": dict(),
    "i8_3x3_s1_same_pt_zp-128": dict(stride=(1, 1), per_channel=False, input_zp=-128, output_zp=127),
    "i8_2x2_s2_valid": dict(kernel=(2, 2), padding="VALID", hwc=(3, 5, 2), out_c=3),
    "i8_4x3_s3x2_valid_nobias": dict(kernel=(4, 3), stride=(3, 2), padding="VALID", bias=None, hwc=(3, 4, 5)),
    "i8_5x5_s2_same_odd_out": dict(kernel=(5, 5), hwc=(3, 3, 7), out_c=5, out_hw=(5, 7)),
    "i8_1x1_s1_1elem": dict(kernel=(1, 1), stride=(1, 1), hwc=(1, 1, 1), out_c=1),
    "i8_batch2_relu": dict(batches=2, activation="RELU", hwc=(3, 2, 3)),
    "i8_relu6": dict(activation="RELU6", output_zp=-100),
    "i16_3x3_s2_int64_relu": dict(dtype="int16", activation="RELU"),
    "i16_3x3_s1_int16_bias": dict(dtype="int16", bias="int16", stride=(1, 1), hwc=(5, 3, 4)),
    "i16_2x2_s2_valid_nobias_pt": dict(dtype="int16", bias=None, kernel=(2, 2), padding="VALID", per_channel=False),
    "f32_3x3_s2_same": dict(dtype="float32"),
    "f32_3x2_s1_valid_relu6": dict(dtype="float32", kernel=(3, 2), stride=(1, 1), padding="VALID", activation="RELU6"),
    "f32_nobias_relu_n1": dict(dtype="float32", bias=None, activation="RELU_N1_TO_1", batches=2),
    "f32_relu_s3": dict(dtype="float32", activation="RELU", stride=(3, 3), kernel=(2, 4), hwc=(2, 3, 3)),
    "f32_weights_as_input": dict(dtype="float32", weights_as_input=True, hwc=(2, 2, 2), out_c=2),
}


@pytest.mark.parametrize("dtype", ["int8", "int16", "float32"])
def test_transpose_conv_matches_tflm(tmp_path, dtype):
    """The cases of one type side by side in one model (one compile), each output checked."""
    names = [n for n, case in CASES.items() if case.get("dtype", "int8") == dtype]
    library = assert_cases_match_oracle({n: transpose_conv_model(**CASES[n]) for n in names}, tmp_path, n_inputs=3)
    assert len(library.metadata["outputs"]) == len(names)


def test_transpose_conv_sanitized(tmp_path):
    assert_matches_oracle(
        transpose_conv_model(kernel=(3, 2), stride=(2, 3), hwc=(3, 3, 2)), tmp_path, n_inputs=2, sanitize=True
    )
    assert_matches_oracle(
        transpose_conv_model(dtype="int16", bias="int16"), tmp_path / "i16", n_inputs=2, sanitize=True
    )


def _cli_compile(model: bytes, tmp_path):
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    return subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", "compile", str(path), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(options=_opts("TransposeConvOptions", padding=0, strideH=0, strideW=1)), "stride 0x1 is not supported"),
        (
            dict(options=_opts("TransposeConvOptions", padding=0, strideH=1, strideW=1, fusedActivationFunction=4)),
            "fused activation TANH is not supported",
        ),
        (dict(bias="int64"), "int8 needs an int32 bias, not int64"),
        (dict(dtype="int16", bias="int32"), "int16 needs an int64 or int16 bias, not int32"),
    ],
)
def test_transpose_conv_malformed_is_one_line(tmp_path, kwargs, message):
    result = _cli_compile(transpose_conv_model(**kwargs), tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "TRANSPOSE_CONV" in lines[0] and message in lines[0], lines[0]


def test_transpose_conv_channel_mismatch_is_one_line(tmp_path):
    b = ModelBuilder()
    shape = b.constant("output_shape", np.array([1, 4, 4, 2], dtype=np.int32))
    wt = b.constant("w", np.ones((2, 3, 3, 5), dtype=np.float32))
    x = b.activation("x", [1, 2, 2, 3], "float32")
    y = b.activation("y", [1, 4, 4, 2], "float32")
    b.op("TRANSPOSE_CONV", [shape, wt, x], [y], transpose_conv_options("SAME", (2, 2)))
    result = _cli_compile(b.finish([x], [y]), tmp_path)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "input has 3 channels but the weights take 5" in result.stderr


@needs_board_tools
def test_transpose_conv_int8_on_board(tmp_path):
    """int8 TRANSPOSE_CONV standalone on mps2_an386 (QEMU), bit-exact with TFLM."""
    assert_matches_oracle_on_board(transpose_conv_model(kernel=(3, 3), stride=(2, 2), hwc=(3, 4, 3)), tmp_path)
