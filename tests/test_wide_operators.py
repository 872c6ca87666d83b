"""Wide operators: UNPACK, SPLIT, SPLIT_V, CONCATENATION, PACK and ADD_N of 20-130 tensors compile,
and the AOT executor (<model>_run()), the graph executor (variable-length records of the graph
description, its pointer table at the pool's end) and host-driven mode (the RPC server's call table,
sized by the registries' max_args) run them bit-exact with TFLM, wider than the 16 tensor arguments
the graph description's fixed records once held. (Keras' unrolled GRU and LSTM, an UNPACK of 21
outputs: tests/test_keras_unrolled.py.)"""

import numpy as np
import pytest
from harness import assert_matches_oracle, cli, compile_bytes
from model_builder import ModelBuilder, concatenation_options
from movement_models import pack_options, side_by_side, split_options, split_v_options, unpack_options
from oracle import Oracle

from microcompiler.api import open_model
from microcompiler.host import HostProgram
from microcompiler.inputs import random_inputs
from microcompiler.rpc.client import RequestError

TFLM_MAX_CONCATENATION = 10
OLD_RECORD_ARGS = 16  # what the graph description's fixed-size records held (MCG1)
WIDE = 20  # > OLD_RECORD_ARGS: one operator function with more tensor parameters than those records


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
    assert widest > OLD_RECORD_ARGS
    assert "graph_executor_refusal" not in lib.metadata
    assert f"#define {lib.info.name.upper()}_GRAPH_MAX_ARGS {widest}\n" in lib.files[f"include/{lib.info.name}_graph.h"]


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_wide_movement_operators_in_the_graph_executor_match_tflm(tmp_path, dtype):
    """The graph executor walks the variable-length records (built with ASan and UBSan in int8)."""
    assert_matches_oracle(
        side_by_side(wide_cases(dtype)), tmp_path, n_inputs=2, sanitize=dtype == "int8", executor="graph"
    )


def test_concatenation_of_ten_matches_tflm(tmp_path):
    """TFLM's CONCATENATION takes at most 10 inputs (kMaxInputNum)."""
    assert_matches_oracle(concatenation_model("int8", TFLM_MAX_CONCATENATION), tmp_path, n_inputs=2)


@pytest.mark.parametrize("dtype,n", [("int8", 33), ("float32", WIDE)])
def test_wide_concatenation_copies_every_input(tmp_path, dtype, n):
    """Wider than TFLM runs (it refuses more than 10 inputs in its prepare step; the TFLite
    interpreter runs them): a concatenation only copies, so numpy's is the oracle."""
    lib = compile_bytes(concatenation_model(dtype, n), tmp_path)
    inputs = [random_inputs(lib.info.inputs, seed=s) for s in range(2)]
    for executor in ("aot", "graph"):
        program = HostProgram(lib, tmp_path / executor, sanitize=True, executor=executor)
        for input_set, result in zip(inputs, program.run(inputs)):
            np.testing.assert_array_equal(result.outputs[0], np.concatenate(input_set, axis=-1), err_msg=executor)


def test_unpack_beyond_c99_parameter_minimum_matches_tflm(tmp_path):
    """130 outputs: more parameters than C99's minimum translation limit (127), which GCC exceeds
    without a warning under -std=c99 -pedantic -Werror; the graph executor passes all 131."""
    model = side_by_side([("UNPACK", [130, 2], "int8", [], [[2]] * 130, unpack_options(130, 0))])
    assert_matches_oracle(model, tmp_path, n_inputs=1, executor="graph")


def test_wide_add_n_matches_tflm(tmp_path):
    assert_matches_oracle(add_n_model(WIDE), tmp_path, n_inputs=2)


def test_wide_operators_host_driven_match_tflm_and_time_each_operator(tmp_path):
    """Host-driven on the host's RPC server: operator by operator, each call passing up to 21
    tensor arguments from the server's call table, bit-exact with TFLM; per-operator timing too."""
    model = side_by_side(wide_cases("int8"))
    lib = compile_bytes(model, tmp_path)
    # the widest call: an operator, or <model>_run (every input and output)
    widest = max(*(len(fn.params) for fn in lib.functions), len(lib.info.inputs) + len(lib.info.outputs))
    oracle = Oracle(model)
    with open_model(lib, "host", project_dir=tmp_path / "rpc") as session, session.executor() as ex:
        assert session.device.max_args == widest > OLD_RECORD_ARGS
        for seed in range(2):
            x = random_inputs(lib.info.inputs, seed=seed)
            for k, (got, want) in enumerate(zip(ex(*x), oracle.run(x))):
                assert got.tobytes() == np.asarray(want).reshape(got.shape).tobytes(), f"output {k}, seed {seed}"
        rows = ex.profile(number=2)
        assert len(rows) == len(lib.info.operators) and all(row["ticks"] > 0 for row in rows)
        # a call wider than the firmware takes is refused on the host, before anything is sent
        sent = session.stats["requests"]
        with pytest.raises(RequestError, match=f"passes {widest + 1} arguments.*at most {widest} per call"):
            session.call(ex.functions[0], *([ex.pool] * (widest + 1)))
        assert session.stats["requests"] == sent


def test_cli_creates_graph_executor_and_host_driven_projects_of_a_wide_model(tmp_path):
    model = tmp_path / "wide.tflite"
    model.write_bytes(concatenation_model("int8", WIDE))
    for options in (["--executor", "graph"], ["--mode", "host-driven"]):
        out = tmp_path / options[1]
        proc = cli("create-project", model, "--board", "mps2_an386", "--output", out, *options)
        assert proc.returncode == 0, proc.stderr
        assert (out / "model" / "src" / "wide_graph.c").is_file()
