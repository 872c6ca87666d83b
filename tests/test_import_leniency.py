"""The importer accepts what TFLite Micro accepts (issue 9), each case compiled and bit-exact with TFLM:

* bias tensors with per-channel scales and a ``quantized_dimension`` that does not fit a 1-D tensor
  (TFLM ignores bias quantization): a small int8 CNN (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED),
  compiled and run through the CLI;
* zero points stored per channel but all equal; ``quantized_dimension`` on activation tensors;
* missing optional tensors (-1 bias); empty buffers of their own for non-constant tensors;
* ``shape_signature`` with -1 in the batch dimension; operator versions above 1.
"""

import json
import math
import subprocess
import sys

import flatbuffers
import numpy as np
import pytest
from harness import assert_matches_oracle
from model_builder import ModelBuilder, conv2d_options, depthwise_options, fully_connected_options
from oracle import Oracle
from test_op_transpose_conv import transpose_conv_model
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

X_SCALE, X_ZP = 0.02, -5


def repack(model_bytes: bytes, edit) -> bytes:
    """Unpack a model, let ``edit(model)`` change it (schema object API), pack it again."""
    model = fb.ModelT.InitFromPackedBuf(bytearray(model_bytes), 0)
    edit(model)
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def tensors_of(model_bytes: bytes):
    return fb.ModelT.InitFromPackedBuf(bytearray(model_bytes), 0).subgraphs[0].tensors


def _output_scale(x_scale, w_scale, taps):
    return x_scale * float(np.mean(w_scale)) * math.sqrt(taps) * 74 * 74 / 40


def cnn_model(bias_axis=3, bias_scales="per_channel", with_bias=True, seed=0) -> bytes:
    """int8 CONV_2D 3x3 -> DEPTHWISE_CONV_2D 3x3 stride 2 -> FULLY_CONNECTED, per-channel weights.

    The biases carry per-channel scales (input_scale * weight_scale, as converters write them) with
    quantized_dimension ``bias_axis`` although they are 1-D; bias_scales="wrong_count" gives them one
    scale more than there are channels (TFLM does not read bias scales at all)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()

    def bias(name, n, x_scale, w_scale):
        scales = list(x_scale * np.resize(w_scale, n))
        if bias_scales == "wrong_count":
            scales.append(scales[0])
        return b.constant(
            name,
            rng.integers(-2000, 2000, n).astype(np.int32),
            scale=scales,
            zero_point=[0] * len(scales),
            axis=bias_axis,
        )

    x = b.activation("x", [1, 8, 8, 3], "int8", scale=X_SCALE, zero_point=X_ZP)
    w1_scale = rng.uniform(0.002, 0.02, 4)
    w1 = b.constant(
        "w1", rng.integers(-127, 128, (4, 3, 3, 3), dtype=np.int8), scale=w1_scale, zero_point=[0] * 4, axis=0
    )
    s1 = _output_scale(X_SCALE, w1_scale, 27)
    y1 = b.activation("y1", [1, 8, 8, 4], "int8", scale=s1, zero_point=3)
    b.op(
        "CONV_2D",
        [x, w1, bias("b1", 4, X_SCALE, w1_scale) if with_bias else -1],
        [y1],
        conv2d_options("SAME", activation="RELU"),
    )
    w2_scale = rng.uniform(0.002, 0.02, 4)
    w2 = b.constant(
        "w2", rng.integers(-127, 128, (1, 3, 3, 4), dtype=np.int8), scale=w2_scale, zero_point=[0] * 4, axis=3
    )
    s2 = _output_scale(s1, w2_scale, 9)
    y2 = b.activation("y2", [1, 4, 4, 4], "int8", scale=s2, zero_point=-2)
    # Always a bias here: the pinned TFLM interpreter crashes on an int8 DEPTHWISE_CONV_2D without one.
    b.op("DEPTHWISE_CONV_2D", [y1, w2, bias("b2", 4, s1, w2_scale)], [y2], depthwise_options("SAME", (2, 2)))
    w3_scale = rng.uniform(0.002, 0.02, 5)
    w3 = b.constant("w3", rng.integers(-127, 128, (5, 64), dtype=np.int8), scale=w3_scale, zero_point=[0] * 5, axis=0)
    y3 = b.activation("y3", [1, 5], "int8", scale=_output_scale(s2, w3_scale, 64), zero_point=1)
    b.op("FULLY_CONNECTED", [y2, w3, bias("b3", 5, s2, w3_scale) if with_bias else -1], [y3], fully_connected_options())
    return b.finish([x], [y3])


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", *map(str, args)], capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize("bias_axis", [3, 1])
def test_cnn_with_per_channel_bias_scales_compiles_and_matches_tflm_via_cli(tmp_path, bias_axis):
    model = tmp_path / "cnn.tflite"
    model.write_bytes(cnn_model(bias_axis=bias_axis))
    biases = [t for t in tensors_of(model.read_bytes()) if t.type == fb.TensorType.INT32]
    assert len(biases) == 3 and all(
        len(t.quantization.scale) == t.shape[0] > 1
        and len(t.shape) == 1
        and t.quantization.quantizedDimension == bias_axis
        for t in biases
    )
    compiled = _cli("compile", model, "-o", tmp_path / "out")
    assert compiled.returncode == 0, compiled.stderr
    assert (tmp_path / "out").is_dir()
    x = np.random.default_rng(7).integers(-128, 128, (1, 8, 8, 3), dtype=np.int8)
    np.save(tmp_path / "x.npy", x)
    ran = _cli("run", model, "--input", tmp_path / "x.npy", "--json")
    assert ran.returncode == 0, ran.stderr
    ours = np.array(json.loads(ran.stdout)["outputs"][0], dtype=np.int8)
    (want,) = Oracle(model.read_bytes()).run([x])
    assert np.array_equal(ours.reshape(want.shape), want), (ours, want)


def test_cnn_bias_scales_are_not_read(tmp_path):
    """A bias with more scales than channels: TFLM ignores bias quantization, and so do we."""
    assert_matches_oracle(cnn_model(bias_scales="wrong_count"), tmp_path, n_inputs=2)


@pytest.mark.parametrize("damage", ["two_zero_points", "zero_scale", "nan_scale"])
def test_inconsistent_bias_quantization_is_not_called_damage(tmp_path, damage):
    """Bias quantization TFLM never reads: too few zero points or a zero/NaN scale still compile and
    match TFLM (which runs such models), instead of a 'corrupted file' error."""

    def edit(model):
        for t in model.subgraphs[0].tensors:
            if t.type == fb.TensorType.INT32:
                if damage == "two_zero_points":
                    t.quantization.zeroPoint = [0, 0]
                else:
                    t.quantization.scale[1] = 0.0 if damage == "zero_scale" else float("nan")

    assert_matches_oracle(repack(cnn_model(), edit), tmp_path, n_inputs=2)


def test_damaged_activation_quantization_is_still_reported(tmp_path):
    """The leniency is for biases only: an activation with more scales than zero points is damage."""

    def edit(model):
        t = model.subgraphs[0].tensors[0]
        t.quantization.scale = [X_SCALE] * 3
        t.quantization.zeroPoint = [X_ZP, X_ZP]

    path = tmp_path / "m.tflite"
    path.write_bytes(repack(cnn_model(), edit))
    result = _cli("compile", path, "-o", tmp_path / "out")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "3 scales but only 2 zero points" in result.stderr


def test_missing_optional_bias(tmp_path):
    """-1 bias inputs of CONV_2D, FULLY_CONNECTED and TRANSPOSE_CONV (int8, int16, float32)."""
    model = cnn_model(with_bias=False)
    assert [
        len(op.inputs) == 3 and op.inputs[2] == -1
        for op in fb.ModelT.InitFromPackedBuf(bytearray(model), 0).subgraphs[0].operators
    ] == [True, False, True]
    assert_matches_oracle(model, tmp_path / "cnn", n_inputs=2)

    def drop_bias(model):
        op = model.subgraphs[0].operators[0]
        op.inputs = [*op.inputs[:3], -1]

    for dtype in ("int8", "int16", "float32"):
        assert_matches_oracle(repack(transpose_conv_model(dtype=dtype), drop_bias), tmp_path / dtype, n_inputs=2)


def test_per_channel_storage_of_equal_parameters(tmp_path):
    """Activations whose scale and zero point are stored once per channel, all equal (TFLM uses the
    first), on a quantized_dimension that means nothing for an activation."""

    def per_channel_activations(model):
        for t in model.subgraphs[0].tensors:
            q = t.quantization
            if q is not None and q.scale is not None and len(q.scale) == 1 and t.buffer == 0:
                channels = t.shape[-1]
                q.scale = [q.scale[0]] * channels
                q.zeroPoint = [q.zeroPoint[0]] * channels
                q.quantizedDimension = len(t.shape) - 1

    model = repack(cnn_model(), per_channel_activations)
    assert len(tensors_of(model)[0].quantization.zeroPoint) == 3
    assert_matches_oracle(model, tmp_path, n_inputs=2)


def test_quantized_dimension_on_activations(tmp_path):
    """Per-tensor activations that still name a quantized_dimension (any axis): unused, as in TFLM."""

    def set_axes(model):
        for k, t in enumerate(model.subgraphs[0].tensors):
            if t.buffer == 0 and t.quantization is not None:
                t.quantization.quantizedDimension = k % len(t.shape)

    model = repack(cnn_model(), set_axes)
    assert {t.quantization.quantizedDimension for t in tensors_of(model) if t.buffer == 0} > {0}
    assert_matches_oracle(model, tmp_path, n_inputs=2)


def test_empty_buffers_of_their_own_for_activations(tmp_path):
    """Converters give every tensor its own buffer; an activation's is empty (no data, or a zero-length
    vector)."""

    def own_buffers(model):
        for k, t in enumerate(model.subgraphs[0].tensors):
            if t.buffer == 0:
                buf = fb.BufferT()
                buf.data = [] if k % 2 else None
                model.buffers.append(buf)
                t.buffer = len(model.buffers) - 1

    model = repack(cnn_model(), own_buffers)
    assert all(t.buffer != 0 for t in tensors_of(model))
    assert_matches_oracle(model, tmp_path, n_inputs=2)


def test_shape_signature_with_dynamic_batch(tmp_path):
    def dynamic_batch(model):
        for t in model.subgraphs[0].tensors:
            if t.buffer == 0:
                t.shapeSignature = [-1, *t.shape[1:]]

    model = repack(cnn_model(), dynamic_batch)
    assert list(tensors_of(model)[0].shapeSignature) == [-1, 8, 8, 3]
    assert_matches_oracle(model, tmp_path, n_inputs=2)


def test_operator_versions_above_one(tmp_path):
    def new_versions(model):
        for k, code in enumerate(model.operatorCodes):
            code.version = 3 + k

    model = repack(cnn_model(), new_versions)
    assert [c.version for c in fb.ModelT.InitFromPackedBuf(bytearray(model), 0).operatorCodes] == [3, 4, 5]
    assert_matches_oracle(model, tmp_path, n_inputs=2)


def test_all_leniencies_together(tmp_path):
    def everything(model):
        for code in model.operatorCodes:
            code.version = 7
        for t in model.subgraphs[0].tensors:
            if t.buffer == 0:
                t.shapeSignature = [-1, *t.shape[1:]]
                model.buffers.append(fb.BufferT())
                t.buffer = len(model.buffers) - 1

    assert_matches_oracle(repack(cnn_model(bias_axis=3, with_bias=True), everything), tmp_path, n_inputs=2)
