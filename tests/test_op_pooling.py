"""AVERAGE_POOL_2D and MAX_POOL_2D against the TFLM oracle: int8, int16, float32; SAME/VALID padding,
strides, filter sizes (including filters larger than the input under SAME), fused activations."""

import pytest
from harness import compile_bytes
from model_builder import ModelBuilder, pool_options
from model_merge import assert_cases_match_oracle

from microcompiler.errors import UnsupportedModelError
from microcompiler.ops.pooling import pool_geometry

QUANT = {"int8": dict(scale=0.05, zero_point=-3), "int16": dict(scale=0.0004, zero_point=0), "float32": {}}


def pool_model(
    kind, dtype, in_shape, filter_hw, stride, padding, activation="NONE", quant=None, out_quant=None, out_shape=None
):
    b = ModelBuilder()
    q = quant if quant is not None else QUANT[dtype]
    x = b.activation("x", in_shape, dtype, **q)
    if out_shape is None:
        oh = pool_geometry(in_shape[1], filter_hw[0], stride[0], padding)[0]
        ow = pool_geometry(in_shape[2], filter_hw[1], stride[1], padding)[0]
        out_shape = [in_shape[0], oh, ow, in_shape[3]]
    y = b.activation("y", out_shape, dtype, **(out_quant if out_quant is not None else q))
    b.op(kind, [x], [y], pool_options(filter_hw, stride, padding, activation))
    return b.finish([x], [y])


# (dtype, input shape, filter, stride, padding, activation, quantization or None for the default)
CASES = [
    ("int8", [1, 8, 8, 4], (2, 2), (2, 2), "VALID", "NONE", None),
    ("int8", [2, 7, 6, 3], (3, 3), (2, 2), "SAME", "RELU", None),
    ("int8", [1, 7, 9, 5], (3, 4), (2, 1), "SAME", "RELU6", dict(scale=0.02, zero_point=-128)),
    ("int8", [1, 9, 9, 2], (3, 2), (3, 1), "VALID", "RELU_N1_TO_1", dict(scale=0.01, zero_point=127)),
    ("int8", [1, 3, 4, 6], (5, 7), (1, 1), "SAME", "NONE", None),  # filter larger than the input
    ("int8", [1, 5, 5, 3], (5, 5), (1, 1), "VALID", "RELU", None),  # global pooling
    ("int8", [1, 6, 5, 2], (1, 1), (2, 3), "SAME", "NONE", None),  # 1x1 windows, strided
    ("int8", [1, 8, 8, 1], (2, 2), (1, 1), "SAME", "NONE", None),  # padding only after
    ("int16", [1, 8, 8, 4], (2, 2), (2, 2), "VALID", "NONE", None),
    ("int16", [2, 7, 6, 3], (3, 3), (2, 2), "SAME", "RELU6", None),
    ("int16", [1, 3, 4, 2], (4, 6), (2, 2), "SAME", "RELU_N1_TO_1", None),
    ("float32", [1, 8, 8, 4], (2, 2), (2, 2), "VALID", "NONE", None),
    ("float32", [2, 7, 6, 3], (3, 3), (2, 2), "SAME", "RELU", None),
    ("float32", [1, 3, 4, 2], (5, 7), (3, 3), "SAME", "RELU_N1_TO_1", None),
    ("float32", [1, 10, 7, 3], (3, 2), (1, 2), "VALID", "RELU6", None),
]


def _case_id(c):
    return f"{c[0]}-{'x'.join(map(str, c[1]))}-f{c[2][0]}x{c[2][1]}-s{c[3][0]}x{c[3][1]}-{c[4]}-{c[5]}"


@pytest.mark.parametrize("kind", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
@pytest.mark.parametrize("dtype", ["int8", "int16", "float32"])
def test_pooling_matches_tflm(tmp_path, kind, dtype):
    """Every case of one kind and type side by side in one model (one build); each output compared."""
    assert_cases_match_oracle({_case_id(c): pool_model(kind, *c) for c in CASES if c[0] == dtype}, tmp_path)


def test_sanitized(tmp_path):
    assert_cases_match_oracle(
        {
            f"{kind}-{dtype}": pool_model(kind, dtype, shape, f, s, "SAME", act)
            for kind in ("AVERAGE_POOL_2D", "MAX_POOL_2D")
            for dtype, shape, f, s, act in (
                ("int8", [2, 7, 6, 3], (3, 4), (2, 1), "RELU"),
                ("int16", [1, 3, 4, 2], (5, 7), (1, 1), "NONE"),
            )
        },
        tmp_path,
        sanitize=True,
    )


def test_macs_and_variant(tmp_path):
    lib = compile_bytes(pool_model("AVERAGE_POOL_2D", "int8", [1, 8, 8, 4], (3, 3), (2, 2), "SAME"), tmp_path)
    (op,) = lib.metadata["operators"]
    assert op["macs"] == 4 * 4 * 4 * 9
    assert op["kernel"]["clipped_windows"] is True
    lib = compile_bytes(pool_model("MAX_POOL_2D", "int8", [1, 8, 8, 4], (2, 2), (2, 2), "VALID"), tmp_path / "v")
    assert lib.metadata["operators"][0]["kernel"]["clipped_windows"] is False


@pytest.mark.parametrize(
    "model,message",
    [
        (
            lambda: pool_model(
                "MAX_POOL_2D", "int8", [1, 4, 4, 2], (2, 2), (2, 2), "VALID", out_quant=dict(scale=0.1, zero_point=-3)
            ),
            "quantization must be the same",
        ),
        (
            lambda: pool_model(
                "AVERAGE_POOL_2D", "int8", [1, 3, 3, 2], (4, 4), (1, 1), "VALID", out_shape=[1, 1, 1, 2]
            ),
            "does not fit",
        ),
        (
            lambda: pool_model(
                "AVERAGE_POOL_2D", "float32", [1, 4, 4, 2], (2, 2), (2, 2), "VALID", out_shape=[1, 3, 3, 2]
            ),
            "output shape",
        ),
    ],
)
def test_rejects_unsupported(tmp_path, model, message):
    with pytest.raises(UnsupportedModelError, match=message) as info:
        compile_bytes(model(), tmp_path)
    assert "operator 0" in str(info.value)
