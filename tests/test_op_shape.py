"""SHAPE: folded at compile time (no code) inside a model, a copy of the constant when it is a model
output; int32 against the TFLM oracle for every input type, int64 (TFLM: int32 only) against the
static shape."""

from pathlib import Path

import numpy as np
from harness import assert_matches_oracle, compile_bytes
from model_builder import ModelBuilder
from movement_models import ALL_TYPES, assert_clean_rejection, shape_options, side_by_side, single_op

from microcompiler.host import HostProgram
from microcompiler.inputs import random_inputs


def test_shape_int32_as_model_output_matches_tflm(tmp_path):
    """Every input type, side by side; each SHAPE is a model output, so a copy of its constant."""
    model = side_by_side(
        [
            ("SHAPE", [2, 1, 3][: 1 + k % 3], dtype, [], [[1 + k % 3]], shape_options("int32"), dict(out_dtype="int32"))
            for k, dtype in enumerate(ALL_TYPES)
        ]
    )
    assert_matches_oracle(model, tmp_path, n_inputs=1, sanitize=True)


def test_shape_int64_gives_the_static_shape(tmp_path):
    model = single_op("SHAPE", [4, 1, 3, 2], "int8", [], [[4]], shape_options("int64"), out_dtype="int64")
    library = compile_bytes(model, tmp_path)
    inputs = [random_inputs(library.info.inputs)]
    got = HostProgram(library, Path(tmp_path) / "build").run(inputs)[0].outputs[0]
    assert got.dtype == np.int64 and got.tolist() == [4, 1, 3, 2]


def test_shape_inside_a_model_is_folded(tmp_path):
    """SHAPE(z) -> RESHAPE(x, shape): the shape becomes a constant and only the reshape's copy runs."""
    b = ModelBuilder()
    x = b.activation("x", [15], "float32")
    z = b.activation("z", [3, 5], "float32")
    s = b.activation("s", [2], "int32")
    b.op("SHAPE", [z], [s], shape_options("int32"))
    y = b.activation("y", [3, 5], "float32")
    b.op("RESHAPE", [x, s], [y])
    library = assert_matches_oracle(b.finish([x, z], [y]), tmp_path, n_inputs=1)
    assert [o["kind"] for o in library.metadata["operators"]] == ["RESHAPE"]


def test_shape_rejections(tmp_path):
    model = single_op("SHAPE", [2, 3], "int8", [], [[3]], shape_options("int32"), out_dtype="int32")
    assert_clean_rejection(model, tmp_path / "a", "cannot hold")
    model = single_op("SHAPE", [2, 3], "int8", [], [[2]], shape_options("int64"), out_dtype="int32")
    assert_clean_rejection(model, tmp_path / "b", "out_type int64 differs")
