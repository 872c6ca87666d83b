"""CONCATENATION against the TFLM oracle: int8, int16, float32; 1-D..4-D, 2-5 inputs, negative axes,
constant inputs, a repeated input, and a RELU/RELU6 fused into it by the fuse_activations pass."""

import numpy as np
import pytest
from harness import assert_matches_oracle, compile_bytes
from model_builder import ModelBuilder, concatenation_options

from microcompiler.errors import UnsupportedModelError


def concat_model(shapes, dtype, axis, qs=None, out_q=(None, None), after=None):
    """Concatenate activations of the given shapes; ``after`` adds a standalone activation op."""
    qs = qs or [out_q] * len(shapes)
    b = ModelBuilder()
    xs = [b.activation(f"x{k}", s, dtype, scale=q[0], zero_point=q[1]) for k, (s, q) in enumerate(zip(shapes, qs))]
    out_shape = list(shapes[0])
    out_shape[axis] = sum(s[axis] for s in shapes)
    y = b.activation("y", out_shape, dtype, scale=out_q[0], zero_point=out_q[1])
    b.op("CONCATENATION", xs, [y], concatenation_options(axis))
    if after:
        z = b.activation("z", out_shape, dtype, scale=out_q[0], zero_point=out_q[1])
        b.op(after, [y], [z])
        y = z
    return b.finish(xs, [y])


@pytest.mark.parametrize(
    "shapes,axis",
    [
        ([[5], [3]], 0),
        ([[2, 3], [2, 4], [2, 1]], 1),
        ([[2, 3], [1, 3]], -2),
        ([[2, 3, 4], [2, 1, 4], [2, 2, 4]], -2),
        ([[1, 4, 4, 3], [1, 4, 4, 5]], -1),
        ([[1, 2, 3, 2]] * 5, 3),
        ([[2, 2, 3, 2], [1, 2, 3, 2], [3, 2, 3, 2], [1, 2, 3, 2]], -4),
    ],
)
@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_concatenation_matches_tflm(tmp_path, shapes, axis, dtype):
    q = (0.05, -128 if axis % 2 else 127) if dtype == "int8" else (None, None)
    assert_matches_oracle(concat_model(shapes, dtype, axis, out_q=q), tmp_path)


@pytest.mark.parametrize("shapes,axis", [([[2, 3, 4], [2, 3, 1]], -1), ([[3, 2], [3, 2], [1, 2]], 0)])
def test_concatenation_int16_matches_tflm(tmp_path, shapes, axis):
    # int16 inputs may have different scales; TFLM copies the values unchanged.
    qs = [(0.001 * (k + 1), 0) for k in range(len(shapes))]
    assert_matches_oracle(concat_model(shapes, "int16", axis, qs, out_q=(0.002, 0)), tmp_path)


def test_concatenation_sanitized(tmp_path):
    model = concat_model([[2, 3, 2], [2, 1, 2], [2, 4, 2]], "int8", 1, out_q=(0.1, -3))
    assert_matches_oracle(model, tmp_path, sanitize=True)


def test_concatenation_with_constant_and_repeated_inputs(tmp_path):
    b = ModelBuilder()
    x = b.activation("x", [2, 3], "int8", scale=0.1, zero_point=4)
    c = b.constant("c", np.array([[-128, 0, 127], [1, 2, 3]], dtype=np.int8), scale=0.1, zero_point=4)
    y = b.activation("y", [6, 3], "int8", scale=0.1, zero_point=4)
    b.op("CONCATENATION", [x, c, x], [y], concatenation_options(0))
    assert_matches_oracle(b.finish([x], [y]), tmp_path)


@pytest.mark.parametrize(
    "dtype,act,q",
    [
        ("int8", "RELU", (0.05, -7)),
        ("int8", "RELU6", (0.04, -100)),
        ("float32", "RELU6", (None, None)),
        ("int16", "RELU", (0.001, 0)),
    ],
)
def test_concatenation_with_fused_activation(tmp_path, dtype, act, q):
    """CONCATENATION -> RELU/RELU6 becomes one operator with a fused clamp, matching TFLM's two ops."""
    model = concat_model([[2, 5], [2, 3]], dtype, -1, out_q=q, after=act)
    library = assert_matches_oracle(model, tmp_path)
    assert [o["kind"] for o in library.metadata["operators"]] == ["CONCATENATION"]


def test_concatenation_rejections(tmp_path):
    mismatched = concat_model([[2, 2], [2, 2]], "int8", 0, qs=[(0.1, 0), (0.2, 0)], out_q=(0.1, 0))
    with pytest.raises(UnsupportedModelError, match=r"CONCATENATION\).*scale and zero point"):
        compile_bytes(mismatched, tmp_path / "a")
    b = ModelBuilder()
    x0, x1 = b.activation("x0", [2, 2], "float32"), b.activation("x1", [2, 3], "float32")
    y = b.activation("y", [4, 2], "float32")
    b.op("CONCATENATION", [x0, x1], [y], concatenation_options(0))
    with pytest.raises(UnsupportedModelError, match=r"CONCATENATION\).*does not fit"):
        compile_bytes(b.finish([x0, x1], [y]), tmp_path / "b")


@pytest.mark.parametrize(
    "dtype,shapes,axis",
    [("int32", [[2, 3], [2, 1], [2, 2]], 1), ("int64", [[1, 3], [2, 3]], 0), ("bool", [[2, 2, 1], [2, 2, 3]], -1)],
)
def test_concatenation_raw_types_match_tflm(tmp_path, dtype, shapes, axis):
    """int32, int64 and bool values are copied as they are (no quantization parameters)."""
    import movement_models  # noqa: F401  (teaches the model builder the bool type)

    assert_matches_oracle(concat_model(shapes, dtype, axis), tmp_path, n_inputs=2, sanitize=dtype == "bool")


def test_concatenation_rejects_an_activation_on_int32(tmp_path):
    from movement_models import assert_clean_rejection

    b = ModelBuilder()
    x0, x1 = b.activation("x0", [2], "int32"), b.activation("x1", [2], "int32")
    y = b.activation("y", [4], "int32")
    b.op("CONCATENATION", [x0, x1], [y], concatenation_options(0, "RELU"))
    assert_clean_rejection(b.finish([x0, x1], [y]), tmp_path, "TFLM's CONCATENATION allows none")
