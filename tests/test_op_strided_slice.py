"""STRIDED_SLICE against the TFLM oracle: every type TFLM runs, 1-D..4-D, begin/end/shrink masks,
negative strides and indices, clamped out-of-range bounds; the TensorFlow meaning of ellipsis,
new_axis and offset (which TFLM cannot run) against numpy; malformed options via the CLI."""

import numpy as np
import pytest
from harness import assert_matches_oracle
from model_builder import ModelBuilder, add_options
from movement_models import assert_clean_rejection, side_by_side, single_op, strided_slice_options
from oracle import Oracle, TFLMError


def ss_case(shape, begin, end, strides, out_shape, dtype="int8", **masks):
    consts = [np.array(v, dtype=np.int32) for v in (begin, end, strides)]
    return ("STRIDED_SLICE", shape, dtype, consts, [out_shape], strided_slice_options(**masks))


def ss_model(*args, **kwargs):
    return single_op(*ss_case(*args, **kwargs))


CASES = [  # shape, begin, end, strides, output shape, masks
    ([7], [1], [6], [2], [3], {}),
    ([1], [0], [1], [1], [1], {}),
    ([5, 6], [1, 0], [4, 6], [1, 1], [3, 6], {}),  # whole rows: one memcpy
    ([5, 6], [-1, -1], [-6, 0], [-1, -2], [5, 3], {}),  # negative strides and indices
    ([5, 6], [9, -9], [-9, 9], [-2, 3], [3, 2], {}),  # out-of-range bounds clamp
    ([3, 4, 5], [0, 1, 4], [0, 3, 0], [1, 1, -1], [3, 2, 4], dict(begin_mask=1, end_mask=1)),
    ([3, 4, 5], [1, 2, 0], [2, 3, 5], [1, 1, 2], [3], dict(shrink_axis_mask=3)),
    ([3, 4, 5], [-1, 0, -1], [0, 0, 0], [1, 1, 1], [4], dict(shrink_axis_mask=5, end_mask=2)),
    ([2, 3, 4, 5], [0, 2, 1, 0], [2, 0, 4, 5], [1, -1, 2, 3], [2, 3, 2, 2], dict(end_mask=0b0010)),
    ([2, 3, 4, 3], [1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1], [3, 4, 3], dict(shrink_axis_mask=1, end_mask=14)),
]


def test_strided_slice_int8_matches_tflm(tmp_path):
    """Every case of CASES side by side in one model (output k is case k)."""
    model = side_by_side([ss_case(shape, b, e, s, out, **masks) for shape, b, e, s, out, masks in CASES])
    assert_matches_oracle(model, tmp_path, n_inputs=2)


def test_strided_slice_types_match_tflm(tmp_path):
    model = side_by_side(
        [
            ss_case([4, 5, 3], [3, 0, 1], [0, 5, 3], [-2, 2, 1], [2, 3, 2], dtype)
            for dtype in ("int16", "int32", "float32", "bool")
        ]
    )
    assert_matches_oracle(model, tmp_path, n_inputs=2, sanitize=True)


def test_strided_slice_ignores_ellipsis_and_new_axis_like_tflm(tmp_path):
    """TFLM reads neither ellipsis_mask nor new_axis_mask: a model whose output fits that reading
    runs as TFLM runs it."""
    model = ss_model([4, 5], [1, 0], [3, 5], [1, 2], [2, 3], ellipsis_mask=1, new_axis_mask=2)
    assert_matches_oracle(model, tmp_path, n_inputs=2)


TENSORFLOW_CASES = [  # shape, begin, end, strides, output shape, masks, numpy index
    ([4, 5, 6], [0, 1], [0, 4], [1, 2], [4, 5, 2], dict(ellipsis_mask=1), np.s_[..., 1:4:2]),
    ([4, 5, 6], [2, 0], [3, 0], [1, 1], [5, 6], dict(ellipsis_mask=2, shrink_axis_mask=1), np.s_[2, ...]),
    ([4, 5], [0, 1, 0], [0, 3, 0], [1, 1, 1], [1, 2, 1, 5], dict(new_axis_mask=5), np.s_[None, 1:3, None]),
    ([4, 5], [1], [3], [1], [2, 5], {}, np.s_[1:3]),  # fewer specs than dimensions
    ([6, 5], [1, 2], [3, 2], [1, 1], [3, 2], dict(offset=True), np.s_[1:4, 2:4]),  # end = begin + end
]


@pytest.mark.parametrize(
    "case", TENSORFLOW_CASES[:3] + TENSORFLOW_CASES[4:], ids=["ellipsis", "ellipsis_shrink", "new_axis", "offset"]
)
def test_strided_slice_tensorflow_meaning_is_refused_like_tflm(tmp_path, case):
    """Output shapes only TensorFlow Lite's meaning of ellipsis_mask, new_axis_mask and offset gives
    (numpy's slicing ``case[-1]``): TFLM's prepare step refuses them (CheckOutputSize), so no
    reference confirms an answer and microcompiler refuses them too, saying why."""
    shape, b, e, s, out, masks, index = case
    assert list(np.empty(shape)[index].shape) == out
    model = ss_model(shape, b, e, s, out, **masks)
    with pytest.raises(TFLMError):
        Oracle(model)
    assert_clean_rejection(model, tmp_path, "TensorFlow's meaning")


def test_strided_slice_fewer_specs_than_dimensions_is_refused(tmp_path):
    """begin/end/strides shorter than the input's rank: TFLM reads past them; refused."""
    shape, b, e, s, out, masks, _ = TENSORFLOW_CASES[3]
    assert_clean_rejection(ss_model(shape, b, e, s, out, **masks), tmp_path, "STRIDED_SLICE")


def test_strided_slice_constant_input_is_folded(tmp_path):
    b = ModelBuilder()
    c = b.constant("c", np.arange(12, dtype=np.float32).reshape(3, 4))
    cs = [b.constant(n, np.array(v, np.int32)) for n, v in (("b", [2, 3]), ("e", [-4, -5]), ("s", [-1, -2]))]
    sliced = b.activation("sliced", [3, 2], "float32")
    b.op("STRIDED_SLICE", [c, *cs], [sliced], strided_slice_options())
    y2 = b.activation("y2", [3, 2], "float32")
    x2 = b.activation("x2", [3, 2], "float32")
    b.op("ADD", [x2, sliced], [y2], add_options())
    library = assert_matches_oracle(b.finish([x2], [y2]), tmp_path, n_inputs=1)
    assert [o["kind"] for o in library.metadata["operators"]] == ["ADD"]


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(strides=[1, 0]), "contain 0"),
        (dict(out_shape=[2, 4]), "does not match the slice"),
        (dict(begin=[0, 9], masks=dict(shrink_axis_mask=2), out_shape=[2]), "out of range"),
        (dict(begin=[0, 1], strides=[1, -1], masks=dict(shrink_axis_mask=2), out_shape=[2]), "negative stride"),
        (dict(end=[2, 3, 1]), "differ in length"),
    ],
)
def test_strided_slice_rejections(tmp_path, kwargs, match):
    args = dict(begin=[0, 0], end=[2, 3], strides=[1, 1], out_shape=[2, 3], masks={})
    args.update(kwargs)
    model = ss_model([4, 5], args["begin"], args["end"], args["strides"], args["out_shape"], **args["masks"])
    assert_clean_rejection(model, tmp_path, match)


def test_strided_slice_runtime_begin_is_refused(tmp_path):
    b = ModelBuilder()
    x = b.activation("x", [4, 5], "float32")
    begin = b.activation("begin", [2], "int32")
    end, strides = b.constant("e", np.int32([2, 3])), b.constant("s", np.int32([1, 1]))
    y = b.activation("y", [2, 3], "float32")
    b.op("STRIDED_SLICE", [x, begin, end, strides], [y], strided_slice_options())
    assert_clean_rejection(b.finish([x, begin], [y]), tmp_path, "not supported yet", subprocess_run=True)
