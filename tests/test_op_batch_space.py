"""BATCH_TO_SPACE_ND and SPACE_TO_BATCH_ND against the TFLM oracle: int8 and float32, 3-D and 4-D
inputs, block shapes, crops and paddings (SPACE_TO_BATCH_ND pads int8 with 0 whatever the zero point, as TFLM);
malformed block shapes, crops and run-time parameters rejected with one line."""
import numpy as np
import pytest

from harness import assert_matches_oracle
from model_builder import ModelBuilder
from spatial_cli import assert_cli_rejects

Q = {"int8": dict(scale=0.05, zero_point=-7), "float32": {}}


def _out_shape(kind, shape, block, pads):
    spatial = shape[1:1 + len(block)]
    if kind == "BATCH_TO_SPACE_ND":
        sp = [s * k - a - c for s, k, (a, c) in zip(spatial, block, pads)]
        return [shape[0] // int(np.prod(block))] + sp + list(shape[1 + len(block):])
    sp = [(s + a + c) // k for s, k, (a, c) in zip(spatial, block, pads)]
    return [shape[0] * int(np.prod(block))] + sp + list(shape[1 + len(block):])


def batch_space_model(kind, dtype, shape, block, pads, out_shape=None, block_const=True):
    b = ModelBuilder()
    x = b.activation("x", shape, dtype, **Q[dtype])
    bs = b.constant("block", np.array(block, dtype=np.int32)) if block_const else \
        b.activation("block", [len(block)], "int32")
    p = b.constant("pads", np.array(pads, dtype=np.int32).reshape(-1, 2))
    y = b.activation("y", out_shape or _out_shape(kind, shape, block, pads), dtype, **Q[dtype])
    b.op(kind, [x, bs, p], [y])
    return b.finish([x] + ([] if block_const else [bs]), [y])


CASES = [
    ("BATCH_TO_SPACE_ND", "int8", [4, 2, 2, 3], [2, 2], [[0, 0], [0, 0]]),
    ("BATCH_TO_SPACE_ND", "int8", [12, 3, 2, 2], [3, 2], [[1, 2], [0, 1]]),
    ("BATCH_TO_SPACE_ND", "int8", [8, 2, 3, 1], [2, 2], [[0, 1], [1, 0]]),  # output batch 2
    ("BATCH_TO_SPACE_ND", "int8", [6, 4, 5], [3], [[1, 1]]),  # 3-D
    ("BATCH_TO_SPACE_ND", "float32", [4, 3, 3, 2], [2, 2], [[0, 0], [1, 1]]),
    ("BATCH_TO_SPACE_ND", "float32", [2, 5, 3], [2], [[0, 3]]),
    ("SPACE_TO_BATCH_ND", "int8", [1, 4, 4, 3], [2, 2], [[0, 0], [0, 0]]),
    ("SPACE_TO_BATCH_ND", "int8", [2, 5, 3, 2], [3, 2], [[1, 0], [0, 1]]),  # pads with 0, not the zero point
    ("SPACE_TO_BATCH_ND", "int8", [1, 3, 5, 1], [2, 3], [[0, 1], [2, 2]]),
    ("SPACE_TO_BATCH_ND", "int8", [2, 5, 4], [3], [[2, 2]]),  # 3-D
    ("SPACE_TO_BATCH_ND", "float32", [1, 4, 4, 2], [2, 2], [[1, 1], [1, 1]]),
    ("SPACE_TO_BATCH_ND", "float32", [3, 2, 2, 1], [1, 1], [[0, 0], [0, 0]]),  # a copy
]


@pytest.mark.parametrize("kind,dtype,shape,block,pads", CASES,
                         ids=[f"{c[0]}-{c[1]}-{'x'.join(map(str, c[2]))}-{'_'.join(map(str, c[3]))}" for c in CASES])
def test_batch_space_matches_tflm(tmp_path, kind, dtype, shape, block, pads):
    assert_matches_oracle(batch_space_model(kind, dtype, shape, block, pads), tmp_path)


def test_batch_space_sanitized(tmp_path):
    assert_matches_oracle(batch_space_model("BATCH_TO_SPACE_ND", "int8", [12, 3, 2, 2], [3, 2], [[1, 2], [0, 1]]),
                          tmp_path / "b", sanitize=True)
    assert_matches_oracle(batch_space_model("SPACE_TO_BATCH_ND", "int8", [2, 5, 3, 2], [3, 2], [[1, 0], [0, 1]]),
                          tmp_path / "s", sanitize=True)


@pytest.mark.parametrize("model,kind,message", [
    (lambda: batch_space_model("BATCH_TO_SPACE_ND", "int8", [5, 2, 2, 1], [2, 2], [[0, 0], [0, 0]],
                               out_shape=[1, 4, 4, 1]), "BATCH_TO_SPACE_ND", "not a multiple"),
    (lambda: batch_space_model("BATCH_TO_SPACE_ND", "int8", [4, 2, 2, 1], [2, 0], [[0, 0], [0, 0]],
                               out_shape=[2, 4, 2, 1]), "BATCH_TO_SPACE_ND", "at least 1"),
    (lambda: batch_space_model("BATCH_TO_SPACE_ND", "float32", [4, 2, 2, 1], [2, 2], [[0, 0], [0, 0]],
                               block_const=False, out_shape=[1, 4, 4, 1]), "BATCH_TO_SPACE_ND", "not supported yet"),
    (lambda: batch_space_model("SPACE_TO_BATCH_ND", "float32", [1, 5, 4, 1], [2, 2], [[0, 0], [0, 0]],
                               out_shape=[4, 2, 2, 1]), "SPACE_TO_BATCH_ND", "not a multiple"),
    (lambda: batch_space_model("SPACE_TO_BATCH_ND", "int8", [1, 4, 4, 1], [2, 2], [[0, 0], [-2, 2]],
                               out_shape=[4, 2, 2, 1]), "SPACE_TO_BATCH_ND", "negative"),
    (lambda: batch_space_model("SPACE_TO_BATCH_ND", "int8", [1, 4, 4, 1], [2, 2, 1], [[0, 0], [0, 0]],
                               out_shape=[4, 2, 2, 1]), "SPACE_TO_BATCH_ND", "block shape"),
])
def test_batch_space_rejects(tmp_path, model, kind, message):
    assert_cli_rejects(model(), tmp_path, kind, message)
