"""REVERSE_V2 against the TFLM oracle: every type TFLM runs, one or several axes, negative axes,
innermost and outer axes; malformed axes via the CLI."""
from pathlib import Path

import numpy as np
import pytest

from harness import assert_matches_oracle, compile_bytes
from microcompiler.host import HostProgram
from microcompiler.inputs import random_inputs
from movement_models import assert_clean_rejection, single_op


def reverse_model(shape, axes, dtype="int8", out_shape=None):
    return single_op("REVERSE_V2", shape, dtype, [np.array(axes, np.int32)], [out_shape or shape])


@pytest.mark.parametrize("shape,axes", [
    ([1], [0]),
    ([7], [0]),
    ([4, 5], [0]),  # rows stay contiguous: memcpy
    ([4, 5], [-1]),
    ([2, 3, 4], [1, 2]),
    ([2, 1, 3, 4], [1, 2]),
])
def test_reverse_int8_matches_tflm(tmp_path, shape, axes):
    assert_matches_oracle(reverse_model(shape, axes), tmp_path, n_inputs=2)


@pytest.mark.parametrize("dtype", ["int16", "int32", "int64", "float32", "bool"])
def test_reverse_types_match_tflm(tmp_path, dtype):
    assert_matches_oracle(reverse_model([3, 4, 2], [1], dtype), tmp_path, n_inputs=2, )


def test_reverse_non_contiguous_axes_matches_numpy(tmp_path):
    """TFLM refuses axes that are not adjacent; the copy plan handles any set: compare with numpy."""
    library = compile_bytes(reverse_model([2, 3, 4], [0, 2], "float32"), tmp_path)
    inputs = [random_inputs(library.metadata["inputs"], seed=s) for s in range(2)]
    for got, (x,) in zip(HostProgram(library, Path(tmp_path) / "build", sanitize=True).run(inputs), inputs):
        np.testing.assert_array_equal(got.outputs[0], np.flip(x, axis=(0, 2)))


@pytest.mark.parametrize("axes,match", [([2], "out of range"), ([0, -2], "twice")])
def test_reverse_rejections(tmp_path, axes, match):
    assert_clean_rejection(reverse_model([4, 5], axes), tmp_path, match)
