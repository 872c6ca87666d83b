"""UNIDIRECTIONAL_SEQUENCE_LSTM (microcompiler/ops/lstm.py): sequences of inferences compared step by
step with the TFLM interpreter invoked the same number of times on the same inputs (it keeps its own
hidden and cell state), then <model>_reset() and the same sequence again. int8 (int16 cell state) is
bit-exact; float32 within test_state's FLOAT_RTOL/FLOAT_ATOL (1e-5: same operation order as TFLM,
expf/tanhf rounding may differ)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from harness import compile_bytes
from lstm_models import lstm_float, lstm_int8, lstm_int16
from model_builder import ModelBuilder, lstm_options
from oracle import Oracle
from test_state import check_sequence, sequence

from microcompiler.codegen.model_info import TensorInfo
from microcompiler.errors import UnsupportedModelError
from microcompiler.frontend.tflite import parse_tflite


def test_single_layer_int8_lstm_sequence(tmp_path):
    """12 inferences of 3 time steps each, on both executors, then reset and again."""
    library = check_sequence(lstm_int8(), tmp_path)
    state = library.metadata["state"]
    assert [(s["c_name"], s["bytes"]) for s in state] == [("model_lstm_hidden_state", 6), ("model_lstm_cell_state", 12)]
    assert library.metadata["state_bytes"] >= 6 + 12  # int8 hidden + int16 cell state (each aligned)


def test_two_layer_int8_lstm_sequence_sanitized(tmp_path):
    """Two stacked layers (the second reads the first's hidden states), under ASan/UBSan."""
    library = check_sequence(lstm_int8(layers=2, n_state=7), tmp_path, executors=("aot",), sanitize=True)
    assert len(library.metadata["state"]) == 4


def test_int16_lstm_sequence(tmp_path):
    """TFLM's 16x8 variant: int16 activations, int8 weights, int64 biases (the FCs sum in int64)."""
    library = check_sequence(lstm_int16(), tmp_path, executors=("graph",))
    assert "mc_requantize64" in library.files["src/model_ops.c"]


def test_two_layer_int16_lstm_sequence_sanitized(tmp_path):
    check_sequence(lstm_int16(layers=2, batch=2), tmp_path, executors=("aot",), sanitize=True)


def test_float_lstm_sequence(tmp_path):
    check_sequence(lstm_float(), tmp_path)


@pytest.mark.parametrize(
    "shape",
    [
        dict(batch=2),
        dict(batch=3, time_major=True),
        dict(steps=1, n_state=1),
        dict(cell_clip=0.7),
        dict(n_input=1, batch=2, steps=4),
    ],
    ids=["batch2", "time-major", "one-step-one-unit", "cell-clip", "one-input"],
)
def test_int8_lstm_shapes_sequence(tmp_path, shape):
    """Batches (batch-major and time-major), one step and one unit (no loops), a clipped cell state."""
    check_sequence(lstm_int8(**shape), tmp_path, executors=("aot",))


def test_float_lstm_batches_and_clip_sequence(tmp_path):
    check_sequence(lstm_float(batch=2, cell_clip=0.5), tmp_path, executors=("graph",))


def test_cell_clip_changes_the_outputs():
    """The clipped model differs from the unclipped one (so the clip test above tests something)."""
    seq = [[np.random.default_rng(s).integers(-128, 128, (1, 3, 8), dtype=np.int8)] for s in range(4)]
    plain, clipped = (Oracle(m).run_sequence(seq) for m in (lstm_int8(), lstm_int8(cell_clip=0.7)))
    assert any(not np.array_equal(a[0], b[0]) for a, b in zip(plain, clipped))


def test_generated_c_names_gates_and_state(tmp_path):
    """The reference loops' arrays (the default portable kernel's: tests/test_portable_pairs.py)."""
    library = compile_bytes(lstm_int8(), tmp_path, kernels="reference")
    ops = library.files["src/model_ops.c"]
    for name in (
        "model_lstm_input_weights",
        "model_lstm_recurrent_weights",
        "model_lstm_gate_bias",
        "static int8_t model_lstm_hidden_state[6]",
        "static int16_t model_lstm_cell_state[6];",
        "mc_sigmoid_s16",
        "mc_tanh_s16",
    ):
        assert name in ops, name
    # the per-gate tensors are stacked once, not emitted twice
    assert "model_lstm_input_to_forget_weights" not in ops


def _with_extra_input(position: int) -> bytes:
    """A float LSTM with one of the inputs TFLM refuses (peephole, projection, layer norm) set."""
    model = parse_tflite(lstm_float())  # the tensor indices of the builder's model, read back
    b = ModelBuilder()
    rng = np.random.default_rng(0)
    x = b.activation("input", [1, 3, 5], "float32")
    inputs = [x] + [-1] * 23
    for k in (*range(1, 9), *range(12, 16)):
        shape = model.tensors[model.operators[0].inputs[k]].shape
        inputs[k] = b.constant(f"t{k}", rng.standard_normal(shape).astype(np.float32))
    inputs[position] = b.constant("extra", np.ones(4, np.float32))
    inputs[18] = b.variable("hidden_state", [1, 4], "float32")
    inputs[19] = b.variable("cell_state", [1, 4], "float32")
    y = b.activation("output", [1, 3, 4], "float32")
    b.op("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [y], lstm_options())
    return b.finish([x], [y])


@pytest.mark.parametrize("position", [9, 16, 20], ids=["peephole", "projection", "layer-norm"])
def test_lstm_variants_tflm_does_not_run_are_refused(tmp_path, position):
    with pytest.raises(UnsupportedModelError, match=rf"UNIDIRECTIONAL_SEQUENCE_LSTM\): inputs \[{position}\] are set"):
        compile_bytes(_with_extra_input(position), tmp_path)


def test_sequence_helper_gives_distinct_steps():
    """The oracle side of the tests: distinct inputs per step, the outputs move with the state."""
    model = lstm_int8()
    info = SimpleNamespace(inputs=[TensorInfo("input", "input", (1, 3, 8), "int8", 24, 0.02, 3)])
    seq = sequence(info, steps=3)
    assert not np.array_equal(seq[0][0], seq[1][0])
    outs = Oracle(model).run_sequence(seq)
    assert outs[0][0].shape == (1, 3, 6)


@pytest.mark.parametrize(
    "make_model",
    [
        lstm_int8,
        lambda: lstm_int8(layers=2, n_state=8, n_input=4, batch=2),
        lambda: lstm_int8(n_input=1, n_state=1),
        lambda: lstm_int8(n_input=13, n_state=5),
        lambda: lstm_int8(n_input=4, n_state=4),
    ],
    ids=["single", "two-layer-exact-quads", "no-pairs", "tails", "one-quad-each"],
)
def test_lstm_dsp_variant_sequence(tmp_path, make_model):
    """The DSP (rows4) variant, on kernel_simd.h's portable emulation of SXTB16/SMLAD, under ASan/UBSan."""
    library = check_sequence(make_model(), tmp_path, executors=("aot",), sanitize=True, features={"dsp"})
    kernels = [op["kernel"] for op in library.metadata["operators"] if op["kind"] == "UNIDIRECTIONAL_SEQUENCE_LSTM"]
    assert kernels and all(k["variant"] == "rows4" and k["isa"] == "dsp" for k in kernels)


def test_lstm_dsp_variants_of_int16_and_float(tmp_path):
    """int16x8 takes int16-rows4-s8 (tests/test_int16_matmul_kernels.py sweeps it); float keeps the reference."""
    for model, variant in ((lstm_int16(), "int16-rows4-s8"), (lstm_float(), "reference")):
        library = compile_bytes(model, tmp_path, features={"dsp"})
        assert [op["kernel"]["variant"] for op in library.metadata["operators"]] == [variant]


def test_cli_refuses_a_layer_norm_lstm_in_one_line(tmp_path):
    from test_errors import assert_one_line_error, cli

    model = tmp_path / "lstm.tflite"
    model.write_bytes(_with_extra_input(20))
    proc = cli("compile", model, "-o", tmp_path / "out")
    assert_one_line_error(
        proc, "UNIDIRECTIONAL_SEQUENCE_LSTM", "inputs [20] are set", "no peephole, projection or layer norm"
    )
    assert not (tmp_path / "out").exists()


def test_cli_run_sequence_of_an_lstm_matches_tflm(tmp_path):
    """`microcompiler run --input frames.npy --steps 6`: a leading time axis of inferences, each with the
    model's own 3 time steps; the LSTM state carries over (docs/state.md)."""
    import json

    from test_errors import cli

    model = tmp_path / "lstm.tflite"
    model.write_bytes(lstm_int8())
    seq = np.random.default_rng(5).integers(-128, 128, (6, 1, 3, 8), dtype=np.int8)
    np.save(tmp_path / "frames.npy", seq)
    proc = cli("run", model, "--input", tmp_path / "frames.npy", "--steps", 6, "--json")
    assert proc.returncode == 0, proc.stderr
    got = [step["outputs"][0] for step in json.loads(proc.stdout)["steps"]]
    want = [out[0].tolist() for out in Oracle(model.read_bytes()).run_sequence([[x] for x in seq])]
    assert got == want and len({json.dumps(g) for g in got}) > 1
