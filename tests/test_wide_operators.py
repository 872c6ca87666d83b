"""Operators wider than the graph executor's records (MC_GRAPH_MAX_ARGS = 16 tensor arguments):
UNPACK, SPLIT, SPLIT_V, CONCATENATION, PACK and ADD_N of 20-33 tensors compile, and the AOT
executor (<model>_run()) runs them bit-exact with TFLM. Only the graph executor and host-driven
mode, which walk the fixed-size records, refuse such a model, in one line that says to use the AOT
executor. (Keras' unrolled GRU and LSTM, an UNPACK of 21 outputs: tests/test_keras_unrolled.py.)"""

import numpy as np
import pytest
from harness import assert_matches_oracle, cli, compile_bytes
from model_builder import ModelBuilder, concatenation_options
from movement_models import pack_options, side_by_side, split_options, split_v_options, unpack_options

from microcompiler.codegen.graph_description import MAX_ARGS
from microcompiler.errors import UnsupportedModelError
from microcompiler.host import HostProgram
from microcompiler.inputs import random_inputs

TFLM_MAX_CONCATENATION = 10
WIDE = 20  # > MAX_ARGS: one operator function with more tensor parameters than a graph record holds


def wide_cases(dtype):
    """UNPACK to WIDE outputs, SPLIT and SPLIT_V into WIDE parts, PACK of WIDE inputs."""
    return [
        ("UNPACK", [2, WIDE, 3], dtype, [], [[2, 3]] * WIDE, unpack_options(WIDE, 1)),
        (
            "SPLIT",
            [WIDE + 1, 2 * WIDE],
            dtype,
            [np.array(1, np.int32)],
            [[WIDE + 1, 2]] * WIDE,
            split_options(WIDE),
            dict(const_first=True),
        ),
        (
            "SPLIT_V",
            [3, 2 * WIDE - 1],
            dtype,
            [np.array([1] * (WIDE - 1) + [-1], np.int32), np.array([1], np.int32)],
            [[3, 1]] * (WIDE - 1) + [[3, WIDE]],
            split_v_options(WIDE),
        ),
        ("PACK", [4], dtype, [], [[4, WIDE]], pack_options(WIDE, -1), dict(extra_inputs=[([4], dtype)] * (WIDE - 1))),
    ]


def concatenation_model(dtype, n):
    b = ModelBuilder()
    q = {"scale": 0.05, "zero_point": -3} if dtype != "float32" else {}
    xs = [b.activation(f"x{k}", [1, 2, 1 + k % 3], dtype, **q) for k in range(n)]
    y = b.activation("y", [1, 2, sum(1 + k % 3 for k in range(n))], dtype, **q)
    b.op("CONCATENATION", xs, [y], concatenation_options(-1))
    return b.finish(xs, [y])


def add_n_model(n):
    b = ModelBuilder()
    xs = [b.activation(f"x{k}", [3, 4], "float32") for k in range(n)]
    y = b.activation("y", [3, 4], "float32")
    b.op("ADD_N", xs, [y])
    return b.finish(xs, [y])


@pytest.mark.parametrize("dtype", ["int8", "int16", "float32"])
def test_wide_movement_operators_match_tflm(tmp_path, dtype):
    lib = assert_matches_oracle(side_by_side(wide_cases(dtype)), tmp_path, n_inputs=2, sanitize=dtype == "int8")
    widest = max(len(fn.params) for fn in lib.functions)
    assert widest > MAX_ARGS
    assert "graph_executor_refusal" in lib.metadata
    assert not any(f.endswith("_graph.c") for f in lib.files)


def test_concatenation_of_ten_matches_tflm(tmp_path):
    """TFLM's CONCATENATION takes at most 10 inputs (kMaxInputNum)."""
    assert_matches_oracle(concatenation_model("int8", TFLM_MAX_CONCATENATION), tmp_path, n_inputs=2)


@pytest.mark.parametrize("dtype,n", [("int8", 33), ("float32", WIDE)])
def test_wide_concatenation_copies_every_input(tmp_path, dtype, n):
    """Wider than TFLM runs (it refuses more than 10 inputs in its prepare step; the TFLite
    interpreter runs them): a concatenation only copies, so numpy's is the oracle."""
    lib = compile_bytes(concatenation_model(dtype, n), tmp_path)
    program = HostProgram(lib, tmp_path / "build", sanitize=True)
    inputs = [random_inputs(lib.info.inputs, seed=s) for s in range(2)]
    for input_set, result in zip(inputs, program.run(inputs)):
        np.testing.assert_array_equal(result.outputs[0], np.concatenate(input_set, axis=-1))


def test_unpack_beyond_c99_parameter_minimum_matches_tflm(tmp_path):
    """130 outputs: more parameters than C99's minimum translation limit (127), which GCC exceeds
    without a warning under -std=c99 -pedantic -Werror."""
    model = side_by_side([("UNPACK", [130, 2], "int8", [], [[2]] * 130, unpack_options(130, 0))])
    assert_matches_oracle(model, tmp_path, n_inputs=1)


def test_wide_add_n_matches_tflm(tmp_path):
    assert_matches_oracle(add_n_model(WIDE), tmp_path, n_inputs=2)


def test_narrow_model_keeps_its_graph_description(tmp_path):
    lib = compile_bytes(concatenation_model("int8", MAX_ARGS - 1), tmp_path)
    assert "graph_executor_refusal" not in lib.metadata
    assert any(f.endswith("_graph.c") for f in lib.files)


def test_graph_executor_refuses_a_wide_operator(tmp_path):
    lib = compile_bytes(concatenation_model("int8", WIDE), tmp_path)
    with pytest.raises(
        UnsupportedModelError,
        match=r"operator 0 \(CONCATENATION\) has 21 tensor arguments.*"
        r"use the AOT executor",
    ):
        HostProgram(lib, tmp_path / "build", executor="graph")


@pytest.mark.parametrize("options", [["--executor", "graph"], ["--mode", "host-driven"]])
def test_cli_refuses_graph_executor_and_host_driven_in_one_line(tmp_path, options):
    model = tmp_path / "wide.tflite"
    model.write_bytes(concatenation_model("int8", WIDE))
    proc = cli("create-project", model, "--board", "mps2_an386", "--output", tmp_path / "project", *options)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "CONCATENATION" in lines[0] and "use the AOT executor" in lines[0]
    assert not (tmp_path / "project").exists()
    proc = cli("create-project", model, "--board", "mps2_an386", "--output", tmp_path / "aot")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "aot" / "model" / "src" / "wide_aot.c").is_file()
