"""Models with several subgraphs and resource variables on an emulated Cortex-M4 (mps2_an386):
sequences standalone (the firmware runs every step) and host-driven over RPC with <model>_reset in
between, each step bit-exact with TFLM invoked the same number of times on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest
from board_oracle import needs_board_tools
from flow_models import accumulator_int8, if_int8, while_int8
from oracle import Oracle
from test_state import STEPS, assert_steps_match
from test_state_board import BOARD, _library, host_driven_twice

from microcompiler.project import run_on_board


def _sequence(name: str) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(11)
    if name == "accumulator":
        return [[rng.integers(-30, 30, (1, 8), dtype=np.int8)] for _ in range(STEPS)]
    if name == "if":
        return [[np.array([s % 3 != 0]), rng.integers(-128, 128, (1, 6), dtype=np.int8)] for s in range(STEPS)]
    return [[np.array([s % 5], np.int32), rng.integers(-20, 20, (1, 6), dtype=np.int8)] for s in range(STEPS)]


MODELS = {"accumulator": accumulator_int8, "if": if_int8, "while": while_int8}


@needs_board_tools
@pytest.mark.parametrize("name,executor", [("accumulator", "aot"), ("if", "graph"), ("while", "aot")])
def test_control_flow_sequence_standalone_on_board(tmp_path, name, executor):
    model = MODELS[name]()
    library = _library(model, tmp_path)
    seq = _sequence(name)
    _, _, run = run_on_board(
        library, BOARD, tmp_path / "project", executor=executor, input_steps=seq, log=lambda _: None
    )
    assert len(run.step_outputs) == STEPS
    assert_steps_match(run.step_outputs, Oracle(model).run_sequence(seq), f"{name}, {executor} executor on {BOARD}")


@needs_board_tools
@pytest.mark.parametrize("name", sorted(MODELS))
def test_control_flow_sequence_host_driven_on_board_and_reset(tmp_path, name):
    """Host-driven: the variables and the CALL_ONCE flag stay on the device between RPC runs;
    <model>_reset over RPC re-initialises (CALL_ONCE runs again), so the sequence repeats."""
    model = MODELS[name]()
    library = _library(model, tmp_path)
    seq = _sequence(name)
    want = Oracle(model).run_sequence(seq)
    first, again = host_driven_twice(library, seq, tmp_path)
    assert_steps_match(first, want, f"{name} host-driven on {BOARD}")
    assert_steps_match(again, want, f"{name} host-driven on {BOARD} after the reset")
