"""TFLM's prepare-time checks, mirrored at import (issue 24 item 3, issue 22 item 4; the audit is
docs/prepare_checks.md).

Each case is one single-operator seed of tests/fuzz/op_seeds.py with one field edited so that TFLite
Micro's prepare step refuses the model (the oracle, in a child process, fails to allocate it):
microcompiler refuses it too, in one line naming the problem, where it used to compile it (found by
mutating the seeds' fields and keeping the mutants microcompiler compiled but TFLM refused). The
unedited seed compiles and TFLM prepares it, so each edit is what makes the difference. Cheap: no
build, no board run.
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import compile_bytes
from test_reliability_models import fully_connected, refused, tflm_refuses
from test_reliability_operators import edited

from microcompiler.errors import ModelFormatError, UnsupportedModelError


def _seeds() -> dict[str, bytes]:
    from fuzz.op_seeds import op_seeds

    return op_seeds()


SEEDS = _seeds()
SEEDS["fully_connected_int8"] = fully_connected()  # per-tensor weights, bias scale = input * weight scale


def tensor_named(m, name: str):
    """The tensor of subgraph 0 called ``name`` (the builder's names: x, y, c0, ...)."""
    sub = m.subgraphs[0]
    return next(t for t in sub.tensors if t.name.decode() == name)


def reshaped(name: str, shape):
    def edit(m):
        tensor_named(m, name).shape = list(shape)

    return edit


def output_reshaped(shape):
    def edit(m):
        m.subgraphs[0].tensors[m.subgraphs[0].operators[0].outputs[0]].shape = list(shape)

    return edit


def input_of_operator(position: int, tensor: int):
    def edit(m):
        inputs = list(m.subgraphs[0].operators[0].inputs)
        inputs[position] = tensor
        m.subgraphs[0].operators[0].inputs = inputs

    return edit


def option(field: str, value):
    def edit(m):
        setattr(m.subgraphs[0].operators[0].builtinOptions, field, value)

    return edit


INT64 = 4  # the schema's TensorType.INT64


def constant_values(name: str, values: np.ndarray, dtype: int):
    """Tensor ``name``'s buffer replaced by ``values``, its shape by theirs and its type by ``dtype``."""

    def edit(m):
        t = tensor_named(m, name)
        t.shape, t.type = list(values.shape), dtype
        m.buffers[t.buffer].data = np.frombuffer(values.tobytes(), np.uint8)

    return edit


def _const_name(seed: str, position: int) -> str:
    """The name of operator 0's input ``position`` in ``seed``."""
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

    m = fb.ModelT.InitFromPackedBuf(SEEDS[seed], 0)
    return m.subgraphs[0].tensors[m.subgraphs[0].operators[0].inputs[position]].name.decode()


# (seed, edit, fragments of our one-line error, error class): each found by the field mutator
CASES = {
    "concatenation_fused_relu": (
        "op:CONCATENATION_int8",
        option("fusedActivationFunction", 1),
        ("RELU", "TFLM's CONCATENATION allows none"),
        ModelFormatError,
    ),
    "expand_dims_axis_is_an_activation": (
        "op:EXPAND_DIMS_int8",
        input_of_operator(1, 0),
        ("axis computed at run time", "TFLM requires a constant"),
        UnsupportedModelError,
    ),
    "expand_dims_axis_2d": (
        "op:EXPAND_DIMS_int8",
        reshaped(_const_name("op:EXPAND_DIMS_int8", 1), [1, 1]),
        ("axis tensor has shape [1, 1]",),
        ModelFormatError,
    ),
    "expand_dims_axis_int64": (
        "op:EXPAND_DIMS_int8",
        constant_values(_const_name("op:EXPAND_DIMS_int8", 1), np.array([1], np.int64), INT64),
        ("axis must be int32",),
        UnsupportedModelError,
    ),
    "resize_nearest_size_2d": (
        "op:RESIZE_NEAREST_NEIGHBOR_int8",
        reshaped(_const_name("op:RESIZE_NEAREST_NEIGHBOR_int8", 1), [1, 2]),
        ("size tensor has shape [1, 2]",),
        ModelFormatError,
    ),
    "resize_bilinear_size_2d": (
        "op:RESIZE_BILINEAR_int8",
        reshaped(_const_name("op:RESIZE_BILINEAR_int8", 1), [2, 1]),
        ("size tensor has shape [2, 1]",),
        ModelFormatError,
    ),
    "transpose_permutation_2d": (
        "op:TRANSPOSE_int8",
        reshaped(_const_name("op:TRANSPOSE_int8", 1), [1, 3]),
        ("permutation tensor has shape [1, 3]", "one-dimensional"),
        ModelFormatError,
    ),
    "reverse_axis_scalar": (
        "op:REVERSE_V2_int8",
        reshaped(_const_name("op:REVERSE_V2_int8", 1), []),
        ("axis tensor has shape []", "one-dimensional"),
        ModelFormatError,
    ),
    "reverse_axis_int64": (
        "op:REVERSE_V2_int8",
        constant_values(_const_name("op:REVERSE_V2_int8", 1), np.array([1], np.int64), INT64),
        ("axis must be int32",),
        UnsupportedModelError,
    ),
    "broadcast_to_shape_2d": (
        "op:BROADCAST_TO_int8",
        reshaped(_const_name("op:BROADCAST_TO_int8", 1), [2, 1]),
        ("shape tensor is [2, 1]", "one-dimensional"),
        ModelFormatError,
    ),
    "svdf_bias_2d": (
        "op:SVDF_int8",
        lambda m: setattr(
            m.subgraphs[0].tensors[m.subgraphs[0].operators[0].inputs[3]],
            "shape",
            [1, *m.subgraphs[0].tensors[m.subgraphs[0].operators[0].inputs[3]].shape],
        ),
        ("bias has shape [1, 4]", "num_units"),
        ModelFormatError,
    ),
    "fully_connected_bias_scale": (
        "fully_connected_int8",
        lambda m: setattr(m.subgraphs[0].tensors[m.subgraphs[0].operators[0].inputs[2]].quantization, "scale", [0.5]),
        ("bias scale 0.5 is not input scale * weight scale", "prepare step"),
        UnsupportedModelError,
    ),
    "custom_operator_whose_code_names_a_builtin": (
        "op:SignalDelay_int16",
        lambda m: setattr(m.operatorCodes[0], "deprecatedBuiltinCode", 101),  # ABS: the larger code wins
        ("(ABS) is a builtin operator carrying custom options",),
        ModelFormatError,
    ),
    "lstm_hidden_state_1d": (
        "op:UNIDIRECTIONAL_SEQUENCE_LSTM_int8",
        lambda m: setattr(m.subgraphs[0].tensors[m.subgraphs[0].operators[0].inputs[18]], "shape", [6]),
        ("the hidden state has shape [6]",),
        ModelFormatError,
    ),
    "lstm_hidden_state_3d": (
        "op:UNIDIRECTIONAL_SEQUENCE_LSTM_int8",
        lambda m: setattr(m.subgraphs[0].tensors[m.subgraphs[0].operators[0].inputs[18]], "shape", [1, 1, 6]),
        ("the hidden state has shape [1, 1, 6]",),
        ModelFormatError,
    ),
    "squeeze_output_too_small": (
        "op:SQUEEZE_int8",
        output_reshaped([4, 3]),
        ("does not hold the dimensions [3, 4]",),
        ModelFormatError,
    ),
}


_SEEDS_CHECKED: set[str] = set()


@pytest.mark.parametrize("case", list(CASES))
def test_a_model_tflm_refuses_at_prepare_is_refused_in_one_line(tmp_path, case):
    seed, edit, fragments, error = CASES[case]
    model = edited(SEEDS[seed], edit)
    assert tflm_refuses(model), f"{case}: TFLM prepares the edited model"
    refused(model, tmp_path / "bad", *fragments, error=error)
    if seed not in _SEEDS_CHECKED:  # the unedited seed: TFLM prepares it and it compiles (once per seed)
        assert not tflm_refuses(SEEDS[seed])
        compile_bytes(SEEDS[seed], tmp_path / "seed")
        _SEEDS_CHECKED.add(seed)


def _single(kind, x_shape, consts, out_shapes, options=None, **kwargs):
    import movement_models as mm

    return lambda: mm.single_op(kind, x_shape, "int8", consts, out_shapes, options, **kwargs)


def _elementwise(*args, **kwargs):
    from elementwise_models import elementwise_model

    return elementwise_model(*args, **kwargs)


def _gather_options(axis):
    import movement_models as mm

    return mm.gather_options(axis)


def _quantize_model(out_q):
    """A float32 [1, 6] QUANTIZE to int8 with the output quantization ``out_q`` (scales, zero points):
    six equal scales, which the importer keeps as one but TFLM counts as six."""
    import model_builder as mb

    b = mb.ModelBuilder()
    x = b.activation("x", [1, 6], "float32")
    y = b.activation("y", [1, 6], "int8", scale=out_q[0], zero_point=out_q[1])
    b.op("QUANTIZE", [x], [y])
    return b.finish([x], [y])


def _strided_slice_options():
    import movement_models as mm

    return mm.strided_slice_options()


def _softmax_options():
    import model_builder as mb

    return mb.softmax_options(1.0)


def _squeeze_options(dims):
    import movement_models as mm

    return mm.squeeze_options(dims)


# (model, input shape for a TFLM run (None: TFLM's prepare refuses it), fragments, error class): the
# ranks and axis layouts TFLM's kernels take; a run that aborts or fails confirms no answer either
BUILT = {
    "ceil_output_of_another_rank": (
        lambda: _elementwise("CEIL", "float32", [[2, 5]], out_shape=[2, 1, 5]),
        None,
        ("differ (TFLM requires the same shape)",),
        ModelFormatError,
    ),
    "gather_int64_positions": (
        _single("GATHER", [4, 3], [np.array([3, 0, 1], np.int64)], [[3, 3]], _gather_options(0)),
        None,
        ("indices of type int64 are not supported",),
        UnsupportedModelError,
    ),
    "gather_nd_int64_indices": (
        _single("GATHER_ND", [3, 4], [np.array([[2], [0]], np.int64)], [[2, 4]]),
        None,
        ("indices of type int64 are not supported",),
        UnsupportedModelError,
    ),
    "quantize_output_with_per_channel_scales": (
        lambda: _quantize_model(([0.05] * 6, [3] * 6)),
        None,
        ("the output has 6 scales",),
        ModelFormatError,
    ),
    "gather_nd_index_depth_6": (
        _single("GATHER_ND", [1, 1, 1, 1, 1, 1, 2], [np.zeros((1, 6), np.int32)], [[1, 2]]),
        None,
        ("index depth 6 is not supported",),
        UnsupportedModelError,
    ),
    "strided_slice_5d": (
        _single(
            "STRIDED_SLICE",
            [1, 1, 1, 3, 6],
            [np.array(v, np.int32) for v in ([0, 0, 0, 0, 1], [1, 1, 1, 3, 6], [1, 1, 1, 2, 2])],
            [[1, 1, 1, 2, 3]],
            _strided_slice_options(),
        ),
        None,
        ("5-D input", "should not exceed 4"),
        UnsupportedModelError,
    ),
    "strided_slice_int64_indices": (
        _single(
            "STRIDED_SLICE",
            [3, 6],
            [np.array(v, np.int64) for v in ([0, 1], [3, 6], [2, 2])],
            [[2, 3]],
            _strided_slice_options(),
        ),
        None,
        ("begin must be int32",),
        UnsupportedModelError,
    ),
    "softmax_int16_input_zero_point": (
        lambda: _elementwise(
            "SOFTMAX", "int16", [[2, 6]], quant=[(0.001, -129), (1 / 32768, 0)], options=_softmax_options()
        ),
        None,
        ("the int16 input has zero point -129",),
        ModelFormatError,
    ),
    "transpose_6d": (
        _single("TRANSPOSE", [1, 1, 1, 1, 2, 3], [np.array([0, 1, 2, 3, 5, 4], np.int32)], [[1, 1, 1, 1, 3, 2]]),
        None,
        ("6-D input", "1-D to 5-D"),
        UnsupportedModelError,
    ),
    "reverse_7d": (
        _single("REVERSE_V2", [1, 1, 1, 1, 1, 2, 3], [np.array([6], np.int32)], [[1, 1, 1, 1, 1, 2, 3]]),
        None,
        ("7-D input",),
        UnsupportedModelError,
    ),
    "reverse_more_axes_than_dimensions": (
        _single("REVERSE_V2", [2, 3], [np.array([0, 1, 1], np.int32)], [[2, 3]]),
        None,
        ("3 axes for a 2-D input",),
        ModelFormatError,
    ),
    "reverse_axes_not_contiguous": (
        _single("REVERSE_V2", [2, 3, 4], [np.array([0, 2], np.int32)], [[2, 3, 4]]),
        [2, 3, 4],
        ("axes [0, 2] are not contiguous",),
        UnsupportedModelError,
    ),
    "squeeze_9d": (
        _single("SQUEEZE", [1] * 8 + [2], [], [[2]], _squeeze_options([0])),
        None,
        ("9-D input",),
        UnsupportedModelError,
    ),
    "slice_6d": (
        _single(
            "SLICE",
            [1, 1, 1, 1, 2, 3],
            [np.zeros(6, np.int32), np.array([1, 1, 1, 1, 1, 2], np.int32)],
            [[1, 1, 1, 1, 1, 2]],
        ),
        [1, 1, 1, 1, 2, 3],
        ("6-D input", "up to 5-D"),
        UnsupportedModelError,
    ),
}


@pytest.mark.parametrize("case", list(BUILT))
def test_a_rank_or_axis_layout_tflm_cannot_run_is_refused(tmp_path, case):
    from oracle import Oracle, TFLMError

    make, shape, fragments, error = BUILT[case]
    model = make()
    if shape is None:
        assert tflm_refuses(model), f"{case}: TFLM prepares the model"
    else:
        with pytest.raises(TFLMError):
            Oracle(model).run([np.zeros(shape, np.int8)])  # prepared, but TFLM fails or aborts running it
    refused(model, tmp_path, *fragments, error=error)


@pytest.mark.parametrize(
    "seed, field, key",
    [
        ("op:ARG_MAX_int8", "outputType", "output_type"),
        ("op:TRANSPOSE_CONV_int8", "quantizedBiasType", "quantized_bias_type"),
    ],
)
def test_an_options_field_naming_no_tensor_type_is_refused(tmp_path, seed, field, key):
    """ARG_MAX's output_type or TRANSPOSE_CONV's quantized_bias_type 100: TFLM's parser prints
    "Unsupported data type 100 in tensor" and fails to allocate the model, although its kernels read
    the tensors' own types; the importer refused nothing (found by the field mutator)."""
    model = edited(SEEDS[seed], option(field, 100))
    assert tflm_refuses(model)
    refused(model, tmp_path, f"{key} is 100", "no tensor type", error=ModelFormatError)


@pytest.mark.parametrize("shape, dtype", [([3], None), (None, 6)], ids=["three_handles", "bool_handle"])
def test_a_resource_handle_that_is_not_one_resource_is_refused(tmp_path, shape, dtype):
    """ASSIGN_VARIABLE's handle of another type or with 3 elements: TFLM's prepare refuses it
    (assign_variable.cc), microcompiler resolved the variable anyway (found by the field mutator)."""
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

    seed = SEEDS["op:CALL_ONCE_int8"]
    m = fb.ModelT.InitFromPackedBuf(seed, 0)
    sub, handle = next(
        (k, o.inputs[0])
        for k, g in enumerate(m.subgraphs)
        for o in g.operators
        if m.operatorCodes[o.opcodeIndex].builtinCode == fb.BuiltinOperator.ASSIGN_VARIABLE
    )

    def edit(model):
        t = model.subgraphs[sub].tensors[handle]
        if shape is not None:
            t.shape = shape
        if dtype is not None:
            t.type = dtype

    model = edited(seed, edit)
    assert tflm_refuses(model)
    refused(model, tmp_path, "resource handle tensor", "TFLM refuses it too", error=ModelFormatError)


def test_the_audit_page_covers_every_operator():
    """docs/prepare_checks.md names every operator microcompiler compiles (a new kernel needs its row
    of TFLM's prepare checks), and operators.md and reliability.md link to it."""
    import re
    from pathlib import Path

    from microcompiler.ops.registry import operator_table

    docs = Path(__file__).resolve().parents[1] / "docs"
    page = (docs / "prepare_checks.md").read_text()
    missing = [
        row["operator"]
        for row in operator_table()
        if not re.search(rf"(?<![A-Z_]){re.escape(row['operator'])}(?![A-Z_0-9])", page)
    ]
    assert not missing, f"docs/prepare_checks.md has no row for {missing}"
    for other in ("operators.md", "reliability.md"):
        assert "(prepare_checks.md)" in (docs / other).read_text(), other
