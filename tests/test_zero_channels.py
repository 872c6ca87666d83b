"""The drop_zero_channels pass (passes/zero_channels.py): all-zero output channels of int8 CONV_2D,
DEPTHWISE_CONV_2D and FULLY_CONNECTED leave the weights and the computation, and are written as the
constant TFLM computes for them; bit-exact against the TFLM oracle on the host and on mps2_an386."""

from __future__ import annotations

import numpy as np
import pytest
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from harness import assert_matches_oracle
from model_builder import ModelBuilder, conv2d_options, depthwise_options, fully_connected_options

from microcompiler.frontend.tflite import load_tflite
from microcompiler.passes import fold_constants, fuse_activations, remove_reshapes
from microcompiler.passes.zero_channels import CONSTANT_CHANNELS, drop_zero_channels, requantize

X_SCALE, Y_SCALE = 0.02, 0.05
CONV1_ZERO, CONV2_ZERO, FC_ZERO = [0, 3, 7], [2, 5], [1, 4, 9]


def _weights(rng, shape, zero):
    w = rng.integers(-127, 128, shape, dtype=np.int8)
    w[zero] = 0
    return w


def zero_channel_model(seed=0) -> bytes:
    """x [1,8,8,3] -> conv1 3x3 RELU6, 8 channels (0, 3, 7 all-zero, per-channel scales) -> conv2 1x1,
    6 channels (2, 5 all-zero, no bias) -> FULLY_CONNECTED 10 units (1, 4, 9 all-zero, per-tensor
    scale, RELU): the model output. Biases large enough that some constants clamp."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.activation("x", [1, 8, 8, 3], "int8", scale=X_SCALE, zero_point=-5)
    s1 = rng.uniform(0.002, 0.02, 8)
    w1 = b.constant("conv1/w", _weights(rng, (8, 3, 3, 3), CONV1_ZERO), scale=s1, zero_point=[0] * 8)
    bias1 = np.array([3000, -40, 200, -3000, 500, 9000, -700, 60000], np.int32)
    b1 = b.constant("conv1/bias", bias1, scale=X_SCALE * s1, zero_point=[0] * 8)
    y1 = b.activation("conv1", [1, 8, 8, 8], "int8", scale=Y_SCALE, zero_point=-10)
    b.op("CONV_2D", [x, w1, b1], [y1], conv2d_options(activation="RELU6"))
    s2 = rng.uniform(0.002, 0.02, 6)
    w2 = b.constant("conv2/w", _weights(rng, (6, 1, 1, 8), CONV2_ZERO), scale=s2, zero_point=[0] * 6)
    y2 = b.activation("conv2", [1, 8, 8, 6], "int8", scale=Y_SCALE, zero_point=7)
    b.op("CONV_2D", [y1, w2, -1], [y2], conv2d_options())
    w3 = b.constant("fc/w", _weights(rng, (10, 384), FC_ZERO), scale=0.004, zero_point=0)
    bias3 = rng.integers(-20000, 20000, 10).astype(np.int32)
    b3 = b.constant("fc/bias", bias3, scale=Y_SCALE * 0.004, zero_point=0)
    y3 = b.activation("fc", [1, 10], "int8", scale=0.1, zero_point=-3)
    b.op("FULLY_CONNECTED", [y2, w3, b3], [y3], fully_connected_options(activation="RELU"))
    return b.finish([x], [y3])


def depthwise_zero_channel_model(seed=1) -> bytes:
    """x [1,6,6,3] -> DEPTHWISE_CONV_2D 3x3, depth multiplier 2 (channels 1 and 4 all-zero)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.activation("x", [1, 6, 6, 3], "int8", scale=X_SCALE, zero_point=4)
    s1 = rng.uniform(0.002, 0.02, 6)
    w1 = b.constant("dw/w", _weights(rng, (6, 3, 3), [1, 4]).T[None].copy(), scale=s1, zero_point=[0] * 6, axis=3)
    b1 = b.constant("dw/bias", rng.integers(-5000, 5000, 6).astype(np.int32), scale=X_SCALE * s1, zero_point=[0] * 6)
    y1 = b.activation("dw", [1, 6, 6, 6], "int8", scale=Y_SCALE, zero_point=-20)
    b.op("DEPTHWISE_CONV_2D", [x, w1, b1], [y1], depthwise_options(depth_multiplier=2, activation="RELU"))
    return b.finish([x], [y1])


def _graph(tmp_path, model=zero_channel_model):
    path = tmp_path / "zero_channels.tflite"
    path.write_bytes(model())
    graph = load_tflite(path)
    for p in (fold_constants, fuse_activations, remove_reshapes):
        graph = p(graph)
    return graph


def test_requantize_matches_the_fixed_point_reference():
    assert requantize(0, 1 << 30, 0) == 0
    assert requantize(1000, 1 << 30, 0) == 500  # x * 0.5
    assert requantize(1001, 1 << 30, 0) == 501  # the doubling high multiply rounds ties up
    assert requantize(-1001, 1 << 30, 0) == -500
    assert requantize(1000, 1 << 30, -3) == 63  # the shift rounds ties away from zero: 62.5 -> 63
    assert requantize(-1000, 1 << 30, -3) == -63
    assert requantize(3, 1 << 30, 2) == 6  # left shift first
    assert requantize(-(2**31), -(2**31), 0) == 2**31 - 1  # the one saturating product


def test_the_pass_splits_each_layer_with_zero_channels(tmp_path):
    graph = _graph(tmp_path)
    out = drop_zero_channels(graph)
    assert [op.kind for op in graph.operators] == ["CONV_2D", "CONV_2D", "FULLY_CONNECTED"]  # input untouched
    assert [op.kind for op in out.operators] == [
        "CONV_2D",
        CONSTANT_CHANNELS,
        "CONV_2D",
        CONSTANT_CHANNELS,
        "FULLY_CONNECTED",
        CONSTANT_CHANNELS,
    ]
    computing = out.operators[0::2]
    assert [op.notes.dropped_channels for op in computing] == [3, 2, 3]
    assert [out.tensors[op.inputs[1]].shape for op in computing] == [(5, 3, 3, 3), (4, 1, 1, 8), (7, 384)]
    assert len(out.tensors[computing[0].inputs[1]].quant.scale) == 5  # per-channel scales sliced
    assert out.tensors[computing[0].inputs[2]].shape == (5,) and computing[1].inputs[2] == -1
    # conv2 now reads conv1's full output, which the first MC_CONSTANT_CHANNELS writes
    assert computing[1].inputs[0] == out.operators[1].outputs[0] == graph.operators[1].inputs[0]
    for narrow_op, spread in zip(computing, out.operators[1::2]):
        narrow = narrow_op.outputs[0]
        assert spread.inputs[0] == narrow and out.aliases[narrow] == spread.outputs[0]  # same memory
        source = out.tensors[spread.inputs[1]].data
        assert source.dtype == np.int8  # at most 128 packed channels: one byte per channel
        assert sorted(source[source >= 0].tolist()) == list(range(out.tensors[narrow].shape[-1]))
    # conv1's constants: bias requantized, offset by the zero point, clamped to RELU6 ([-10, 110])
    constants = out.tensors[out.operators[1].inputs[2]].data
    source = out.tensors[out.operators[1].inputs[1]].data
    assert (source[CONV1_ZERO] == -1).all() and (np.delete(source, CONV1_ZERO) >= 0).all()
    assert constants[7] == 110  # 60000 * 0.02 * s / 0.05 > 6.0: the RELU6 ceiling
    assert constants[3] == -10  # a negative bias: RELU's floor, the output zero point
    assert drop_zero_channels(out).operators == out.operators  # nothing left to drop


def test_no_zero_channels_leaves_the_graph_alone(tmp_path):
    graph = _graph(tmp_path)
    for op in graph.operators:
        w = graph.tensors[op.inputs[1]]
        w.data = np.where(w.data == 0, 1, w.data).astype(np.int8)
    assert [op.kind for op in drop_zero_channels(graph).operators] == ["CONV_2D", "CONV_2D", "FULLY_CONNECTED"]


def test_depthwise_remaining_channels_name_their_input_channel(tmp_path):
    graph = _graph(tmp_path, depthwise_zero_channel_model)
    out = drop_zero_channels(graph)
    assert [op.kind for op in out.operators] == ["DEPTHWISE_CONV_2D", CONSTANT_CHANNELS]
    dw = out.operators[0]
    assert dw.notes.dropped_channels == 2 and "dropped_channels" not in dw.options
    assert (
        dw.notes.input_channels == (0, 1, 1, 2) and "input_channels" not in dw.options
    )  # output channels 0, 2, 3, 5 with multiplier 2
    assert out.tensors[dw.inputs[1]].shape == (1, 3, 3, 4)
    assert out.tensors[dw.inputs[1]].quant.axis == 3 and len(out.tensors[dw.inputs[1]].quant.scale) == 4
    assert drop_zero_channels(out).operators == out.operators  # nothing left to drop


DW_ZERO = (1, 4, 5, 11)


def _depthwise_models():
    from dw_models import sandwich_model

    return {
        "multiplier2": depthwise_zero_channel_model(),
        "sandwich_s1": sandwich_model(hwc=(10, 9, 12), zero=DW_ZERO, seed=4),
        "sandwich_s2_valid": sandwich_model(
            hwc=(11, 11, 12), out_hw=(5, 5), stride=(2, 2), padding="VALID", zero=DW_ZERO, input_zp=9, seed=5
        ),
    }


DW_RUNS = [
    ("multiplier2", "fast"),
    ("multiplier2", "reference"),
    ("sandwich_s1", "fast"),
    ("sandwich_s1", "dsp"),
    ("sandwich_s2_valid", "dsp"),
    ("sandwich_s2_valid", "reference"),
]


@pytest.mark.parametrize("model,kernels", DW_RUNS, ids=[f"{m}-{k}" for m, k in DW_RUNS])
def test_depthwise_bit_exact_with_tflm_on_the_host(tmp_path, model, kernels):
    lib = assert_matches_oracle(
        _depthwise_models()[model],
        tmp_path,
        n_inputs=3,
        sanitize=kernels != "dsp",
        features={"dsp"} if kernels == "dsp" else set(),
        kernels="reference" if kernels == "reference" else "fast",
    )
    dw = next(op for op in lib.metadata["operators"] if op["kind"] == "DEPTHWISE_CONV_2D")
    assert lib.metadata["dropped_channels"] == dw["dropped_channels"] == (2 if model == "multiplier2" else 4)
    assert dw["kernel"]["variant"] == ("reference" if kernels == "reference" else "planes")
    assert "in_place" not in dw["kernel"]  # its output is the packed alias of the layer's output
    kept = dw["outputs"][0][-1]
    assert dw["macs"] == int(np.prod(dw["outputs"][0][1:3])) * kept * 9
    assert kept == (4 if model == "multiplier2" else 8)


@needs_board_tools
def test_depthwise_bit_exact_with_tflm_on_mps2_an386(tmp_path):
    run = assert_matches_oracle_on_board(_depthwise_models()["sandwich_s1"], tmp_path)
    assert run.outputs


@pytest.mark.parametrize("executor,features", [("aot", frozenset()), ("graph", frozenset({"dsp"}))])
def test_bit_exact_with_tflm_on_the_host(tmp_path, executor, features):
    lib = assert_matches_oracle(
        zero_channel_model(), tmp_path, n_inputs=4, sanitize=executor == "aot", executor=executor, features=features
    )
    meta = lib.metadata
    assert meta["dropped_channels"] == 8
    dropped = {op["layer_name"]: op["dropped_channels"] for op in meta["operators"] if "dropped_channels" in op}
    assert dropped == {"conv1": 3, "conv2": 2, "fc": 3}
    macs = {op["layer_name"]: op["macs"] for op in meta["operators"]}
    assert macs["conv1"] == 64 * 5 * 27 and macs["fc"] == 7 * 384
    assert "conv1_constant_channels" in macs
    # the narrow outputs share their layer's memory: no more arena than the model without the pass
    assert meta["arena_bytes"] == 512 + 384


@needs_board_tools
def test_bit_exact_with_tflm_on_mps2_an386(tmp_path):
    assert_matches_oracle_on_board(zero_channel_model(), tmp_path)


def test_layer_by_layer_validation_compares_every_layer_of_the_model(tmp_path):
    """validate's first_divergence: the packed tensors the pass made have no TFLM counterpart and are
    not compared; every output of the model as given is, and matches."""
    from microcompiler.api import open_model
    from microcompiler.compiler import compile_model
    from microcompiler.inputs import random_inputs
    from microcompiler.validation.layers import first_divergence
    from microcompiler.validation.reference import Reference

    model = tmp_path / "zero_channels.tflite"
    model.write_bytes(zero_channel_model())
    library = compile_model(model)
    inputs = random_inputs(library.info.inputs, 3)
    with open_model(library) as session, session.executor() as ex:
        result = first_divergence(
            ex, library, Reference(model.read_bytes(), 1, preserve=True), inputs, load_tflite(model)
        )
    assert result == {"diverged": False, "checked_tensors": 3, "skipped_tensors": []}


def test_more_than_128_kept_channels_take_a_16_bit_table(tmp_path):
    rng = np.random.default_rng(2)
    b = ModelBuilder()
    x = b.activation("x", [2, 16], "int8", scale=X_SCALE, zero_point=1)
    w = b.constant("wide/w", _weights(rng, (200, 16), [0, 150, 199]), scale=0.004, zero_point=0)
    bias = b.constant("wide/bias", rng.integers(-3000, 3000, 200).astype(np.int32), scale=X_SCALE * 0.004)
    y = b.activation("wide", [2, 200], "int8", scale=Y_SCALE, zero_point=5)
    b.op("FULLY_CONNECTED", [x, w, bias], [y], fully_connected_options())
    lib = assert_matches_oracle(b.finish([x], [y]), tmp_path, n_inputs=2)
    assert lib.metadata["dropped_channels"] == 3
    assert "static const int16_t model_wide_constant_channels_source_channel[200]" in lib.files["src/model_ops.c"]
