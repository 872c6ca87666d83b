"""Models that keep state, on an emulated Cortex-M4 (mps2_an386; one M55 run): a sequence of SVDF inferences
standalone (the firmware runs every step and reports each) and host-driven (the state stays on the
device between RPC runs; <model>_reset over RPC starts it again), each step compared bit-exact with
TFLM invoked the same number of times on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest
from board_oracle import needs_board_tools
from oracle import Oracle
from svdf_models import float_svdf, single_svdf_int8, stacked_svdf_kws
from test_state import STEPS, assert_steps_match, sequence

from microcompiler.boards import load_board
from microcompiler.compiler import compile_model
from microcompiler.project import run_on_board
from microcompiler.targets.base import start_on_board

BOARD = "mps2_an386"


def _library(model: bytes, tmp_path, board: str = BOARD):
    path = tmp_path / "kws.tflite"
    path.write_bytes(model)
    return compile_model(path, features=frozenset(load_board(board).cpu.features))


@needs_board_tools
@pytest.mark.parametrize(
    "make_model,executor",
    [
        (stacked_svdf_kws, "aot"),
        (lambda: stacked_svdf_kws(state_dtype="int8"), "aot"),
        (lambda: single_svdf_int8(state_dtype="int8", state_zp=-20, n_filter=6, rank=3, n_input=9), "aot"),
        (single_svdf_int8, "graph"),
        (float_svdf, "aot"),
    ],
    ids=["stacked-aot", "stacked-int8-state-aot", "int8-state-zp-aot", "single-graph", "float-aot"],
)
def test_svdf_sequence_standalone_on_board(tmp_path, make_model, executor):
    """The firmware runs every step's input in order and reports each step; the Cortex-M4's DSP
    extension runs SVDF's rows4 variant (mc_dot_r4's SXTB16/SMLAD inline assembly), int16 and int8
    state."""
    model = make_model()
    library = _library(model, tmp_path)
    seq = sequence(library.info)
    _, _, run = run_on_board(
        library, BOARD, tmp_path / "project", executor=executor, input_steps=seq, log=lambda _: None
    )
    assert len(run.step_outputs) == STEPS
    variants = {op["kernel"]["variant"] for op in library.metadata["operators"] if op["kind"] == "SVDF"}
    assert variants == ({"reference"} if make_model is float_svdf else {"rows4"})
    assert_steps_match(run.step_outputs, Oracle(model).run_sequence(seq), f"{executor} executor on {BOARD}")


@needs_board_tools
def test_svdf_helium_sequence_on_board(tmp_path):
    """The Cortex-M55 (mps3_an547) runs SVDF's mve-rows4 variant (the feature matmul on VMLADAVA.S8):
    the keyword-spotting stack with int16 state (a padded input row of 40, an unpadded one of 16)."""
    model = stacked_svdf_kws()
    library = _library(model, tmp_path, "mps3_an547")
    seq = sequence(library.info)
    _, _, run = run_on_board(
        library, "mps3_an547", tmp_path / "project", executor="aot", input_steps=seq, log=lambda _: None
    )
    assert {op["kernel"]["variant"] for op in library.metadata["operators"] if op["kind"] == "SVDF"} == {"mve-rows4"}
    assert_steps_match(run.step_outputs, Oracle(model).run_sequence(seq), "aot executor on mps3_an547")


def host_driven_twice(library, seq, tmp_path):
    """Host-driven on BOARD: the sequence, <model>_reset over RPC, the sequence again; the outputs
    of both passes (the state stays on the device between RPC runs)."""
    _, _, session = start_on_board(library, load_board(BOARD), tmp_path / "project", timeout=60)
    with session:
        with session.executor() as ex:
            first = [ex(*inputs) for inputs in seq]
            ex.reset()
            again = [ex(*inputs) for inputs in seq]
    return first, again


@needs_board_tools
@pytest.mark.parametrize(
    "make_model", [stacked_svdf_kws, single_svdf_int8, float_svdf], ids=["stacked", "single", "float"]
)
def test_svdf_sequence_host_driven_on_board_and_reset(tmp_path, make_model):
    """Host-driven: the state stays on the device between RPC runs; <model>_reset over RPC restarts it."""
    check_host_driven_sequence(make_model(), tmp_path)


def check_host_driven_sequence(model: bytes, tmp_path) -> None:
    """STEPS runs over RPC (the state stays on the device), <model>_reset over RPC, the same STEPS
    again: every step bit-exact (float within tolerance) with TFLM invoked the same number of times."""
    library = _library(model, tmp_path)
    seq = sequence(library.info)
    want = Oracle(model).run_sequence(seq)
    first, again = host_driven_twice(library, seq, tmp_path)
    assert_steps_match(first, want, f"host-driven on {BOARD}")
    assert_steps_match(again, want, f"host-driven on {BOARD} after the reset")
    assert not all(np.array_equal(a[0], b[0]) for a, b in zip(first, first[1:])), "the outputs must change"
