"""Nothing unsafe from a model: what the generated C relies on is checked at import, TFLM's rules
where the flatbuffer is ambiguous, no signed overflow the C compiler may exploit.

Regression tests for issue 24 ("Nothing unsafe from a model or a path"), groups 3 and 4. Each
model is built here (tests/model_builder.py) and, where TFLM runs it, compared with TFLM
(tests/oracle.py) on the host with ASan/UBSan.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import model_builder as mb
import numpy as np
import pytest
from harness import ROOT, assert_matches_oracle, cli, compile_bytes
from oracle import Oracle

from microcompiler.errors import MicrocompilerError


def fully_connected(x_shape=(1, 4), y_shape=(1, 4), scales=1, bias_values=4, bias_dtype=np.int32):
    """An int8 FULLY_CONNECTED with 4 output rows of depth 4."""
    b = mb.ModelBuilder()
    x = b.activation("x", list(x_shape), "int8", scale=0.05, zero_point=-3)
    w = b.constant(
        "w",
        np.arange(-8, 8, dtype=np.int8).reshape(4, 4),
        scale=[0.02 + 0.001 * i for i in range(scales)],
        zero_point=[0] * scales,
    )
    bias = b.constant("bias", np.arange(bias_values).astype(bias_dtype), scale=[0.001], zero_point=[0])
    y = b.activation("y", list(y_shape), "int8", scale=0.1, zero_point=2)
    b.op("FULLY_CONNECTED", [x, w, bias], [y], mb.fully_connected_options())
    return b.finish([x], [y])


def conv(scales=1, bias_values=3, bias_dtype=np.int32):
    b = mb.ModelBuilder()
    x = b.activation("x", [1, 4, 4, 2], "int8", scale=0.05, zero_point=-3)
    w = b.constant(
        "w", np.ones((3, 3, 3, 2), np.int8), scale=[0.02 + 0.001 * i for i in range(scales)], zero_point=[0] * scales
    )
    bias = b.constant("bias", np.arange(bias_values).astype(bias_dtype), scale=[0.001], zero_point=[0])
    y = b.activation("y", [1, 4, 4, 3], "int8", scale=0.1, zero_point=2)
    b.op("CONV_2D", [x, w, bias], [y], mb.conv2d_options())
    return b.finish([x], [y])


def refused(model: bytes, tmp_path, *fragments, error=MicrocompilerError):
    """The one-line error compiling ``model`` raises (an ``error``), with every fragment in it."""
    with pytest.raises(error) as info:
        compile_bytes(model, tmp_path)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    return message


def tflm_refuses(model: bytes) -> bool:
    try:
        Oracle(model)
    except Exception:  # noqa: BLE001 - the interpreter raises RuntimeError on a failed AllocateTensors
        return True
    return False


def test_fully_connected_batch_against_the_output_size_is_refused(tmp_path):
    """Input [3, 4] makes 3 batches of 4 outputs; a [1, 2] output would be written past its end."""
    refused(fully_connected(x_shape=(3, 4), y_shape=(1, 2)), tmp_path, "3 batches of 4 outputs", "[1, 2]")
    refused(fully_connected(x_shape=(3, 4), y_shape=(3, 2)), tmp_path, "[3, 2]")
    assert_matches_oracle(fully_connected(x_shape=(3, 4), y_shape=(3, 4)), tmp_path / "ok", n_inputs=2, sanitize=True)


@pytest.mark.parametrize("make", [fully_connected, conv], ids=["fully_connected", "conv_2d"])
def test_per_channel_scales_must_match_the_output_channels(tmp_path, make):
    model = make(scales=2)
    refused(model, tmp_path, "weights have 2 scales for")
    assert tflm_refuses(model)


@pytest.mark.parametrize("make", [fully_connected, conv], ids=["fully_connected", "conv_2d"])
def test_a_bias_shorter_than_the_channels_is_refused(tmp_path, make):
    refused(make(bias_values=2), tmp_path, "bias has 2 elements for")


@pytest.mark.parametrize("dtype", [np.float32, np.int16], ids=["float32", "int16"])
@pytest.mark.parametrize("make", [fully_connected, conv], ids=["fully_connected", "conv_2d"])
def test_an_int8_layer_with_a_bias_of_another_type_is_refused(tmp_path, make, dtype):
    refused(make(bias_dtype=dtype), tmp_path, "int8 needs an int32 bias", np.dtype(dtype).name)


def relu_with_codes(builtin: int, deprecated: int) -> bytes:
    import flatbuffers
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

    b = mb.ModelBuilder()
    x = b.activation("x", [1, 16], "float32")
    y = b.activation("y", [1, 16], "float32")
    b.op("RELU", [x], [y])
    model = fb.ModelT.InitFromPackedBuf(b.finish([x], [y]), 0)
    model.operatorCodes[0].builtinCode = builtin
    model.operatorCodes[0].deprecatedBuiltinCode = deprecated
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


@pytest.mark.parametrize("builtin, deprecated", [(19, 21), (21, 19), (21, 0)])
def test_the_operator_code_is_the_larger_of_the_two_fields_as_in_tflm(tmp_path, builtin, deprecated):
    """RELU is 19, RELU6 21: TFLM runs max(builtin_code, deprecated_builtin_code), RELU6, here too."""
    model = relu_with_codes(builtin, deprecated)
    x = [np.linspace(-4, 12, 16, dtype=np.float32).reshape(1, 16)]
    out = Oracle(model).run(x)[0]
    assert out.max() == 6.0  # TFLM ran RELU6
    assert_matches_oracle(model, tmp_path, inputs=[x], sanitize=True)


@pytest.mark.parametrize("executor", ["aot", "graph"])
def test_an_input_listed_twice_takes_the_last_value_as_in_tflm(tmp_path, executor):
    b = mb.ModelBuilder()
    x = b.activation("x", [1, 4], "int8", scale=0.1, zero_point=0)
    y = b.activation("y", [1, 4], "int8", scale=0.1, zero_point=0)
    b.op("RELU", [x], [y])
    model = b.finish([x, x], [y])
    first, last = np.full((1, 4), -5, np.int8), np.full((1, 4), 7, np.int8)
    assert np.array_equal(Oracle(model).run([first, last])[0], last)  # TFLM: the last write wins
    assert_matches_oracle(model, tmp_path, inputs=[[first, last]], sanitize=True, executor=executor)


# ---- one line, never a traceback ----


def softmax(beta: float, dtype: str = "int8") -> bytes:
    b = mb.ModelBuilder()
    x = b.activation("x", [1, 6], dtype, scale=0.05, zero_point=0)
    y = b.activation(
        "y", [1, 6], dtype, scale=1 / 256 if dtype == "int8" else 1 / 32768, zero_point=-128 if dtype == "int8" else 0
    )
    b.op("SOFTMAX", [x], [y], mb.softmax_options(beta))
    return b.finish([x], [y])


@pytest.mark.parametrize(
    "beta, dtype, fragment",
    [
        (float("nan"), "int8", "not a finite number"),
        (float("inf"), "int16", "not a finite number"),
        (1e-8, "int8", "too small"),
        (-1.0, "int8", "too small"),
    ],
)
def test_a_softmax_beta_no_kernel_can_scale_is_one_line(tmp_path, beta, dtype, fragment):
    """TFLM aborts the process on these (QuantizeMultiplierGreaterThanOne); we refuse them."""
    refused(softmax(beta, dtype), tmp_path, "SOFTMAX", fragment)


def test_an_activation_arena_over_2_gib_is_one_line(tmp_path):
    n = 1 << 28  # float32: 1 GiB per tensor; three live at once
    b = mb.ModelBuilder()
    x = b.activation("x", [1, n], "float32")
    a, c, d, e, y = (b.activation(k, [1, n], "float32") for k in "acdey")
    for t in (a, c, d):
        b.op("RELU", [x], [t])
    b.op("ADD", [a, c], [e], mb.add_options())
    b.op("ADD", [e, d], [y], mb.add_options())
    refused(b.finish([x], [y]), tmp_path, "arena of", "more than any microcontroller")


def test_a_patch_grid_too_fine_for_the_graph_executor_compiles_for_aot(tmp_path, shared_models):
    """IC with --patches 16x16: 3,078 operators whose names overflow the graph description's 16-bit
    offsets (a struct.error); now only the graph executor is refused, with the reason."""
    from microcompiler.compiler import compile_model

    library = compile_model(shared_models / "mlperf_tiny" / "pretrainedResnet_quant.tflite", patches="16x16")
    assert "graph executor's description holds" in library.metadata["graph_executor_refusal"]


# ---- every wait bounded: the oracle in a child process ----

WHILE_FOR_EVER = Path(__file__).resolve().parents[1] / "examples" / "control_flow" / "while_int8.tflite"


def _children_running(pid: int, word: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and word in cmdline:
                found.append(int(entry.name))
    return found


def test_validate_stops_an_oracle_that_never_ends_after_the_timeout():
    """The oracle used to run in-process without a limit: validate --timeout 5 ran for ever."""
    started = time.monotonic()
    proc = cli("validate", WHILE_FOR_EVER, "--board", "host", "--inputs", "1", "--timeout", "5", timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "did not finish" in proc.stderr and "within 5 s" in proc.stderr and "Traceback" not in proc.stderr
    assert time.monotonic() - started < 240


def test_sigterm_stops_validate_and_its_oracle_within_a_second():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "microcompiler.cli",
            "validate",
            str(WHILE_FOR_EVER),
            "--board",
            "host",
            "--inputs",
            "1",
            "--timeout",
            "300",
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 180
        while not _children_running(proc.pid, "reference_worker") and time.monotonic() < deadline:
            time.sleep(0.2)
        workers = _children_running(proc.pid, "reference_worker")
        assert workers, "the oracle never started"
        time.sleep(2)  # inside TFLM's endless loop
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        assert time.monotonic() - sent < 5  # "within a second", with room for a loaded machine
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, proc.stderr.read()
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_an_oracle_that_aborts_is_one_line(tmp_path):
    """TFLM aborts the process on a softmax beta of -1 (a failed check); the child dies, not us."""
    from microcompiler.validation.reference import Reference

    with pytest.raises(MicrocompilerError, match="TFLite Micro .*(killed by SIGABRT|exited)"):
        with Reference(softmax(-1.0), 1, timeout=60) as ref:
            ref.run([np.zeros((1, 6), np.int8)])


# ---- found by the structure-aware mutator (scripts/fuzz_models.py --structured --run) ----


def test_a_two_dimensional_bias_is_refused(tmp_path):
    """A bias of shape [4, 1] (the right count) made the fast kernels' record packing raise ValueError."""
    b = mb.ModelBuilder()
    x = b.activation("x", [1, 4], "int8", scale=0.05, zero_point=-3)
    w = b.constant("w", np.ones((4, 4), np.int8), scale=[0.02], zero_point=[0])
    bias = b.constant("bias", np.arange(4, dtype=np.int32).reshape(4, 1), scale=[0.001], zero_point=[0])
    y = b.activation("y", [1, 4], "int8", scale=0.1, zero_point=2)
    b.op("FULLY_CONNECTED", [x, w, bias], [y], mb.fully_connected_options())
    refused(b.finish([x], [y]), tmp_path, "bias has shape [4, 1]", "one-dimensional")


def test_an_input_scale_of_3e38_is_refused_not_overflowed(tmp_path):
    """Input scale 3e38 makes a requantization scale past 2^30: the saturated multiplier made the
    generated depthwise kernel overflow int32 (UBSan: -2147483647 + -2), and TFLM overflows too."""
    b = mb.ModelBuilder()
    x = b.activation("x", [1, 4, 4, 4], "int8", scale=3e38, zero_point=1)
    w = b.constant("w", np.ones((1, 3, 3, 4), np.int8), scale=[0.01] * 4, zero_point=[0] * 4, axis=3)
    bias = b.constant("bias", np.zeros(4, np.int32), scale=[0.0005] * 4, zero_point=[0] * 4)
    y = b.activation("y", [1, 4, 4, 4], "int8", scale=0.08, zero_point=-2)
    b.op("DEPTHWISE_CONV_2D", [x, w, bias], [y], mb.depthwise_options(activation="RELU6"))
    refused(b.finish([x], [y]), tmp_path, "requantization scale", "2^30")


@pytest.mark.parametrize("bias_value", [2**31 - 1, -(2**31)], ids=["int32_max", "int32_min"])
def test_a_bias_at_the_int32_limits_gives_tflms_answer_at_O2_and_under_ubsan(tmp_path, bias_value):
    """The accumulator starts at the bias: the host at -O2 must give TFLM's answer, and UBSan must not
    see a signed overflow the compiler could assume away."""
    b = mb.ModelBuilder()
    x = b.activation("x", [1, 8], "int8", scale=0.05, zero_point=-3)
    w = b.constant("w", np.full((2, 8), 127, np.int8), scale=[0.02], zero_point=[0])
    bias = b.constant("bias", np.array([bias_value, 5], np.int32), scale=[0.001], zero_point=[0])
    y = b.activation("y", [1, 2], "int8", scale=0.1, zero_point=2)
    b.op("FULLY_CONNECTED", [x, w, bias], [y], mb.fully_connected_options())
    model = b.finish([x], [y])
    inputs = [[np.full((1, 8), v, np.int8)] for v in (127, -128, 0)]
    assert_matches_oracle(model, tmp_path / "o2", inputs=inputs)
    assert_matches_oracle(model, tmp_path / "ubsan", inputs=inputs, sanitize=True)
    b = mb.ModelBuilder()  # the same for CONV_2D
    x = b.activation("x", [1, 3, 3, 8], "int8", scale=0.05, zero_point=-3)
    w = b.constant("w", np.full((2, 3, 3, 8), 127, np.int8), scale=[0.02], zero_point=[0])
    bias = b.constant("bias", np.array([bias_value, 5], np.int32), scale=[0.001], zero_point=[0])
    y = b.activation("y", [1, 3, 3, 2], "int8", scale=0.1, zero_point=2)
    b.op("CONV_2D", [x, w, bias], [y], mb.conv2d_options())
    model = b.finish([x], [y])
    inputs = [[np.full((1, 3, 3, 8), v, np.int8)] for v in (127, -128, 0)]
    assert_matches_oracle(model, tmp_path / "conv_o2", inputs=inputs)
    assert_matches_oracle(model, tmp_path / "conv_ubsan", inputs=inputs, sanitize=True)


def chain(n: int) -> bytes:
    b = mb.ModelBuilder()
    t = x = b.activation("x", [1, 8], "float32")
    for i in range(n):
        y = b.activation(f"t{i}", [1, 8], "float32")
        b.op("RELU" if i % 2 else "TANH", [t], [y])
        t = y
    return b.finish([x], [t])


@pytest.mark.long
def test_a_20000_operator_chain_compiles_within_a_minute(tmp_path):
    """Compile time used to be quadratic in the operators (1,000: 5.7 s; 20,000: over 600 s)."""
    path = tmp_path / "chain.tflite"
    path.write_bytes(chain(20000))
    from microcompiler.compiler import compile_model

    started = time.process_time()
    library = compile_model(path)
    assert len(library.metadata["operators"]) == 20000
    assert time.process_time() - started < 60


# ---- the structure-aware mutator, short run (the long one: docs/reliability.md) ----


def test_structure_aware_mutants_run_like_tflm_or_are_refused():
    """About a minute of scripts/fuzz_models.py --structured --run: every mutant that compiles is
    built with ASan/UBSan and compared with TFLM; no traceback, hang, sanitizer report or difference."""
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "fuzz_models.py"),
            "--structured",
            "--run",
            "--examples",
            "40",
            "--seconds",
            "75",
            "--seed",
            "3",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    summary = proc.stdout.strip().splitlines()[-1]
    assert proc.returncode == 0 and summary.endswith("; 0 failures"), proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "structure-aware mutants" in summary and ("agree" in summary or "refused" in summary)


def test_structure_aware_mutations_change_what_they_say():
    import random

    import tflite
    from fuzz.model_mutations import seed_bytes
    from fuzz.structure_mutations import mutate_structure

    rng = random.Random(0)
    seed = seed_bytes("built:fc_int8")
    changed = 0
    for _ in range(20):
        data, notes = mutate_structure(rng, seed, edits=1)
        assert tflite.Model.GetRootAs(data, 0).SubgraphsLength() == 1  # still a well-formed flatbuffer
        changed += data != seed and bool(notes)
    assert changed >= 14  # some edits have nothing to change (this model has no custom options)
    # a custom operator's flexbuffer options: one value changed or removed, the rest kept
    from flatbuffers import flexbuffers
    from fuzz.structure_mutations import _EDITS
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

    model = fb.ModelT.InitFromPackedBuf(seed_bytes("op:SignalFramer_int16"), 0)
    before = flexbuffers.Loads(bytes(bytearray(model.subgraphs[0].operators[0].customOptions)))
    note = _EDITS["custom"](random.Random(1), model)
    after = flexbuffers.Loads(bytes(bytearray(model.subgraphs[0].operators[0].customOptions)))
    assert note and after != before and len(set(before.items()) ^ set(after.items())) in (1, 2), (note, after)


# ---- generated C that did not compile, blamed on us ----


def test_an_operator_writing_the_model_input_in_place_is_refused(tmp_path):
    """RELU writing the model input x (a const pointer of <model>_run) generated C that did not compile."""
    b = mb.ModelBuilder()
    x = b.activation("x", [1, 4], "float32")
    t = b.activation("t", [1, 4], "float32")
    y = b.activation("y", [1, 4], "float32")
    b.op("TANH", [x], [t])
    b.op("RELU", [t], [x])
    b.op("ADD", [x, t], [y], mb.add_options())
    refused(b.finish([x], [y]), tmp_path, "writes the model's input tensor 0", "in place")


def test_a_while_condition_with_a_duplicated_output_is_refused(tmp_path):
    import flatbuffers
    from flow_models import while_int8
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

    model = fb.ModelT.InitFromPackedBuf(while_int8(), 0)
    model.subgraphs[1].outputs = list(model.subgraphs[1].outputs) * 2
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    refused(bytes(builder.Output()), tmp_path, "must output one bool")


def test_a_mean_whose_rescale_saturates_is_refused(tmp_path):
    """Found by the structure-aware mutator: an int16 MEAN with input scale 1e38 computed another
    answer than TFLM (whose saturated multiplier overflows int32)."""
    b = mb.ModelBuilder()
    x = b.activation("x", [1, 4, 6], "int16", scale=1e38, zero_point=0)
    axis = b.constant("axis", np.array([1], dtype=np.int32))
    y = b.activation("y", [1, 1, 6], "int16", scale=1 / 2048, zero_point=0)
    b.op("MEAN", [x, axis], [y], mb.reducer_options(True))
    refused(b.finish([x], [y]), tmp_path, "MEAN", "2^30")


@pytest.mark.parametrize("fault", [NameError("name 'kernels' is not defined"), IndexError("list index out of range")])
def test_a_fault_in_microcompiler_itself_is_not_blamed_on_the_model_file(monkeypatch, fault):
    """Only what the flatbuffer reader raises on a corrupt file becomes "truncated or corrupted"; a bug
    elsewhere (here: the operator table raising) stays the bug it is, with its traceback to report."""
    from microcompiler.errors import ModelFormatError
    from microcompiler.frontend import tflite as frontend

    buf = (ROOT / "examples/tiny_cnn/tiny_cnn_int8.tflite").read_bytes()

    def broken_operator_table():
        raise fault

    monkeypatch.setattr(frontend, "supported_operators", broken_operator_table)
    with pytest.raises(type(fault)):
        frontend.parse_tflite(buf)
    with pytest.raises(ModelFormatError, match="truncated or corrupted"):  # a corrupt file still is one
        frontend.parse_tflite(buf[: len(buf) // 3])
