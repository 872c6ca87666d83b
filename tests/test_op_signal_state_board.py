"""TFLM's stateful signal operators (SignalFramer, SignalStacker, SignalDelay, SignalOverlapAdd,
SignalFilterBankSpectralSubtraction) and CIRCULAR_BUFFER on an emulated Cortex-M4 (mps2_an386,
QEMU): one merged model run standalone over a sequence (the firmware runs every step and reports
each) and host-driven with a reset over RPC, every step compared with TFLM invoked the same number
of times."""

from __future__ import annotations

from board_oracle import needs_board_tools
from model_merge import merge_models
from oracle import Oracle
from signal_state_models import MAKERS
from test_op_signal_state import STEPS, assert_step_matches
from test_state_board import BOARD, host_driven_twice
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

from microcompiler.boards import load_board
from microcompiler.compiler import compile_model
from microcompiler.inputs import random_inputs
from microcompiler.project import run_on_board


def merged_model():
    """All the operators' models side by side; (model, (data, valid) output pairs, circular buffers),
    output positions in the merged model."""
    models, pairs, buffers, base = [], [], [], 0
    for kind in sorted(MAKERS):
        model, its_pairs, its_buffers = MAKERS[kind]()
        models.append(model)
        pairs += [(base + d, base + v) for d, v in its_pairs]
        buffers += [(base + out, slots) for out, slots in its_buffers]
        base += _output_count(model)
    return merge_models(models), pairs, buffers


def _output_count(model: bytes) -> int:
    (graph,) = fb.ModelT.InitFromPackedBuf(model, 0).subgraphs
    return len(graph.outputs)


@needs_board_tools
def test_stateful_signal_operators_sequence_standalone_on_board(tmp_path):
    model, pairs, buffers = merged_model()
    path = tmp_path / "signal_state.tflite"
    path.write_bytes(model)
    library = compile_model(path, features=frozenset(load_board(BOARD).cpu.features))
    assert {op["kind"] for op in library.metadata["operators"]} == set(MAKERS)
    seq = [random_inputs(library.info.inputs, seed=300 + s) for s in range(STEPS)]
    want = Oracle(model).run_sequence(seq)
    _, _, run = run_on_board(library, BOARD, tmp_path / "project", input_steps=seq, log=lambda _: None)
    assert len(run.step_outputs) == STEPS
    for step, (got, exp) in enumerate(zip(run.step_outputs, want)):
        assert_step_matches(got, exp, pairs, buffers, step, f"{BOARD}, step {step}")


@needs_board_tools
def test_stateful_signal_operators_host_driven_on_board_and_reset(tmp_path):
    """Host-driven: the operators' state stays on the device between RPC runs; <model>_reset over
    RPC starts it again."""
    model, pairs, buffers = merged_model()
    path = tmp_path / "signal_state.tflite"
    path.write_bytes(model)
    library = compile_model(path, features=frozenset(load_board(BOARD).cpu.features))
    seq = [random_inputs(library.info.inputs, seed=500 + s) for s in range(STEPS)]
    want = Oracle(model).run_sequence(seq)
    first, again = host_driven_twice(library, seq, tmp_path)
    for step in range(STEPS):
        assert_step_matches(first[step], want[step], pairs, buffers, step, f"host-driven on {BOARD}, step {step}")
        assert_step_matches(again[step], want[step], pairs, buffers, step, f"after the reset, step {step}")
