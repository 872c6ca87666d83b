"""TFLM's stateful signal operators (SignalFramer, SignalStacker, SignalDelay, SignalOverlapAdd,
SignalFilterBankSpectralSubtraction) and CIRCULAR_BUFFER
against the TFLM oracle over sequences of invocations, bit-exact step by step, then again after
<model>_reset(); their operator-owned state in the state section; malformed configurations."""

from __future__ import annotations

import numpy as np
import pytest
from harness import compile_bytes
from model_builder import ModelBuilder
from movement_models import assert_clean_rejection
from oracle import Oracle
from signal_state_models import MAKERS, framer_model, spectral_subtraction_options, streaming_front_end_model

from microcompiler.frontend.tflite import load_tflite
from microcompiler.host import HostProgram
from microcompiler.inputs import random_inputs
from microcompiler.passes import PIPELINE

STEPS = 12
SANITIZED = ("SignalFramer", "SignalStacker", "SignalFilterBankSpectralSubtraction")  # also under ASan/UBSan
FLOAT_RTOL, FLOAT_ATOL = 1e-6, 0.0  # float overlap-add is one addition per value, as TFLM's


def assert_step_matches(got_set, want_set, pairs, buffers, step, what):
    """Every output equal to TFLM's at ``step`` (from the start or a reset), but a data output whose
    valid flag is false (TFLM leaves it unwritten) and the slots of a CIRCULAR_BUFFER output that no
    input has reached yet (TFLM's hold what its arena held; ours zeros)."""
    skip = {data for data, valid in pairs if not bool(np.asarray(want_set[valid]))}
    unfilled = {out: max(slots - 1 - step, 0) for out, slots in buffers}
    for k, (got, exp) in enumerate(zip(got_set, want_set)):
        if k in skip:
            continue
        exp = np.asarray(exp).reshape(got.shape)
        if unfilled.get(k):
            assert not got[:, : unfilled[k]].any(), f"{what}, output {k}: unfilled slots must be zero"
            got, exp = got[:, unfilled[k] :], exp[:, unfilled[k] :]
        if got.dtype == np.float32:
            np.testing.assert_allclose(got, exp, rtol=FLOAT_RTOL, atol=FLOAT_ATOL, err_msg=f"{what}, output {k}")
        else:
            assert np.array_equal(got, exp), f"{what}, output {k}: {got.ravel()} vs TFLM {exp.ravel()}"


def check_signal_sequence(model, pairs, buffers, tmp_path, executors=("aot", "graph"), sanitize=False):
    """STEPS seeded input sets, <model>_reset(), the same STEPS again, on each executor; each step
    compared with TFLM invoked the same number of times. Returns the library."""
    library = compile_bytes(model, tmp_path)
    seq = [random_inputs(library.info.inputs, seed=200 + s) for s in range(STEPS)]
    want = Oracle(model).run_sequence(seq)
    flags = [{bool(np.asarray(w[valid])) for w in want} for _, valid in pairs]
    assert not pairs or {False, True} in flags, flags  # some flag is both false and true in the sequence
    for executor in executors:
        program = HostProgram(library, tmp_path / f"build_{executor}", sanitize=sanitize, executor=executor)
        runs = program.run(seq + seq, reset_every=STEPS)
        for step, run in enumerate(runs):
            what = f"{executor} executor, step {step % STEPS}{' after reset' if step >= STEPS else ''}"
            assert_step_matches(run.outputs, want[step % STEPS], pairs, buffers, step % STEPS, what)
    return library


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_stateful_signal_operator_sequences_match_tflm(tmp_path, kind):
    model, pairs, buffers = MAKERS[kind]()
    library = check_signal_sequence(model, pairs, buffers, tmp_path, sanitize=kind in SANITIZED)
    assert {op["kind"] for op in library.metadata["operators"]} == {kind}
    # the operators' own state is in the state section, one array per buffer, named after the layer
    assert library.metadata["state_bytes"] > 0
    assert all(s["c_name"].startswith("model_") for s in library.metadata["state"])


@pytest.mark.parametrize("executor", ["aot", "graph"])
def test_streaming_front_end_matches_tflm(tmp_path, executor):
    """micro_speech's front end with its state (framer, spectral subtraction feeding PCAN, stacker)
    among the stateless signal operators, call after call; the framer's unused valid flag does not
    drop it."""
    library = check_signal_sequence(streaming_front_end_model(), [(0, 1)], [], tmp_path, executors=(executor,))
    kinds = [op["kind"] for op in library.metadata["operators"]]
    assert (
        kinds[0] == "SignalFramer" and kinds[-1] == "SignalStacker" and "SignalFilterBankSpectralSubtraction" in kinds
    )


def test_outputs_depend_on_the_state(tmp_path):
    """The same input twice gives different outputs: the state moves on (a delay of a constant frame)."""
    model, _, _ = MAKERS["SignalDelay"]()
    library = compile_bytes(model, tmp_path)
    frame = random_inputs(library.info.inputs, seed=1)
    runs = HostProgram(library, tmp_path / "build").run([frame] * 2)
    assert not np.array_equal(runs[0].outputs[0], runs[1].outputs[0])


def test_operator_state_is_in_the_state_section(tmp_path):
    """The add_operator_state pass gives each buffer a persistent tensor of the operator; the planner
    puts it in the state section, never in the arena, and the initial count of a prefilled framer is
    what <model>_reset() restores."""
    model, _, _ = framer_model(configs=((1, 1, 10, 4, True),))
    (tmp_path / "m.tflite").write_bytes(model)
    graph = load_tflite(str(tmp_path / "m.tflite"))
    for p in PIPELINE:
        graph = p(graph)
    op = graph.operators[0]
    assert sorted(op.state) == ["held", "samples"]
    assert set(op.state.values()) == set(graph.state_tensors)
    assert not set(graph.state_tensors) & set(graph.offsets)
    samples, held = graph.tensors[op.state["samples"]], graph.tensors[op.state["held"]]
    assert samples.shape == (1, 12) and samples.dtype == "int16"  # 10 rounded up to whole steps of 4
    assert int(held.initial[0]) == 6  # prefill: frame_size - frame_step zeros held
    assert graph.state_bytes >= samples.nbytes + held.nbytes
    library = compile_bytes(model, tmp_path / "lib")
    ops_c = library.files["src/model_ops.c"]
    assert "memcpy(model_frames0_held, model_frames0_held_initial" in ops_c, ops_c


def test_circular_buffer_reset_starts_as_a_fresh_model(tmp_path):
    """TFLM's MicroInterpreter::Reset leaves CIRCULAR_BUFFER's buffer as it is (the kernel has no
    reset hook; pinned here: the previous input is still in the slot before the last);
    <model>_reset() clears it, so a reset model starts as a freshly loaded one (zeros)."""
    model, _, _ = MAKERS["CIRCULAR_BUFFER"]()
    oracle = Oracle(model)
    library = compile_bytes(model, tmp_path)
    seq = [random_inputs(library.info.inputs, seed=400 + s) for s in range(3)]
    oracle.run_sequence(seq)
    oracle.reset()
    after_tflm_reset = np.asarray(oracle.run(seq[0])[0])
    assert np.array_equal(after_tflm_reset[0, -2].ravel(), seq[2][0].ravel())  # 4 slots of 3 values
    runs = HostProgram(library, tmp_path / "build").run(seq + seq[:1], reset_every=3)
    after_reset = runs[3].outputs[0]
    assert not after_reset[:, :-1].any() and np.array_equal(after_reset[0, -1].ravel(), seq[0][0].ravel())


def _single(kind, options, shape, out_shapes, dtype="int16", out_dtypes=None):
    b = ModelBuilder()
    x = b.activation("x", shape, dtype)
    dtypes = out_dtypes or [dtype] * len(out_shapes)
    outs = [b.activation(f"y{k}", s, dtypes[k]) for k, s in enumerate(out_shapes)]
    b.custom_op(kind, [x], outs, options)
    return b.finish([x], outs)


def _framer(size=5, step=3, prefill=False, shape=(1, 3), out=(1, 1, 5), **extra):
    return _single(
        "SignalFramer",
        {"frame_size": size, "frame_step": step, "prefill": prefill, **extra},
        list(shape),
        [list(out), []],
        out_dtypes=["int16", "bool"],
    )


def _stacker(channels=2, left=1, right=1, step=1, out=6):
    return _single(
        "SignalStacker",
        {"num_channels": channels, "stacker_left_context": left, "stacker_right_context": right, "stacker_step": step},
        [channels],
        [[out], []],
        out_dtypes=["int16", "bool"],
    )


REJECTED = {
    "framer-step-not-dividing": (_framer(shape=(1, 4)), "must be a multiple of frame_step 3"),
    "framer-prefill-short-frame": (_framer(size=2, prefill=True, out=(1, 1, 2)), "prefill needs frame_size 2"),
    "framer-output-shape": (_framer(out=(1, 5)), "output shape [1, 5] must be [1, 1, 5]"),
    "framer-extra-option": (_framer(extra_key=1), "custom options"),
    "stacker-step-too-long": (_stacker(step=4), "stacker_step 4 must lie in [1, 3]"),
    "stacker-output-size": (_stacker(out=5), "output of 5 values must hold the stack's 6"),
    "delay-negative": (
        _single("SignalDelay", {"delay_length": -1}, [4], [[4]]),
        "delay_length -1 must not be negative",
    ),
    "overlap-step-too-long": (
        _single("SignalOverlapAdd", {"T": 7, "frame_step": 9}, [1, 8], [[9]]),
        "frame_step 9 must lie in [1, frame_size 8]",
    ),
    "subtraction-shift": (
        _single(
            "SignalFilterBankSpectralSubtraction",
            spectral_subtraction_options(4, smoothing_bits=32),
            [4],
            [[4], [4]],
            dtype="uint32",
        ),
        "smoothing_bits 32 must lie in [0, 31]",
    ),
    "subtraction-channels": (
        _single(
            "SignalFilterBankSpectralSubtraction", spectral_subtraction_options(4), [4], [[4], [3]], dtype="uint32"
        ),
        "noise estimate of 3 values must hold num_channels 4",
    ),
    "circular-cycles-2": (
        _single("CIRCULAR_BUFFER", {"cycles_max": 2}, [1, 1, 1, 4], [[1, 3, 1, 4]], dtype="int8"),
        "cycles_max 2",
    ),
    "circular-no-options": (
        _single("CIRCULAR_BUFFER", None, [1, 1, 1, 4], [[1, 3, 1, 4]], dtype="int8"),
        "cycles_max 0",
    ),
    "circular-valid-output": (
        _single(
            "CIRCULAR_BUFFER",
            {"cycles_max": 1},
            [1, 1, 1, 4],
            [[1, 3, 1, 4], []],
            dtype="int8",
            out_dtypes=["int8", "bool"],
        ),
        "the second ('valid') output",
    ),
    "circular-shape": (
        _single("CIRCULAR_BUFFER", {"cycles_max": 1}, [1, 2, 1, 4], [[1, 3, 1, 4]], dtype="int8"),
        "must be one sample",
    ),
    "overlap-type-option": (
        _single("SignalOverlapAdd", {"T": 0, "frame_step": 4}, [1, 8], [[4]]),
        "option T 0 does not name the tensors' type int16",
    ),
}


@pytest.mark.parametrize("case", sorted(REJECTED))
def test_malformed_configurations_are_refused(tmp_path, case):
    model, match = REJECTED[case]
    assert_clean_rejection(model, tmp_path, match)
