"""Single-operator ONNX models (issue 36's second group of float operators), each against ONNX Runtime's
default CPU session on the host: bit for bit, or within the tolerance docs/onnx.md gives with its reason."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper
from onnx_models import assert_same_bits, const, model, ours_and_onnxruntime

from microcompiler.errors import UnsupportedModelError
from microcompiler.frontend.tflite import load_tflite


def _ints(name: str, values) -> object:
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def _floats(name: str, values) -> object:
    return numpy_helper.from_array(np.array(values, dtype=np.float32), name)


def _conv_first(rng, c: int = 4):
    """A 1x1 Conv in front of the operator, so that it reads an NHWC value (the importer's layout)."""
    return helper.make_node("Conv", ["x", "wc"], ["h"]), const(rng, "wc", (c, 3, 1, 1))


def _cases(rng):
    conv, wc = _conv_first(rng)
    x = {"x": [1, 3, 6, 8]}
    relu_in = [conv, helper.make_node("Relu", ["h"], ["r"])]
    yield "leaky_relu", [helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.07)], x, {"y": [1, 3, 6, 8]}, []
    yield (
        "hard_sigmoid",
        [helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.3, beta=0.4)],
        x,
        {"y": [1, 3, 6, 8]},
        [],
    )
    yield "hard_swish", [helper.make_node("HardSwish", ["x"], ["y"])], x, {"y": [1, 3, 6, 8]}, []
    yield (
        "reduce_mean_hw",
        [helper.make_node("ReduceMean", ["x", "ax"], ["y"])],
        x,
        {"y": [1, 3, 1, 1]},
        [_ints("ax", [2, 3])],
    )
    yield (
        "reduce_mean_c",
        [helper.make_node("ReduceMean", ["x", "ax"], ["y"], keepdims=0)],
        x,
        {"y": [1, 6, 8]},
        [_ints("ax", [1])],
    )
    nodes = [conv, helper.make_node("ReduceMean", ["h", "ax"], ["y"], keepdims=0)]
    yield "reduce_mean_nhwc", nodes, x, {"y": [1, 4]}, [wc, _ints("ax", [2, 3])]
    conv16, w16 = helper.make_node("Conv", ["x", "w16"], ["h16"]), const(rng, "w16", (16, 3, 1, 1))
    nodes = [conv16, helper.make_node("GlobalAveragePool", ["h16"], ["y"])]
    yield "global_average_pool_nchwc", nodes, x, {"y": [1, 16, 1, 1]}, [w16]
    nodes = [conv16, helper.make_node("AveragePool", ["h16"], ["y"], kernel_shape=[2, 3], strides=[2, 2])]
    yield "average_pool_nchwc", nodes, x, {"y": [1, 16, 3, 3]}, [w16]
    nodes = [conv, helper.make_node("Split", ["h", "sp"], ["a", "b"], axis=1)]
    yield "split_channels", nodes, x, {"a": [1, 1, 6, 8], "b": [1, 3, 6, 8]}, [wc, _ints("sp", [1, 3])]
    yield (
        "split_last",
        [helper.make_node("Split", ["x"], ["a", "b"], axis=3, num_outputs=2)],
        x,
        {
            "a": [1, 3, 6, 4],
            "b": [1, 3, 6, 4],
        },
        [],
    )
    nodes = [conv, helper.make_node("Slice", ["h", "st", "en", "ax", "sp"], ["y"])]
    inits = [wc, _ints("st", [1, 5, -1]), _ints("en", [3, 0, -100]), _ints("ax", [1, 3, 2]), _ints("sp", [1, -2, -2])]
    yield "slice_nhwc", nodes, x, {"y": [1, 2, 3, 3]}, inits
    nodes = [helper.make_node("Slice", ["x", "st", "en"], ["y"])]
    yield "slice_plain", nodes, x, {"y": [1, 2, 6, 8]}, [_ints("st", [0, 1]), _ints("en", [1, 99])]
    nodes = [*relu_in, helper.make_node("Pad", ["r", "p", "v"], ["y"])]
    inits = [wc, _ints("p", [0, 1, 2, 0, 0, 0, 1, 3]), _floats("v", 1.5)]
    yield "pad_constant", nodes, x, {"y": [1, 5, 9, 11]}, inits
    nodes = [conv, helper.make_node("Pad", ["h", "p"], ["y"], mode="reflect")]
    yield "pad_reflect", nodes, x, {"y": [1, 4, 8, 11]}, [wc, _ints("p", [0, 0, 1, 2, 0, 0, 1, 1])]
    for ctm, nearest in (("asymmetric", "floor"), ("half_pixel", "round_prefer_floor"), ("align_corners", "ceil")):
        nodes = [
            conv,
            helper.make_node(
                "Resize",
                ["h", "", "", "sz"],
                ["y"],
                coordinate_transformation_mode=ctm,
                nearest_mode=nearest,
                mode="nearest",
            ),
        ]
        yield f"resize_nearest_{ctm}", nodes, x, {"y": [1, 4, 9, 20]}, [wc, _ints("sz", [1, 4, 9, 20])]
    for ctm in ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"):
        nodes = [
            conv,
            helper.make_node("Resize", ["h", "", "sc"], ["y"], coordinate_transformation_mode=ctm, mode="linear"),
        ]
        yield f"resize_linear_{ctm}", nodes, x, {"y": [1, 4, 12, 12]}, [wc, _floats("sc", [1, 1, 2, 1.5])]
    nodes = [
        helper.make_node(
            "ConvTranspose", ["x", "wt", "bt"], ["y"], strides=[2, 2], pads=[1, 0, 1, 1], output_padding=[1, 0]
        )
    ]
    inits = [const(rng, "wt", (3, 5, 3, 3)), const(rng, "bt", (5,))]
    yield "conv_transpose", nodes, x, {"y": [1, 5, 12, 16]}, inits


CASES = {case[0]: case[1:] for case in _cases(np.random.default_rng(36))}
# every case bit for bit (ReduceMean in ONNX Runtime's order: tests/test_onnx_mlas.py)
TOLERANT: dict[str, float] = {}


def _prefixed(name: str, nodes, outputs: dict, inits):
    """The case's nodes, outputs and initializers with every name but the input "x" prefixed by the case's."""

    def rename(v: str) -> str:
        return v if v in ("x", "") else f"{name}.{v}"

    renamed = []
    for n in nodes:
        copy = type(n)()
        copy.CopyFrom(n)
        copy.input[:] = [rename(i) for i in n.input]
        copy.output[:] = [rename(o) for o in n.output]
        renamed.append(copy)
    tensors = []
    for t in inits:
        copy = type(t)()
        copy.CopyFrom(t)
        copy.name = rename(t.name)
        tensors.append(copy)
    return renamed, {rename(o): shape for o, shape in outputs.items()}, tensors


def test_operators_against_onnxruntime(tmp_path):
    """Every case in one model (one build): each output against ONNX Runtime's."""
    import onnx

    nodes, outputs, inits = [], {}, []
    for name, (case_nodes, _, case_outputs, case_inits) in CASES.items():
        n, o, i = _prefixed(name, case_nodes, case_outputs, case_inits)
        nodes, inits = nodes + n, inits + i
        outputs.update(o)
    path = tmp_path / "operators.onnx"
    onnx.save(model(nodes, {"x": [1, 3, 6, 8]}, outputs, inits, opset=18), path)
    lib, ours, theirs = ours_and_onnxruntime(path, tmp_path, n=2)
    kinds = {op.kind for op in lib.graph.operators}
    assert {
        "LEAKY_RELU",
        "MEAN",
        "SPLIT_V",
        "STRIDED_SLICE",
        "PADV2",
        "MIRROR_PAD",
        "GATHER",
    } <= kinds
    for k, (got, want) in enumerate(zip(ours, theirs)):
        for output, g, t in zip(outputs, got, want):
            name = output.split(".")[0]
            if name in TOLERANT:
                np.testing.assert_allclose(g, t.reshape(g.shape), rtol=TOLERANT[name], atol=1e-6, err_msg=output)
            else:
                assert_same_bits(g, t, f"{output} set {k}")


def test_unsupported_variants_one_line(tmp_path):
    import onnx

    bad = {
        "edge": (
            [helper.make_node("Pad", ["x", "p"], ["y"], mode="edge")],
            [_ints("p", [0, 0, 1, 1, 0, 0, 1, 1])],
            [1, 3, 8, 10],
            "mode 'edge'",
        ),
        "cubic": (
            [helper.make_node("Resize", ["x", "", "s"], ["y"], mode="cubic")],
            [_floats("s", [1, 1, 2, 2])],
            [1, 3, 12, 16],
            "Resize mode 'cubic'",
        ),
    }
    for name, (nodes, inits, shape, message) in bad.items():
        path = tmp_path / f"{name}.onnx"
        m = model(nodes, {"x": [1, 3, 6, 8]}, {"y": shape}, inits)
        onnx.save(m, path)
        with pytest.raises(UnsupportedModelError, match=message):
            load_tflite(path)


def test_pytorch_exported_model(tmp_path):
    """scripts/torch_models.py's network, exported by torch.onnx.export (opset 20): its operators all import,
    and the outputs are ONNX Runtime's bit for bit."""
    from onnx_models import MODELS

    lib, ours, theirs = ours_and_onnxruntime(MODELS / "torch_cnn_float32.onnx", tmp_path, n=2)
    kinds = [op.kind for op in lib.graph.operators]
    assert {"LEAKY_RELU", "GATHER", "MEAN", "FULLY_CONNECTED"} <= set(kinds), kinds
    assert kinds.count("TRANSPOSE") <= 1, kinds  # NCHW -> NHWC once
    for k, (got, want) in enumerate(zip(ours, theirs)):
        assert_same_bits(got[0], want[0], f"set {k}")


def rnn_nodes(rng, kind: str, tag: str, steps=6, width=5, hidden=4, x="x", state=None, bias=True, **attrs):
    """An LSTM or GRU over the ``steps`` steps of ``width`` features of ``x``, hidden size ``hidden``, biases
    (or none); from an initial state if ``state`` (the default: the GRU's). (nodes, outputs, initializers),
    every name but ``x`` tagged."""
    gates = 4 if kind == "LSTM" else 3
    state = kind == "GRU" if state is None else state
    names = [x, f"{tag}w", f"{tag}r", f"{tag}b" if bias else "", "", f"{tag}h0" if state else ""]
    inits = [const(rng, f"{tag}w", (1, gates * hidden, width)), const(rng, f"{tag}r", (1, gates * hidden, hidden))]
    if bias:
        inits.append(const(rng, f"{tag}b", (1, 2 * gates * hidden)))
    if state:
        inits.append(const(rng, f"{tag}h0", (1, 1, hidden)))
    if kind == "LSTM" and state:
        names.append(f"{tag}c0")
        inits.append(const(rng, f"{tag}c0", (1, 1, hidden)))
    while not names[-1]:
        names.pop()
    outputs = {f"{tag}y": [steps, 1, 1, hidden], f"{tag}yh": [1, 1, hidden]}
    if kind == "LSTM":
        outputs[f"{tag}yc"] = [1, 1, hidden]
    return [helper.make_node(kind, names, list(outputs), hidden_size=hidden, **attrs)], outputs, inits


RNN_CASES = [  # kind, steps, width, hidden, initial state, bias, attributes
    ("LSTM", 6, 5, 4, False, True, {}),
    ("LSTM", 9, 7, 13, True, True, {}),
    ("LSTM", 3, 20, 37, False, False, {}),
    ("GRU", 6, 5, 4, True, True, {}),
    ("GRU", 8, 3, 13, False, True, {}),
    ("GRU", 4, 6, 7, True, False, {}),
    ("GRU", 5, 9, 21, True, True, {"linear_before_reset": 1}),
    ("GRU", 7, 6, 5, False, True, {"linear_before_reset": 1}),
    ("GRU", 3, 4, 6, True, False, {"linear_before_reset": 1}),
]


def rnn_model(path, seed: int = 8, cases=RNN_CASES) -> dict:
    """One model of RNN_CASES's recurrences, each over its own input: saved at ``path``; its outputs."""
    import onnx

    rng = np.random.default_rng(seed)
    nodes, outputs, inits, inputs = [], {}, [], {}
    for k, (kind, steps, width, hidden, state, bias, attrs) in enumerate(cases):
        n, o, i = rnn_nodes(rng, kind, f"n{k}", steps, width, hidden, f"x{k}", state, bias, **attrs)
        nodes, inits = nodes + n, inits + i
        outputs.update(o)
        inputs[f"x{k}"] = [steps, 1, width]
    onnx.save(model(nodes, inputs, outputs, inits, opset=18), path)
    return outputs


def test_recurrent_unrolled_bit_for_bit(tmp_path):
    """ONNX's LSTM and GRU (both reset modes, with and without biases and initial states, hidden sizes 4 to
    37) unrolled (onnx_rnn.py) in ONNX Runtime's order (x W, + h R, + the biases; MLAS's logistic and tanh,
    the GRU's own rational ones for its reset gate and candidate): its outputs bit for bit."""
    path = tmp_path / "recurrent.onnx"
    outputs = rnn_model(path)
    lib, ours, theirs = ours_and_onnxruntime(path, tmp_path, n=3)
    assert "UNIDIRECTIONAL_SEQUENCE_LSTM" not in {op.kind for op in lib.graph.operators}
    assert any(op.options.get("ort_gru") for op in lib.graph.operators)
    for k, (got, want) in enumerate(zip(ours, theirs)):
        for name, g, t in zip(outputs, got, want):
            assert_same_bits(g, t, f"{name} set {k}")


@pytest.mark.long
def test_recurrent_on_board_equal_to_host(tmp_path):
    """The unrolled LSTM and GRUs on the M4 (mps2_an386): the host's bits, which are ONNX Runtime's."""
    from onnx_models import inputs_for, session

    from microcompiler.compiler import compile_model
    from microcompiler.host import HostProgram
    from microcompiler.project import run_on_board

    path = tmp_path / "recurrent.onnx"
    outputs = rnn_model(path, seed=9, cases=RNN_CASES[1::2])
    inputs = inputs_for(path, 1, seed=3)[0]
    host = HostProgram(compile_model(path), tmp_path / "host").run([inputs])[0].outputs
    _, _, run = run_on_board(path, "mps2_an386", tmp_path / "project", input=inputs, log=lambda _: None)
    s = session(path)
    theirs = s.run(None, dict(zip([i.name for i in s.get_inputs()], inputs)))
    for name, got, h, want in zip(outputs, run.outputs, host, theirs):
        assert_same_bits(got, h, f"{name}: mps2_an386 vs the host")
        assert_same_bits(h, want, f"{name}: host vs ONNX Runtime")


@pytest.mark.long
@pytest.mark.parametrize("name", ["resnet8_float32", "mobilenet_v2_035_96_float32"])
def test_mlperf_sized_float_models(tmp_path, name):
    """The float ResNet-8 and MobileNetV2-0.35 (96x96) of tests/models/onnx against ONNX Runtime:
    bit for bit (MobileNetV2's depthwise Convs, BatchNorms folded as ONNX Runtime folds them, the
    pointwise Convs, the pool over 16-channel blocks and the Softmax all in ONNX Runtime's order; ResNet-8's
    residual Adds computed as the Conv before each, into which ONNX Runtime fuses them, computes them:
    its sum starting at the residual, onnx_conv.conv_with_sum)."""
    from onnx_models import MODELS

    lib, ours, theirs = ours_and_onnxruntime(MODELS / f"{name}.onnx", tmp_path, n=2)
    for k, (got, want) in enumerate(zip(ours, theirs)):
        assert_same_bits(got[0], want[0], f"{name} set {k}")
    kinds = {op.kind for op in lib.graph.operators}
    assert "GATHER" in kinds or "FULLY_CONNECTED" in kinds  # convolutions in ONNX Runtime's order


def test_softmax_and_ds_cnn_float_bit_for_bit(tmp_path):
    """Softmax in MLAS's order (kernel_ort.h) over rows of 1 to 100 values (the 16-lane sum's folds, 48-value
    blocks and tails), and the float DS-CNN of tests/models/onnx (depthwise Convs with their BatchNorms
    folded as ONNX Runtime's ConvMulFusion/ConvAddFusion fold them, pool, MatMul, Softmax): ONNX Runtime's
    bits."""
    import onnx
    from onnx_models import MODELS

    nodes = [helper.make_node("Softmax", [f"x{d}"], [f"y{d}"], axis=-1) for d in (1, 5, 16, 17, 49, 100)]
    inputs = {f"x{d}": [3, d] for d in (1, 5, 16, 17, 49, 100)}
    path = tmp_path / "softmax.onnx"
    onnx.save(model(nodes, inputs, {f"y{d}": [3, d] for d in (1, 5, 16, 17, 49, 100)}, []), path)
    for source in (path, MODELS / "ds_cnn_float32.onnx"):
        lib, ours, theirs = ours_and_onnxruntime(source, tmp_path / source.stem, n=3)
        for k, (got, want) in enumerate(zip(ours, theirs)):
            for g, t in zip(got, want):
                assert_same_bits(g, t, f"{source.name} set {k}")
        assert any(op.options.get("ort_softmax") for op in lib.graph.operators if op.kind == "SOFTMAX")
    assert "MUL" not in {op.kind for op in lib.graph.operators}  # the BatchNorms folded into the Convs


def test_absurd_shapes_refused_before_any_table(tmp_path):
    """Pads, Resize sizes or ConvTranspose strides that multiply out to billions of elements: one line,
    before the index tables (as large as the output) are made."""
    import onnx

    weights = numpy_helper.from_array(np.ones((3, 2, 3, 3), np.float32), "w")
    cases = {
        "pad": ([helper.make_node("Pad", ["x", "p"], ["y"])], [_ints("p", [0, 0, 0, 0, 0, 0, 10**9, 10**9])]),
        "resize": (
            [helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode="linear")],
            [_ints("s", [1, 3, 10**5, 10**5])],
        ),
        "deconv": ([helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[10**5, 10**5])], [weights]),
    }
    for name, (nodes, inits) in cases.items():
        graph = helper.make_graph(
            nodes,
            name,
            [helper.make_tensor_value_info("x", 1, [1, 3, 6, 8])],
            [helper.make_tensor_value_info("y", 1, None)],
            inits,
        )
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / f"{name}.onnx")
        with pytest.raises(UnsupportedModelError, match="far too large for a microcontroller"):
            load_tflite(tmp_path / f"{name}.onnx")


@pytest.mark.long
@pytest.mark.parametrize("board", ["mps2_an386", "mps3_an547", "mps2_an385"])
def test_float_ds_cnn_on_boards_equal_to_host(tmp_path, board):
    """The float DS-CNN (ONNX Runtime's bits on the host: its Softmax's fused multiply-adds and scaling,
    the depthwise chains) on the M4 and M55 (VFMA.F32) and the M3 (newlib's fmaf): the host's bits."""
    from onnx_models import MODELS, inputs_for

    from microcompiler.project import run_on_board

    path = MODELS / "ds_cnn_float32.onnx"
    lib, ours, theirs = ours_and_onnxruntime(path, tmp_path, n=1)
    assert_same_bits(ours[0][0], theirs[0][0], "host vs ONNX Runtime")
    _, _, run = run_on_board(path, board, tmp_path / board, input=inputs_for(path, 1)[0], log=lambda _: None)
    assert_same_bits(run.outputs[0], ours[0][0], f"{board} vs the host")
