"""DEPTHWISE_CONV_2D against the TFLM oracle: int8 (per-tensor, per-channel), int16x8, float32.

A curated list of cases covering depth multipliers 1-3, strides 1-3, SAME/VALID, 1x1, 3x3, 5x3 and
larger-than-input kernels, dilation 2, all fused activations, odd channel counts, batch 2 and input
zero points -128..127.
"""

import numpy as np
import pytest
from harness import assert_matches_oracle, compile_bytes
from test_op_conv_2d import conv_model

from microcompiler.errors import UnsupportedModelError


def dw(**kwargs):
    return conv_model(kind="DEPTHWISE_CONV_2D", **kwargs)


CASES = {
    # int8
    "i8_3x3_same_pc": dict(),
    "i8_3x3_valid_s2_m2_pt_relu_zp-128": dict(
        hwc=(9, 7, 2),
        depth_multiplier=2,
        stride=(2, 2),
        padding="VALID",
        activation="RELU",
        per_channel=False,
        input_zp=-128,
    ),
    "i8_5x3_same_s3_m3_relu6_zp127": dict(
        hwc=(7, 9, 3), kernel=(5, 3), depth_multiplier=3, stride=(3, 3), activation="RELU6", input_zp=127, output_zp=-9
    ),
    "i8_kernel_bigger_than_input": dict(hwc=(3, 2, 5), kernel=(5, 5), activation="RELU_N1_TO_1", bias=None, input_zp=0),
    "i8_dilation2_pt_m2": dict(hwc=(9, 9, 3), dilation=(2, 2), per_channel=False, depth_multiplier=2, input_zp=10),
    "i8_dilation_mixed_stride_mixed": dict(
        hwc=(10, 11, 1), kernel=(3, 2), stride=(1, 2), dilation=(2, 1), padding="VALID", depth_multiplier=3, input_zp=-1
    ),
    "i8_1x1_single": dict(hwc=(1, 1, 1), kernel=(1, 1), padding="VALID", input_zp=127),
    "i8_1x1_same_s2_folded": dict(hwc=(6, 6, 7), kernel=(1, 1), stride=(2, 2), input_zp=-128),
    "i8_batch2_s2_same": dict(hwc=(5, 6, 3), stride=(2, 2), batches=2, per_channel=False),
    # int16x8
    "i16_3x3_same_pc": dict(dtype="int16"),
    "i16_valid_s2_m2": dict(dtype="int16", hwc=(7, 7, 5), depth_multiplier=2, stride=(2, 2), padding="VALID"),
    "i16_no_bias_dilation2_m3": dict(dtype="int16", hwc=(6, 7, 2), depth_multiplier=3, dilation=(2, 2), bias=None),
    "i16_5x3_s3_relu6_pt": dict(
        dtype="int16", hwc=(8, 9, 3), kernel=(5, 3), stride=(3, 3), activation="RELU6", per_channel=False
    ),
    "i16_kernel_bigger_relu_n1": dict(
        dtype="int16", hwc=(2, 3, 1), kernel=(4, 5), depth_multiplier=2, activation="RELU_N1_TO_1"
    ),
    # float32
    "f32_3x3_same": dict(dtype="float32"),
    "f32_valid_s2_d2_relu_m2": dict(
        dtype="float32",
        hwc=(11, 10, 3),
        stride=(2, 2),
        dilation=(2, 2),
        padding="VALID",
        activation="RELU",
        depth_multiplier=2,
    ),
    "f32_kernel_bigger_no_bias_relu6_m3": dict(
        dtype="float32", hwc=(3, 3, 2), kernel=(5, 4), bias=None, activation="RELU6", stride=(3, 1), depth_multiplier=3
    ),
    "f32_1x1_relu_n1": dict(dtype="float32", hwc=(4, 5, 7), kernel=(1, 1), activation="RELU_N1_TO_1"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_depthwise_conv_2d_matches_tflm(tmp_path, case):
    lib = assert_matches_oracle(dw(**CASES[case]), tmp_path)
    op = lib.metadata["operators"][0]
    assert op["kind"] == "DEPTHWISE_CONV_2D"
    kh, kw = CASES[case].get("kernel", (3, 3))
    assert op["macs"] == int(np.prod(op["outputs"][0])) * kh * kw


def test_depthwise_conv_2d_sanitized(tmp_path):
    """ASan + UBSan over padding edges, strides, a depth multiplier and both dtypes."""
    assert_matches_oracle(
        dw(hwc=(5, 6, 3), kernel=(4, 3), stride=(2, 3), depth_multiplier=2, input_zp=-128),
        tmp_path,
        sanitize=True,
        n_inputs=3,
    )
    assert_matches_oracle(
        dw(dtype="int16", hwc=(5, 4, 3), dilation=(2, 1)), tmp_path / "i16", sanitize=True, n_inputs=3
    )


def _reference_source(model: bytes, tmp_path):
    from microcompiler.compiler import compile_model

    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "model.tflite").write_bytes(model)
    lib = compile_model(tmp_path / "model.tflite", tuning={"DEPTHWISE_CONV_2D": {"variant": "reference"}})
    return lib.files["src/model_ops.c"]


def test_depthwise_conv_2d_folds_input_offset_without_padding(tmp_path):
    """The reference loops: without padding the input zero point is folded into the bias; with
    padding it stays per tap."""
    src = _reference_source(dw(padding="VALID", input_zp=-5), tmp_path)
    assert "- INPUT_ZERO_POINT)" not in src and "_bias[oc]" in src
    src = _reference_source(dw(padding="SAME", input_zp=-5), tmp_path / "same")
    assert "INPUT_ZERO_POINT = -5" in src and "- INPUT_ZERO_POINT)" in src


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(activation="TANH"), "fused activation TANH is not supported"),
        (dict(dtype="int16", bias="int32"), "int16x8 needs an int64 bias"),
    ],
)
def test_depthwise_conv_2d_rejects(tmp_path, kwargs, message):
    with pytest.raises(UnsupportedModelError, match=message) as info:
        compile_bytes(dw(**kwargs), tmp_path)
    assert "DEPTHWISE_CONV_2D" in str(info.value)
