"""LSTM sequences on an emulated Cortex-M4 (mps2_an386): standalone (the firmware runs every step's
input and reports each) and host-driven (hidden and cell state stay on the device between RPC runs;
<model>_reset over RPC restarts them), each step compared with TFLM invoked the same number of times
on the same inputs: int8 and int16 bit-exact, float within test_state's tolerance."""
from __future__ import annotations

import numpy as np
import pytest

from board_oracle import needs_board_tools
from lstm_models import lstm_float, lstm_int8, lstm_int16
from microcompiler.boards import load_board
from microcompiler.compiler import compile_model
from microcompiler.project import run_on_board
from microcompiler.targets.base import start_on_board
from oracle import Oracle
from test_state import STEPS, assert_steps_match, sequence

BOARD = "mps2_an386"
MODELS = {"single": lstm_int8, "two-layer": lambda: lstm_int8(layers=2), "float": lstm_float, "int16": lstm_int16}


def _library(model: bytes, tmp_path):
    path = tmp_path / "lstm.tflite"
    path.write_bytes(model)
    return compile_model(path, features=frozenset(load_board(BOARD).cpu.features))


@needs_board_tools
@pytest.mark.parametrize("name,executor", [("two-layer", "aot"), ("single", "graph"), ("float", "aot"),
                                           ("int16", "aot")])
def test_lstm_sequence_standalone_on_board(tmp_path, name, executor):
    model = MODELS[name]()
    library = _library(model, tmp_path)
    seq = sequence(library.metadata)
    _, _, run = run_on_board(library, BOARD, tmp_path / "project", executor=executor, input_steps=seq,
                             log=lambda _: None)
    assert len(run.step_outputs) == STEPS
    variants = {op["kernel"]["variant"] for op in library.metadata["operators"]}
    assert variants == ({"smlad"} if name in ("single", "two-layer") else {"reference"})  # the M4's DSP extension
    assert_steps_match(run.step_outputs, Oracle(model).run_sequence(seq), f"{executor} executor on {BOARD}")


@needs_board_tools
@pytest.mark.parametrize("name", ["single", "two-layer", "float"])
def test_lstm_sequence_host_driven_on_board_and_reset(tmp_path, name):
    model = MODELS[name]()
    library = _library(model, tmp_path)
    seq = sequence(library.metadata)
    want = Oracle(model).run_sequence(seq)
    _, _, session = start_on_board(library, load_board(BOARD), tmp_path / "project", timeout=60)
    with session:
        with session.executor() as ex:
            first = [ex(*inputs) for inputs in seq]
            ex.reset()
            again = [ex(*inputs) for inputs in seq]
    assert_steps_match(first, want, f"host-driven on {BOARD}")
    assert_steps_match(again, want, f"host-driven on {BOARD} after the reset")
    assert not all(np.array_equal(a[0], b[0]) for a, b in zip(first, first[1:])), "the outputs must change"
