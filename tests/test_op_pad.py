"""PAD and PADV2 against the TFLM oracle: int8 (pads with the output zero point), int16 (pads with 0
whatever the zero point, as TFLM), int32, float32; explicit padding values (constant or computed at
run time); 1-D..5-D, zero and asymmetric paddings, int32 paddings (int64 and 6-D refused as TFLM)."""

import numpy as np
import pytest
from harness import assert_matches_oracle, compile_bytes
from model_builder import ModelBuilder
from model_merge import assert_cases_match_oracle
from oracle import Oracle, TFLMError

from microcompiler.errors import UnsupportedModelError


def pad_model(shape, dtype, paddings, q=(None, None), out_q=None, paddings_dtype=np.int32, out_shape=None):
    b = ModelBuilder()
    out_q = out_q or q
    x = b.activation("x", shape, dtype, scale=q[0], zero_point=q[1])
    p = b.constant("paddings", np.array(paddings, dtype=paddings_dtype).reshape(len(shape), 2))
    out_shape = out_shape or [d + a + c for d, (a, c) in zip(shape, paddings)]
    y = b.activation("y", out_shape, dtype, scale=out_q[0], zero_point=out_q[1])
    b.op("PAD", [x, p], [y])
    return b.finish([x], [y])


def test_pad_matches_tflm(tmp_path):
    """Every case side by side in one model (one build); each output compared with TFLM."""
    cases = {}
    for shape, paddings, q in [
        ([1, 5, 5, 3], [[0, 0], [1, 1], [1, 1], [0, 0]], (0.05, -128)),  # image style, 'SAME' conv prologue
        ([1, 4, 6, 2], [[0, 0], [2, 0], [0, 3], [0, 0]], (0.1, 127)),  # asymmetric
        ([2, 3, 4, 5], [[1, 0], [0, 0], [0, 0], [1, 2]], (0.02, 7)),  # batch and channels
        ([3, 4], [[0, 0], [0, 0]], (0.1, -3)),  # nothing to pad: a copy
        ([9], [[3, 0]], (0.1, 0)),
        ([2, 1, 3], [[0, 1], [2, 2], [0, 0]], (0.1, -20)),  # pads a dimension of extent 1
    ]:
        cases[f"int8-{shape}-{paddings}"] = pad_model(shape, "int8", paddings, q)
    # TFLM copies the values unchanged and pads with the *output* zero point.
    cases["int8-requantized"] = pad_model([2, 3, 2], "int8", [[0, 0], [1, 1], [0, 1]], (0.1, -128), out_q=(0.2, 9))
    for shape, paddings, zero_point in [
        ([1, 3, 3, 4], [[0, 0], [1, 2], [2, 1], [0, 0]], 0),
        ([4, 5], [[1, 1], [0, 2]], 5),  # TFLM pads int16 with 0, not the zero point
    ]:
        cases[f"int16-{shape}-{paddings}"] = pad_model(shape, "int16", paddings, (0.001, zero_point))
    for shape, paddings in [
        ([7], [[1, 2]]),
        ([3, 4], [[0, 1], [3, 0]]),
        ([2, 3, 4], [[1, 1], [0, 0], [1, 0]]),
        ([1, 2, 3, 2, 2], [[0, 0], [1, 0], [0, 0], [1, 1], [0, 1]]),  # 5-D
    ]:
        cases[f"float32-{shape}-{paddings}"] = pad_model(shape, "float32", paddings)
    for shape, paddings in [([3, 4], [[1, 0], [2, 1]]), ([1, 2, 3, 2], [[0, 0], [1, 1], [0, 2], [0, 0]])]:
        cases[f"int32-{shape}-{paddings}"] = pad_model(shape, "int32", paddings)
    assert_cases_match_oracle(cases, tmp_path)


def test_pad_sanitized(tmp_path):
    model = pad_model([1, 3, 4, 3], "int8", [[0, 0], [1, 2], [2, 1], [0, 1]], (0.05, 3))
    assert_matches_oracle(model, tmp_path, sanitize=True)


@pytest.mark.parametrize(
    "shape,paddings,dtype,match",
    [
        ([1, 3, 4, 2], [[0, 0], [2, 1], [0, 3], [0, 0]], np.int64, "paddings of type int64"),
        ([1, 1, 1, 1, 2, 3], [[0, 0]] * 5 + [[1, 1]], np.int32, "6-D input"),
    ],
)
def test_pad_refuses_what_tflm_refuses(tmp_path, shape, paddings, dtype, match):
    """TFLM's PadPrepare reads the paddings as int32 (int64 paddings give it other output dimensions, so
    it refuses the model) and pads at most 5-D inputs: no reference confirms an answer, so these are
    refused too (they used to be computed, int64 read properly)."""
    model = pad_model(shape, "float32", paddings, paddings_dtype=dtype)
    with pytest.raises(TFLMError):
        Oracle(model)
    with pytest.raises(UnsupportedModelError, match=match):
        compile_bytes(model, tmp_path)


def test_pad_rejections(tmp_path):
    with pytest.raises(UnsupportedModelError, match=r"PAD\).*negative paddings"):
        compile_bytes(pad_model([4, 4], "float32", [[0, 0], [-1, 1]]), tmp_path / "a")
    with pytest.raises(UnsupportedModelError, match=r"PAD\).*does not match"):
        compile_bytes(pad_model([4, 4], "float32", [[0, 0], [1, 1]], out_shape=[4, 5]), tmp_path / "b")
    b = ModelBuilder()  # paddings computed at run time
    x = b.activation("x", [2, 2], "float32")
    p = b.activation("p", [2, 2], "int32")
    y = b.activation("y", [3, 3], "float32")
    b.op("PAD", [x, p], [y])
    with pytest.raises(UnsupportedModelError, match=r"PAD\).*constant"):
        compile_bytes(b.finish([x, p], [y]), tmp_path / "c")


def padv2_model(shape, dtype, paddings, value, q=(None, None), value_q=None, kind="PADV2", value_const=True):
    b = ModelBuilder()
    x = b.activation("x", shape, dtype, scale=q[0], zero_point=q[1])
    p = b.constant("paddings", np.array(paddings, dtype=np.int32).reshape(len(shape), 2))
    vq = value_q or q
    if value_const:
        v = b.constant("value", np.array([value], dtype=dtype), scale=vq[0], zero_point=vq[1])
    else:
        v = b.activation("value", [1], dtype, scale=vq[0], zero_point=vq[1])
    y = b.activation("y", [d + a + c for d, (a, c) in zip(shape, paddings)], dtype, scale=q[0], zero_point=q[1])
    b.op(kind, [x, p, v], [y])
    return b.finish([x] + ([] if value_const else [v]), [y])


def test_padv2_matches_tflm(tmp_path):
    assert_cases_match_oracle(
        {
            f"{kind}-{dtype}-{value}": padv2_model([2, 3, 4], dtype, [[1, 0], [0, 2], [1, 1]], value, q, kind=kind)
            for dtype, value, q in [
                ("int8", -100, (0.05, 3)),
                ("int8", 127, (0.1, -128)),
                ("int16", -3000, (0.001, 0)),
                ("int32", 123456, (None, None)),
                ("float32", -2.5, (None, None)),
            ]
            for kind in ("PADV2", "PAD")
        },
        tmp_path,
    )  # TFLM reads a third input of PAD too


def test_padv2_value_computed_at_run_time(tmp_path):
    model = padv2_model([1, 3, 3, 2], "int8", [[0, 0], [1, 1], [2, 0], [0, 0]], 0, (0.05, 3), value_const=False)
    assert_matches_oracle(model, tmp_path, sanitize=True)


def test_padv2_rejects_a_differently_quantized_int8_value(tmp_path):
    from spatial_cli import assert_cli_rejects

    model = padv2_model([2, 3], "int8", [[1, 0], [0, 1]], 5, (0.05, 3), value_q=(0.05, 0))
    assert_cli_rejects(model, tmp_path, "PADV2", "quantization")
