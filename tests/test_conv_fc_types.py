"""What TFLM's CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED accept beyond the single-operator sweeps
(test_op_conv_2d.py, test_op_depthwise_conv_2d.py, test_fully_connected.py), each bit-exact with TFLM:

* 4-bit packed weights (INT4, two per byte, low nibble first; odd element counts), unpacked to int8
  by the importer as TFLM unpacks them;
* FULLY_CONNECTED int16 with an int32 bias (TFLM accumulates in int32 then, 32-bit requantize);
* weights and bias as activations (TFLM reads them at run time) for all three: the reference loops
  then read them, the fast kernels and the bias folding need constants;
* FULLY_CONNECTED keep_num_dims, batches > 1, float32 without bias;
* refused in one line: hybrid models (float32 input, int8 weights: TFLM refuses them too), INT4
  activations.
"""

import subprocess
import sys

import numpy as np
import pytest
from harness import assert_matches_oracle
from model_builder import ModelBuilder, fully_connected_options
from test_import_leniency import repack, tensors_of
from test_op_conv_2d import conv_model
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb


def pack_int4(model_bytes: bytes, name: str = "w") -> bytes:
    """The model with tensor ``name``'s int8 weights clipped to [-8, 7] and stored as packed INT4."""

    def edit(model):
        (t,) = [t for t in model.subgraphs[0].tensors if t.name in (name, name.encode())]
        t.type = fb.TensorType.INT4
        values = np.clip(np.array(model.buffers[t.buffer].data, dtype=np.uint8).view(np.int8), -8, 7)
        nibbles = values.astype(np.int16) & 0xF
        if len(nibbles) % 2:
            nibbles = np.append(nibbles, 0)
        model.buffers[t.buffer].data = (nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8).tolist()

    return repack(model_bytes, edit)


def fc_model(
    x_dtype="int8",
    w_dtype=None,
    bias="default",
    x_shape=(2, 8),
    units=4,
    keep_num_dims=False,
    weights_as_input=False,
    bias_as_input=False,
    seed=0,
):
    rng = np.random.default_rng(seed)
    w_dtype = w_dtype or ("float32" if x_dtype == "float32" else "int8")
    if bias == "default":
        bias = {"int8": "int32", "int16": "int64", "float32": "float32"}[x_dtype]
    b = ModelBuilder()

    def quant(dtype, scale, zp):
        return dict(scale=scale, zero_point=zp) if dtype in ("int8", "int16") else {}

    x = b.activation("x", list(x_shape), x_dtype, **quant(x_dtype, 0.05, 0 if x_dtype == "int16" else -3))
    depth = x_shape[-1]
    model_inputs = [x]
    w_data = (
        rng.normal(0, 1, (units, depth)).astype(np.float32)
        if w_dtype == "float32"
        else rng.integers(-127, 128, (units, depth)).astype(np.int8)
    )
    if weights_as_input:
        w = b.activation("w", [units, depth], w_dtype, **quant(w_dtype, 0.01, 0))
        model_inputs.append(w)
    else:
        w = b.constant("w", w_data, **quant(w_dtype, 0.01, 0))
    bias_t = -1
    if bias:
        bias_q = {} if bias == "float32" else dict(scale=0.0005, zero_point=0)
        if bias_as_input:
            bias_t = b.activation("bias", [units], bias, **bias_q)
            model_inputs.append(bias_t)
        else:
            data = (
                rng.normal(0, 1, units).astype(np.float32)
                if bias == "float32"
                else rng.integers(-1000, 1000, units).astype(bias)
            )
            bias_t = b.constant("bias", data, **bias_q)
    y_shape = [*x_shape[:-1], units] if keep_num_dims else [int(np.prod(x_shape[:-1])), units]
    y = b.activation("y", y_shape, x_dtype, **quant(x_dtype, 0.1, 0 if x_dtype == "int16" else 2))
    b.op("FULLY_CONNECTED", [x, w, bias_t], [y], fully_connected_options(keep_num_dims=keep_num_dims))
    return b.finish(model_inputs, [y])


@pytest.mark.parametrize(
    "name,model",
    [
        ("conv", lambda: conv_model(hwc=(5, 5, 3), out_c=3)),
        ("conv_odd_count", lambda: conv_model(hwc=(4, 4, 1), kernel=(3, 3), out_c=1)),
        ("depthwise", lambda: conv_model("DEPTHWISE_CONV_2D", hwc=(5, 5, 4))),
        ("fully_connected", lambda: fc_model(x_shape=(1, 7), units=3)),
    ],
)
def test_int4_packed_weights(tmp_path, name, model):
    packed = pack_int4(model())
    assert [t.type for t in tensors_of(packed) if t.name in ("w", b"w")] == [fb.TensorType.INT4]
    assert_matches_oracle(packed, tmp_path, n_inputs=2)


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("i16_int32_bias", dict(x_dtype="int16", bias="int32", x_shape=(3, 40))),
        ("i16_int32_bias_wraps", dict(x_dtype="int16", bias="int32", x_shape=(1, 600), units=2)),
        ("i8_weights_and_bias_as_inputs", dict(weights_as_input=True, bias_as_input=True)),
        ("i16_weights_as_input", dict(x_dtype="int16", weights_as_input=True)),
        ("f32_weights_as_input_no_bias", dict(x_dtype="float32", weights_as_input=True, bias=None)),
        ("i8_keep_num_dims_3d", dict(x_shape=(2, 3, 8), keep_num_dims=True)),
        ("i8_flatten_3d_batches", dict(x_shape=(2, 3, 8))),
        ("f32_no_bias_batches", dict(x_dtype="float32", bias=None, x_shape=(3, 5))),
    ],
)
def test_fully_connected_types_tflm_runs(tmp_path, name, kwargs):
    assert_matches_oracle(fc_model(**kwargs), tmp_path, n_inputs=2, sanitize=name == "i16_int32_bias_wraps")


def _cli_compile(model: bytes, tmp_path):
    path = tmp_path / "m.tflite"
    path.write_bytes(model)
    return subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", "compile", str(path), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )


def test_hybrid_fully_connected_is_refused_in_one_line(tmp_path):
    result = _cli_compile(fc_model(x_dtype="float32", w_dtype="int8", bias="float32"), tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert "FULLY_CONNECTED" in lines[0] and "hybrid" in lines[0] and "corrupted" not in lines[0]


def test_int4_activation_is_refused_in_one_line(tmp_path):
    def edit(model):
        model.subgraphs[0].tensors[0].type = fb.TensorType.INT4

    result = _cli_compile(repack(fc_model(), edit), tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "INT4" in lines[0] and "only as constant weights" in lines[0]


def weights_as_inputs(model_bytes: bytes, names=("w",)) -> bytes:
    """The model with the named constant tensors turned into model inputs (TFLM reads them at run time)."""

    def edit(model):
        sub = model.subgraphs[0]
        for k, t in enumerate(sub.tensors):
            if t.name in names or (isinstance(t.name, bytes) and t.name.decode() in names):
                t.buffer = 0
                sub.inputs = [*sub.inputs, k]

    return repack(model_bytes, edit)


@pytest.mark.parametrize(
    "name,model,names",
    [
        ("conv_i8_fold_case", lambda: conv_model(padding="VALID", hwc=(5, 5, 3), out_c=3), ("w",)),
        ("conv_i8_same_bias_input", lambda: conv_model(hwc=(4, 5, 4), out_c=2), ("w", "bias")),
        ("conv_i16", lambda: conv_model(dtype="int16", hwc=(4, 4, 2), out_c=3), ("w",)),
        ("conv_f32", lambda: conv_model(dtype="float32", hwc=(4, 4, 2), out_c=3), ("w", "bias")),
        ("depthwise_i8_channels4_case", lambda: conv_model("DEPTHWISE_CONV_2D", hwc=(5, 5, 4)), ("w", "bias")),
        ("depthwise_i8_valid", lambda: conv_model("DEPTHWISE_CONV_2D", hwc=(5, 5, 3), padding="VALID"), ("w",)),
    ],
)
def test_convolution_weights_as_activations(tmp_path, name, model, names):
    library = assert_matches_oracle(
        weights_as_inputs(model(), names), tmp_path, n_inputs=2, sanitize=name == "depthwise_i8_channels4_case"
    )
    assert [i.name for i in library.info.inputs] == ["x", *names]
