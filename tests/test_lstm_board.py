"""LSTM sequences on an emulated Cortex-M4 (mps2_an386): standalone (the firmware runs every step's
input and reports each) and host-driven (hidden and cell state stay on the device between RPC runs;
<model>_reset over RPC restarts them), each step compared with TFLM invoked the same number of times
on the same inputs: int8 and int16 bit-exact, float within test_state's tolerance. "single" has 8 units
(whole groups of 4: the gate blocks with doubled weights, lstm.c.j2), "two-layer" 6 (the other path)."""

from __future__ import annotations

import pytest
from board_oracle import needs_board_tools
from lstm_models import lstm_float, lstm_int8, lstm_int16
from oracle import Oracle
from test_state import STEPS, assert_steps_match, sequence
from test_state_board import BOARD, _library, check_host_driven_sequence

from microcompiler.project import run_on_board

MODELS = {
    "single": lambda: lstm_int8(n_state=8),
    "two-layer": lambda: lstm_int8(layers=2),
    "float": lstm_float,
    "int16": lstm_int16,
}


@needs_board_tools
@pytest.mark.parametrize(
    "name,executor", [("two-layer", "aot"), ("single", "graph"), ("float", "aot"), ("int16", "aot")]
)
def test_lstm_sequence_standalone_on_board(tmp_path, name, executor):
    model = MODELS[name]()
    library = _library(model, tmp_path)
    seq = sequence(library.info)
    _, _, run = run_on_board(
        library, BOARD, tmp_path / "project", executor=executor, input_steps=seq, log=lambda _: None
    )
    assert len(run.step_outputs) == STEPS
    variants = {op["kernel"]["variant"] for op in library.metadata["operators"]}
    # the M4's DSP extension
    assert variants == {"single": {"rows4"}, "two-layer": {"rows4"}, "int16": {"int16-rows4-s8"}}.get(
        name, {"reference"}
    )
    assert_steps_match(run.step_outputs, Oracle(model).run_sequence(seq), f"{executor} executor on {BOARD}")


@needs_board_tools
@pytest.mark.parametrize("name", ["single", "two-layer", "float"])
def test_lstm_sequence_host_driven_on_board_and_reset(tmp_path, name):
    check_host_driven_sequence(MODELS[name](), tmp_path)
