"""Keras GRU and LSTM with ``unroll=True`` over 20 time steps (tests/models/keras/, made by
scripts/keras_unrolled.py with the real TFLite converter): the converter writes an UNPACK of 21
tensors, wider than the graph executor's records; the AOT executor runs both, bit-exact with TFLM
in int8 on the host and on an emulated Cortex-M4 and M55, and in float32 bit for bit on the host
(their LOGISTIC and TANH: the runtime's expf and tanhf, docs/float.md)."""

import json
from pathlib import Path

import pytest
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from harness import assert_matches_oracle
from oracle import Oracle
from test_float_exact import assert_same_bits

from microcompiler.host import HostProgram
from microcompiler.inputs import random_inputs

MODELS = Path(__file__).resolve().parent / "models" / "keras"


@pytest.mark.parametrize(
    "name", ["gru_unrolled_int8", "lstm_unrolled_int8", "gru_unrolled_float32", "lstm_unrolled_float32"]
)
def test_unrolled_recurrent_model_matches_tflm(tmp_path, name):
    lib = assert_matches_oracle((MODELS / f"{name}.tflite").read_bytes(), tmp_path, n_inputs=3)
    unpack = [op for op in lib.metadata["operators"] if op["kind"] == "UNPACK"]
    assert len(unpack) == 1 and unpack[0]["inputs"] == [[20, 1, 8]] and len(unpack[0]["outputs"]) == 20
    assert "UNPACK" in lib.metadata["graph_executor_refusal"] and "UNPACK" in lib.info.graph_executor_refusal
    assert json.dumps(lib.info.to_json()) == json.dumps(lib.metadata)  # the refusal stays the last key
    if name.endswith("float32"):  # not only within tolerance: the same bits
        inputs = [random_inputs(lib.info.inputs, seed=s) for s in range(3)]
        oracle = Oracle((MODELS / f"{name}.tflite").read_bytes())
        for input_set, result in zip(inputs, HostProgram(lib, tmp_path / "bits").run(inputs)):
            assert_same_bits(result.outputs[0], oracle.run(input_set)[0], f"{name} vs TFLM")


@needs_board_tools
@pytest.mark.parametrize("name,board", [("gru_unrolled_int8", "mps2_an386"), ("lstm_unrolled_int8", "mps3_an547")])
def test_unrolled_recurrent_model_on_board_matches_tflm(tmp_path, name, board):
    assert_matches_oracle_on_board((MODELS / f"{name}.tflite").read_bytes(), tmp_path, board=board)
