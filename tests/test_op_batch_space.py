"""BATCH_TO_SPACE_ND and SPACE_TO_BATCH_ND against the TFLM oracle: int8 and float32, 3-D and 4-D
inputs, block shapes, crops and paddings; malformed block shapes, crops and run-time parameters
rejected with one line.

SPACE_TO_BATCH_ND's padding value in TFLM is a field of its persistent op data that Prepare never
sets (uninitialised arena memory: 0 in a fresh process, other values after earlier interpreters
used the heap). We pad with 0, for int8 too; the padded positions are checked to be 0 and every
other position against TFLM."""

from pathlib import Path

import numpy as np
import pytest
from harness import assert_matches_oracle, compile_bytes
from model_builder import ModelBuilder
from model_merge import assert_cases_match_oracle, merge_models
from oracle import Oracle
from spatial_cli import assert_rejects

from microcompiler.host import HostProgram
from microcompiler.inputs import random_inputs

Q = {"int8": dict(scale=0.05, zero_point=-7), "float32": {}}


def _out_shape(kind, shape, block, pads):
    spatial = shape[1 : 1 + len(block)]
    if kind == "BATCH_TO_SPACE_ND":
        sp = [s * k - a - c for s, k, (a, c) in zip(spatial, block, pads)]
        return [shape[0] // int(np.prod(block))] + sp + list(shape[1 + len(block) :])
    sp = [(s + a + c) // k for s, k, (a, c) in zip(spatial, block, pads)]
    return [shape[0] * int(np.prod(block))] + sp + list(shape[1 + len(block) :])


def batch_space_model(kind, dtype, shape, block, pads, out_shape=None, block_const=True):
    b = ModelBuilder()
    x = b.activation("x", shape, dtype, **Q[dtype])
    bs = (
        b.constant("block", np.array(block, dtype=np.int32))
        if block_const
        else b.activation("block", [len(block)], "int32")
    )
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


def _id(c):
    return f"{c[0]}-{c[1]}-{'x'.join(map(str, c[2]))}-{'_'.join(map(str, c[3]))}"


def test_batch_to_space_matches_tflm(tmp_path):
    assert_cases_match_oracle({_id(c): batch_space_model(*c) for c in CASES if c[0] == "BATCH_TO_SPACE_ND"}, tmp_path)


def _space_to_batch_reference(x, block, pads):
    """numpy SPACE_TO_BATCH_ND padding with 0 (only used for the padding mask)."""
    spatial = len(block)
    x = np.pad(x, [(0, 0)] + [tuple(p) for p in pads] + [(0, 0)] * (x.ndim - 1 - spatial))
    b, rest = x.shape[0], x.shape[1 + spatial :]
    shape = [b]
    for s, k in zip(x.shape[1 : 1 + spatial], block):
        shape += [s // k, k]
    x = x.reshape(shape + list(rest))
    order = (
        [2 + 2 * i for i in range(spatial)]
        + [0]
        + [1 + 2 * i for i in range(spatial)]
        + list(range(1 + 2 * spatial, x.ndim))
    )
    x = x.transpose(order)
    return x.reshape([b * int(np.prod(block))] + [x.shape[spatial + 1 + i] for i in range(spatial)] + list(rest))


@pytest.mark.parametrize("sanitize", [False, True])
def test_space_to_batch_matches_tflm_and_pads_with_zero(tmp_path, sanitize):
    cases = [c for c in CASES if c[0] == "SPACE_TO_BATCH_ND"]
    model = merge_models([batch_space_model(*c) for c in cases])
    library = compile_bytes(model, tmp_path)
    inputs = [random_inputs(library.info.inputs, seed=s) for s in range(3)]
    ours = HostProgram(library, Path(tmp_path) / "build", sanitize=sanitize).run(inputs)
    oracle = Oracle(model)
    for run, input_set in zip(ours, inputs):
        for c, x, got, want in zip(cases, input_set, run.outputs, oracle.run(input_set)):
            valid = _space_to_batch_reference(np.ones(c[2]), c[3], c[4]) == 1
            want = want.reshape(got.shape)
            assert np.array_equal(got[valid], want[valid]), f"case {_id(c)}"
            assert not np.any(got[~valid]), f"case {_id(c)}: padding is not 0"
            assert np.array_equal(got, _space_to_batch_reference(x, c[3], c[4]).astype(got.dtype)), _id(c)


def test_batch_to_space_sanitized(tmp_path):
    assert_matches_oracle(
        batch_space_model("BATCH_TO_SPACE_ND", "int8", [12, 3, 2, 2], [3, 2], [[1, 2], [0, 1]]), tmp_path, sanitize=True
    )


@pytest.mark.parametrize(
    "model,kind,message,cli",
    [
        (
            lambda: batch_space_model(
                "BATCH_TO_SPACE_ND", "int8", [5, 2, 2, 1], [2, 2], [[0, 0], [0, 0]], out_shape=[1, 4, 4, 1]
            ),
            "BATCH_TO_SPACE_ND",
            "not a multiple",
            True,
        ),
        (
            lambda: batch_space_model(
                "BATCH_TO_SPACE_ND", "int8", [4, 2, 2, 1], [2, 0], [[0, 0], [0, 0]], out_shape=[2, 4, 2, 1]
            ),
            "BATCH_TO_SPACE_ND",
            "at least 1",
            False,
        ),
        (
            lambda: batch_space_model(
                "BATCH_TO_SPACE_ND",
                "float32",
                [4, 2, 2, 1],
                [2, 2],
                [[0, 0], [0, 0]],
                block_const=False,
                out_shape=[1, 4, 4, 1],
            ),
            "BATCH_TO_SPACE_ND",
            "not supported yet",
            False,
        ),
        (
            lambda: batch_space_model(
                "SPACE_TO_BATCH_ND", "float32", [1, 5, 4, 1], [2, 2], [[0, 0], [0, 0]], out_shape=[4, 2, 2, 1]
            ),
            "SPACE_TO_BATCH_ND",
            "not a multiple",
            True,
        ),
        (
            lambda: batch_space_model(
                "SPACE_TO_BATCH_ND", "int8", [1, 4, 4, 1], [2, 2], [[0, 0], [-2, 2]], out_shape=[4, 2, 2, 1]
            ),
            "SPACE_TO_BATCH_ND",
            "negative",
            False,
        ),
        (
            lambda: batch_space_model(
                "SPACE_TO_BATCH_ND", "int8", [1, 4, 4, 1], [2, 2, 1], [[0, 0], [0, 0]], out_shape=[4, 2, 2, 1]
            ),
            "SPACE_TO_BATCH_ND",
            "block shape",
            False,
        ),
    ],
)
def test_batch_space_rejects(tmp_path, model, kind, message, cli):
    assert_rejects(model(), tmp_path, kind, message, cli)
