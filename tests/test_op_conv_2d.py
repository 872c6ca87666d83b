"""CONV_2D against the TFLM oracle: int8 (per-tensor, per-channel), int16x8 (int64/int32/no bias), float32.

A curated list of cases (not a cartesian product) covering strides 1-3, SAME/VALID, 1x1, 3x3, 5x3 and
larger-than-input kernels, dilation 2, all fused activations, odd channel counts, batch 2, grouped
convolution and input zero points -128..127. ``conv_model`` also builds DEPTHWISE_CONV_2D models.
"""

import math
import re

import numpy as np
import pytest
from harness import assert_matches_oracle, compile_bytes
from model_builder import ModelBuilder, conv2d_options, depthwise_options

from microcompiler.errors import ModelFormatError, UnsupportedModelError


def out_size(padding, size, k, stride, dilation):
    eff = (k - 1) * dilation + 1
    return math.ceil(size / stride) if padding == "SAME" else math.ceil((size - eff + 1) / stride)


def conv_model(
    kind="CONV_2D",
    dtype="int8",
    hwc=(8, 8, 3),
    kernel=(3, 3),
    out_c=4,
    stride=(1, 1),
    padding="SAME",
    dilation=(1, 1),
    activation="NONE",
    per_channel=True,
    bias="default",
    input_zp=-5,
    output_zp=3,
    batches=1,
    depth_multiplier=1,
    groups=1,
    seed=0,
    weights=None,
    bias_range=None,
):
    """A one-operator CONV_2D or DEPTHWISE_CONV_2D model with seeded random weights.

    bias: "default" (int32 for int8, int64 for int16, float32 for float32), None, or a dtype name.
    For DEPTHWISE_CONV_2D, out_c is ignored (it is channels * depth_multiplier). ``weights`` replaces
    the random int8 weights. ``bias_range``: the integer biases' bound (default 3000 for int8, 40000
    for int16).
    """
    rng = np.random.default_rng(seed)
    h, w, c = hwc
    depthwise = kind == "DEPTHWISE_CONV_2D"
    oc = c * depth_multiplier if depthwise else out_c
    w_shape = (1, *kernel, oc) if depthwise else (oc, *kernel, c // groups)
    taps = kernel[0] * kernel[1] * (1 if depthwise else c // groups)
    oh, ow = (
        out_size(padding, h, kernel[0], stride[0], dilation[0]),
        out_size(padding, w, kernel[1], stride[1], dilation[1]),
    )
    b = ModelBuilder()
    if bias == "default":
        bias = {"int8": "int32", "int16": "int64", "float32": "float32"}[dtype]
    if dtype == "float32":
        x = b.activation("x", [batches, h, w, c], "float32")
        wt = b.constant("w", rng.normal(0, 0.5, w_shape).astype(np.float32))
        inputs = [x, wt]
        if bias:
            inputs.append(b.constant("bias", rng.normal(0, 0.5, oc).astype(np.float32)))
        y = b.activation("y", [batches, oh, ow, oc], "float32")
    else:
        wide = dtype == "int16"
        x_scale = 0.02
        x = b.activation("x", [batches, h, w, c], dtype, scale=x_scale, zero_point=0 if wide else input_zp)
        w_scale = rng.uniform(0.002, 0.02, oc if per_channel else 1)
        w_data = rng.integers(-127, 128, w_shape, dtype=np.int8) if weights is None else weights
        wt = b.constant(
            "w", w_data.astype(np.int8), scale=w_scale, zero_point=[0] * len(w_scale), axis=3 if depthwise else 0
        )
        inputs = [x, wt]
        if bias:
            bias_range = bias_range or (40000 if wide else 3000)
            bias_scales = x_scale * (w_scale if per_channel else np.full(oc, w_scale[0]))
            inputs.append(
                b.constant(
                    "bias",
                    rng.integers(-bias_range, bias_range, oc).astype(bias),
                    scale=list(bias_scales),
                    zero_point=[0] * oc,
                )
            )
        # Aim the output at roughly a third of the quantized range so clamping is exercised but rare.
        x_std, target = (18900, 8000) if wide else (74, 40)
        y_scale = x_scale * float(np.mean(w_scale)) * math.sqrt(taps) * 74 * x_std / target
        y = b.activation("y", [batches, oh, ow, oc], dtype, scale=y_scale, zero_point=0 if wide else output_zp)
    if depthwise:
        options = depthwise_options(padding, stride, dilation, depth_multiplier, activation)
    else:
        options = conv2d_options(padding, stride, dilation, activation)
    b.op(kind, inputs, [y], options)
    return b.finish([x], [y])


CASES = {
    # int8
    "i8_3x3_same_pc": dict(),
    "i8_3x3_valid_s2_pt_relu_zp-128": dict(
        hwc=(9, 7, 5), out_c=7, stride=(2, 2), padding="VALID", activation="RELU", per_channel=False, input_zp=-128
    ),
    "i8_5x3_same_s3_relu6_zp127": dict(
        hwc=(7, 9, 3), kernel=(5, 3), out_c=5, stride=(3, 3), activation="RELU6", input_zp=127, output_zp=-7
    ),
    "i8_kernel_bigger_than_input": dict(
        hwc=(3, 2, 2), kernel=(5, 5), out_c=3, activation="RELU_N1_TO_1", bias=None, input_zp=0
    ),
    "i8_dilation2_pt": dict(hwc=(9, 9, 3), dilation=(2, 2), per_channel=False, input_zp=10),
    "i8_dilation_mixed_stride_mixed": dict(
        hwc=(10, 11, 1), kernel=(3, 2), out_c=1, stride=(1, 2), dilation=(2, 1), padding="VALID", input_zp=-1
    ),
    "i8_1x1_all_ones": dict(hwc=(1, 1, 1), kernel=(1, 1), out_c=1, padding="VALID", input_zp=127),
    "i8_1x1_same_s2_folded": dict(
        hwc=(6, 6, 7), kernel=(1, 1), out_c=3, stride=(2, 2), input_zp=-128, activation="RELU"
    ),
    "i8_batch2_s2_same": dict(hwc=(5, 6, 3), out_c=2, stride=(2, 2), batches=2, per_channel=False),
    "i8_grouped": dict(hwc=(6, 6, 6), out_c=4, groups=2, input_zp=7),
    # int16x8
    "i16_3x3_same_pc_int64_bias": dict(dtype="int16"),
    "i16_3x3_valid_s2_int32_bias": dict(
        dtype="int16", hwc=(7, 7, 5), out_c=3, stride=(2, 2), padding="VALID", bias="int32"
    ),
    "i16_no_bias_dilation2": dict(dtype="int16", hwc=(6, 7, 4), out_c=3, dilation=(2, 2), bias=None),
    "i16_5x3_s3_relu6_pt": dict(
        dtype="int16", hwc=(8, 9, 3), kernel=(5, 3), out_c=5, stride=(3, 3), activation="RELU6", per_channel=False
    ),
    "i16_kernel_bigger_relu_n1": dict(dtype="int16", hwc=(2, 3, 1), kernel=(4, 5), out_c=3, activation="RELU_N1_TO_1"),
    # float32
    "f32_3x3_same": dict(dtype="float32"),
    "f32_valid_s2_d2_relu": dict(
        dtype="float32", hwc=(11, 10, 3), out_c=5, stride=(2, 2), dilation=(2, 2), padding="VALID", activation="RELU"
    ),
    "f32_kernel_bigger_no_bias_relu6": dict(
        dtype="float32", hwc=(3, 3, 2), kernel=(5, 4), out_c=3, bias=None, activation="RELU6", stride=(3, 1)
    ),
    "f32_1x1_relu_n1": dict(dtype="float32", hwc=(4, 5, 7), kernel=(1, 1), out_c=5, activation="RELU_N1_TO_1"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_conv_2d_matches_tflm(tmp_path, case):
    lib = assert_matches_oracle(conv_model(**CASES[case]), tmp_path)
    op = lib.metadata["operators"][0]
    assert op["kind"] == "CONV_2D"
    params = CASES[case]
    kh, kw = params.get("kernel", (3, 3))
    c = params.get("hwc", (8, 8, 3))[2] // params.get("groups", 1)
    assert op["macs"] == int(np.prod(op["outputs"][0])) * kh * kw * c


def test_conv_2d_sanitized(tmp_path):
    """ASan + UBSan over padding edges, strides and both accumulator widths."""
    assert_matches_oracle(
        conv_model(hwc=(5, 6, 3), kernel=(4, 3), stride=(2, 3), input_zp=-128), tmp_path, sanitize=True, n_inputs=3
    )
    assert_matches_oracle(
        conv_model(dtype="int16", hwc=(5, 4, 3), out_c=2, bias="int32", dilation=(2, 1)),
        tmp_path / "i16",
        sanitize=True,
        n_inputs=3,
    )


def test_conv_2d_int16_accumulator_wraps_like_tflm(tmp_path):
    """int16 with an int32 bias accumulates in int32 in TFLM; extreme inputs overflow it (and wrap)."""
    weights = np.full((2, 3, 3, 64), 127, np.int8)
    weights[1] = -127
    model = conv_model(dtype="int16", hwc=(3, 3, 64), out_c=2, bias="int32", padding="VALID", weights=weights)
    extremes = [np.full((1, 3, 3, 64), v, np.int16) for v in (32767, -32768, 1000)]
    assert 576 * 127 * 32767 > 2**31  # the first two inputs overflow int32
    lib = assert_matches_oracle(model, tmp_path, inputs=[[a] for a in extremes])
    src = lib.files["src/model_ops.c"]  # the int16-blocks kernel: SMLAD's sums wrap like TFLM's int32 ones
    assert lib.metadata["operators"][0]["kernel"]["variant"] == "int16-blocks"
    assert "mc_requantize(mc_wrap_add(t, " in src  # 2 output channels: one by one


def test_conv_2d_per_tensor_constants_are_literals(tmp_path):
    # the int16 kernel (int16-blocks)
    lib = compile_bytes(conv_model(dtype="int16", per_channel=False, padding="VALID"), tmp_path)
    src = lib.files["src/model_ops.c"]
    assert "_multiplier" not in src and "mc_smmlar(t[0] + " in src
    lib = compile_bytes(conv_model(dtype="int16", per_channel=True), tmp_path / "pc")
    assert "_multiplier[o + 1]" in lib.files["src/model_ops.c"]
    # the int8 im2col kernel (portable C takes "packed" unless tuned so): per-tensor multipliers are
    # literals, per-channel ones a params table
    im2col = {"CONV_2D": {"variant": "im2col"}}
    lib = compile_bytes(conv_model(per_channel=False, padding="VALID"), tmp_path / "i8", tuning=im2col)
    src = lib.files["src/model_ops.c"]
    assert "_params" not in src and "const int32_t m = " in src
    lib = compile_bytes(conv_model(per_channel=True), tmp_path / "i8pc", tuning=im2col)
    src = lib.files["src/model_ops.c"]
    assert "_params + 9 * oc" in src and "(int8_t)q[8]" in src  # {bias, M, r} in 9 bytes per channel
    assert re.search(r"static const uint8_t \w+_params\[36\]", src)  # 4 channels


@pytest.mark.parametrize("bias_range,packed", [(3000, True), (2**24, False)])
def test_conv_2d_dsp_records_pack_the_shift_with_the_bias(tmp_path, bias_range, packed):
    """On DSP cores the im2col records are {bias << 8 | r, M}, 8 bytes per channel, when every folded
    bias fits 24 bits (else the 9-byte records); with K = 27 (3 input channels, 3x3) the weight rows
    are not padded: 27 bytes each, read as 7 words (the last reaching into the next row), plus one
    byte for the last row. Bit-exact either way, also under ASan/UBSan. (With 4 output channels the
    default is the lanes encoding, tests/test_dsp_stems.py; the knob keeps SXTB16's records here.)"""
    model = conv_model(per_channel=True, bias_range=bias_range)
    sxtb16 = {"CONV_2D": {"extract": "sxtb16"}}
    lib = assert_matches_oracle(model, tmp_path, n_inputs=2, sanitize=True, features=frozenset({"dsp"}), tuning=sxtb16)
    kernel = lib.metadata["operators"][0]["kernel"]
    assert kernel["variant"] == "im2col" and kernel["requant"] == "smmlar" and kernel.get("extract") != "lanes"
    src = lib.files["src/model_ops.c"]
    assert re.search(r"static const int8_t \w+_weights\[109\]", src)  # 4 rows of 27 taps + 1
    assert re.search(r"mc_dot_p4_unaligned\(col, \w+_weights \+ oc \* 27, 7,", src)
    if packed:
        assert re.search(r"static const int32_t \w+_params\[8\]", src)  # {bias << 8 | r, M} x 4
        assert "q[0] >> 8" in src and "mc_requant_fast_low8(" in src
    else:
        assert re.search(r"static const uint8_t \w+_params\[36\]", src) and "(int8_t)q[8]" in src


@pytest.mark.parametrize(
    "kwargs,error,message",
    [
        # not supported yet: a valid model whose fused activation no kernel here computes
        (dict(activation="TANH"), UnsupportedModelError, "fused activation TANH is not supported"),
        # inconsistent: TFLM's int8 convolution reads the bias as int32 (issue 24)
        (dict(dtype="int8", bias="int64"), ModelFormatError, "int8 needs an int32 bias"),
    ],
)
def test_conv_2d_rejects(tmp_path, kwargs, error, message):
    with pytest.raises(error, match=message) as info:
        compile_bytes(conv_model(**kwargs), tmp_path)
    assert "CONV_2D" in str(info.value)
