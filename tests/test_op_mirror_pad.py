"""MIRROR_PAD against the TFLM oracle: int8 and float32, REFLECT and SYMMETRIC, 1-D..5-D, zero and
asymmetric paddings, int32/int64 paddings; malformed paddings rejected with one line."""
import numpy as np
import pytest

from harness import assert_matches_oracle
from model_builder import ModelBuilder, _opts
from spatial_cli import assert_cli_rejects

Q = {"int8": dict(scale=0.05, zero_point=-3), "float32": {}}
MODE = {"REFLECT": 0, "SYMMETRIC": 1}


def mirror_pad_model(shape, dtype, paddings, mode, paddings_dtype=np.int32, out_shape=None, paddings_const=True):
    b = ModelBuilder()
    x = b.activation("x", shape, dtype, **Q[dtype])
    pads = np.array(paddings, dtype=paddings_dtype).reshape(-1, 2)
    p = b.constant("paddings", pads) if paddings_const else b.activation("paddings", list(pads.shape), "int32")
    out_shape = out_shape or [d + a + c for d, (a, c) in zip(shape, paddings)]
    y = b.activation("y", out_shape, dtype, **Q[dtype])
    b.op("MIRROR_PAD", [x, p], [y], _opts("MirrorPadOptions", mode=MODE[mode]))
    return b.finish([x] + ([] if paddings_const else [p]), [y])


CASES = [
    ("int8", [1, 5, 5, 3], [[0, 0], [1, 1], [2, 2], [0, 0]], "REFLECT", np.int32),
    ("int8", [1, 5, 5, 3], [[0, 0], [1, 1], [2, 2], [0, 0]], "SYMMETRIC", np.int32),
    ("int8", [2, 3, 4], [[1, 0], [0, 2], [3, 3]], "REFLECT", np.int64),
    ("int8", [2, 3, 4], [[2, 1], [3, 0], [4, 4]], "SYMMETRIC", np.int32),  # pads as large as the input
    ("int8", [1], [[0, 1]], "SYMMETRIC", np.int32),  # one element
    ("int8", [3, 4], [[0, 0], [0, 0]], "REFLECT", np.int32),  # nothing to pad: a copy
    ("float32", [7], [[3, 2]], "REFLECT", np.int32),
    ("float32", [2, 3, 2, 2, 3], [[0, 1], [1, 1], [0, 0], [1, 0], [2, 2]], "SYMMETRIC", np.int64),
    ("float32", [1, 4, 6, 1], [[0, 0], [3, 3], [5, 5], [0, 0]], "REFLECT", np.int32),
]


@pytest.mark.parametrize("dtype,shape,paddings,mode,pdtype", CASES,
                         ids=[f"{c[0]}-{'x'.join(map(str, c[1]))}-{c[3]}" for c in CASES])
def test_mirror_pad_matches_tflm(tmp_path, dtype, shape, paddings, mode, pdtype):
    assert_matches_oracle(mirror_pad_model(shape, dtype, paddings, mode, pdtype), tmp_path)


def test_mirror_pad_sanitized(tmp_path):
    model = mirror_pad_model([2, 4, 3, 2], "int8", [[1, 1], [2, 3], [2, 0], [0, 1]], "SYMMETRIC")
    assert_matches_oracle(model, tmp_path, sanitize=True)


@pytest.mark.parametrize("model,message", [
    (lambda: mirror_pad_model([3, 4], "float32", [[0, 0], [4, 0]], "REFLECT"), "too large"),
    (lambda: mirror_pad_model([3, 4], "float32", [[0, 0], [1, 1]], "REFLECT", out_shape=[3, 5]), "output shape"),
    (lambda: mirror_pad_model([3, 4], "float32", [[0, 0], [-1, 1]], "SYMMETRIC", out_shape=[3, 4]), "negative"),
    (lambda: mirror_pad_model([3, 4], "int8", [[0, 0], [1, 1]], "REFLECT", paddings_const=False), "not supported yet"),
])
def test_mirror_pad_rejects(tmp_path, model, message):
    assert_cli_rejects(model(), tmp_path, "MIRROR_PAD", message)
