"""Keras GRU and LSTM with ``unroll=True`` over 20 time steps (tests/models/keras/, made by
scripts/keras_unrolled.py with the real TFLite converter): the converter writes an UNPACK of 21
tensors; the AOT executor runs both, bit-exact with TFLM in int8 on the host and on an emulated
Cortex-M4 and M55, and in float32 bit for bit on the host (their LOGISTIC and TANH: the runtime's
expf and tanhf, docs/float.md). The graph executor and host-driven mode run them too (operator
records of any width), so ``bench`` (per-operator timing) and ``validate`` work on them."""

import json
from pathlib import Path

import numpy as np
import pytest
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from harness import assert_matches_oracle, cli
from oracle import Oracle
from test_float_exact import assert_same_bits

from microcompiler.api import open_model
from microcompiler.compiler import compile_model
from microcompiler.host import HostProgram
from microcompiler.inputs import random_inputs

MODELS = Path(__file__).resolve().parent / "models" / "keras"


@pytest.mark.parametrize(
    "name",
    [
        "gru_unrolled_int8",
        pytest.param("lstm_unrolled_int8", marks=pytest.mark.long),  # 20-80 s under the sanitizers
        "gru_unrolled_float32",
        "lstm_unrolled_float32",
    ],
)
def test_unrolled_recurrent_model_matches_tflm(tmp_path, name):
    lib = assert_matches_oracle((MODELS / f"{name}.tflite").read_bytes(), tmp_path, n_inputs=3)
    unpack = [op for op in lib.metadata["operators"] if op["kind"] == "UNPACK"]
    assert len(unpack) == 1 and unpack[0]["inputs"] == [[20, 1, 8]] and len(unpack[0]["outputs"]) == 20
    assert "graph_executor_refusal" not in lib.metadata and lib.info.graph_executor_refusal is None
    assert json.dumps(lib.info.to_json()) == json.dumps(lib.metadata)
    if name.endswith("float32"):  # not only within tolerance: the same bits
        inputs = [random_inputs(lib.info.inputs, seed=s) for s in range(3)]
        oracle = Oracle((MODELS / f"{name}.tflite").read_bytes())
        for input_set, result in zip(inputs, HostProgram(lib, tmp_path / "bits").run(inputs)):
            assert_same_bits(result.outputs[0], oracle.run(input_set)[0], f"{name} vs TFLM")


@needs_board_tools
@pytest.mark.parametrize(
    "name,board",
    [("gru_unrolled_int8", "mps2_an386"), pytest.param("lstm_unrolled_int8", "mps3_an547", marks=pytest.mark.long)],
)
def test_unrolled_recurrent_model_on_board_matches_tflm(tmp_path, name, board):
    assert_matches_oracle_on_board((MODELS / f"{name}.tflite").read_bytes(), tmp_path, board=board)


@pytest.mark.parametrize("name", ["gru_unrolled_int8", pytest.param("lstm_unrolled_int8", marks=pytest.mark.long)])
def test_unrolled_recurrent_model_host_driven_matches_tflm(tmp_path, name):
    """Operator by operator over RPC on the host (the UNPACK call passes 21 tensors), bit-exact with
    TFLM, and every operator timed on its own (bench's per-operator table)."""
    model = (MODELS / f"{name}.tflite").read_bytes()
    lib = compile_model(MODELS / f"{name}.tflite")
    oracle = Oracle(model)
    with open_model(lib, "host", project_dir=tmp_path / "rpc") as session, session.executor() as ex:
        for seed in range(2):
            x = random_inputs(lib.info.inputs, seed=seed)
            got, want = ex(*x)[0], oracle.run(x)[0]
            assert got.tobytes() == np.asarray(want).reshape(got.shape).tobytes(), f"seed {seed}"
        rows = ex.profile(number=1)
        assert [row["kind"] for row in rows] == [op.kind for op in lib.info.operators]
        assert "UNPACK" in [row["kind"] for row in rows]


@pytest.mark.long
@needs_board_tools
def test_unrolled_gru_bench_and_validate_on_board(tmp_path):
    """The CLI on an emulated Cortex-M4: validate (standalone and host-driven, exact with TFLM) and
    bench (the whole inference and each operator, the UNPACK of 21 tensors among them)."""
    path = MODELS / "gru_unrolled_int8.tflite"
    proc = cli("validate", path, "--board", "mps2_an386", "--inputs", "2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "standalone and host-driven: PASSED (exact)" in proc.stdout
    proc = cli("bench", path, "--board", "mps2_an386", "--json", "--number", "1", "--repeat", "1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    bench = json.loads(proc.stdout)
    kinds = [op["kind"] for op in bench["operators"]]
    assert "UNPACK" in kinds and len(kinds) == len(compile_model(path).info.operators)
    assert bench["inference"]["ticks"] > 0 and all(op["ticks"] >= 0 for op in bench["operators"])
