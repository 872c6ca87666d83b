"""`microcompiler validate`: the shared int8 models are exact on the emulated Cortex-M4 (standalone and
host-driven); a build with one altered requantization multiplier is caught and its layer named; a float
model as --reference; the command line's one-line errors."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from board_oracle import needs_board_tools
from harness import cli
from model_builder import ModelBuilder, fully_connected_options, softmax_options

from microcompiler import cli as cli_module
from microcompiler.api import open_model
from microcompiler.commands import validate as validate_command
from microcompiler.compiler import compile_model
from microcompiler.frontend.tflite import load_tflite
from microcompiler.inputs import random_inputs
from microcompiler.validation.layers import first_divergence
from microcompiler.validation.reference import Reference

# KWS on the board in the default suite; IC and AD there too with the long tests (pytest -m long tests):
# test_rpc_qemu and test_mlperf already run both on emulated boards against TFLM.
MODELS = [
    "mlperf_tiny/kws_ref_model",
    pytest.param("mlperf_tiny/pretrainedResnet_quant", marks=pytest.mark.long),
    pytest.param("mlperf_tiny/ad01_int8", marks=pytest.mark.long),
]
SAMPLES = 3


@needs_board_tools
@pytest.mark.parametrize("model", MODELS)
def test_shared_models_are_exact_on_the_board(shared_models, model):
    proc = cli(
        "validate",
        shared_models / f"{model}.tflite",
        "--board",
        "mps2_an386",
        "--inputs",
        SAMPLES,
        "--seed",
        7,
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)  # progress went to stderr, never into the JSON
    assert report["passed"] and report["divergence"] is None
    assert report["samples"] == [f"seed {7 + k}" for k in range(SAMPLES)]
    assert [c["mode"] for c in report["comparisons"]] == ["standalone", "host-driven"]
    for comparison in report["comparisons"]:
        for out in comparison["outputs"]:
            assert out["exact_match_rate"] == 1.0 and out["exact_samples"] == SAMPLES
            assert out["max_abs_error"] == 0 and out["cosine_similarity"] == pytest.approx(1.0)
    assert f"standalone: {SAMPLES}/{SAMPLES}" in proc.stderr and f"host-driven: {SAMPLES}/{SAMPLES}" in proc.stderr


def _break_one_multiplier(library, function_name: str):
    """Halve the first output channel's requantization multiplier in one layer's generated C: in an
    int32 array of {first word, multiplier, ...} records (the 8-byte records of the DSP kernels, whose
    first word carries the shift or channel in its low byte, or the wider ones), or in the packed byte
    records of the im2col kernel without the DSP extension ({accumulator start, multiplier}
    little-endian int32, then the shift: 9 bytes per channel)."""
    ops_file = f"src/{library.metadata['name']}_ops.c"
    source = library.files[ops_file]
    words = re.compile(rf"(int32_t {function_name}_params\[\d+\] = \{{\s*-?\d+, )(\d+)")
    if words.search(source):
        library.files[ops_file] = words.sub(lambda m: m.group(1) + str(int(m.group(2)) // 2), source, count=1)
        return library
    packed = re.compile(rf"(uint8_t {function_name}_params\[\d+\] = \{{\s*)((?:\d+,\s*){{8}})")
    match = packed.search(source)
    assert match, f"no per-channel requantization records for {function_name}"
    record = [int(v) for v in match.group(2).replace(",", " ").split()]
    multiplier = int.from_bytes(bytes(record[4:8]), "little", signed=True) // 2
    record[4:8] = multiplier.to_bytes(4, "little", signed=True)
    library.files[ops_file] = source[: match.start(2)] + ", ".join(map(str, record)) + ", " + source[match.end(2) :]
    return library


@needs_board_tools
def test_a_broken_requantization_is_caught_and_its_layer_named(shared_models, monkeypatch, capsys):
    model = shared_models / "mlperf_tiny/kws_ref_model.tflite"
    broken = "kws_ref_model_conv2d_1"  # the second CONV_2D (operator 2)
    real_compile = validate_command.compile_model
    monkeypatch.setattr(
        validate_command, "compile_model", lambda *a, **k: _break_one_multiplier(real_compile(*a, **k), broken)
    )
    status = cli_module.main(
        ["validate", str(model), "--board", "mps2_an386", "--inputs", "2", "--mode", "standalone", "--json"]
    )
    report = json.loads(capsys.readouterr().out)
    assert status == 1 and not report["passed"]
    out = report["comparisons"][0]["outputs"][0]
    assert out["exact_match_rate"] < 1.0 and out["max_abs_error"] > 0
    divergence = report["divergence"]
    expected = next(fn for fn in compile_model(model).functions if fn.name == broken)
    assert divergence["diverged"] and divergence["function"] == broken
    assert (divergence["index"], divergence["operator"], divergence["layer"]) == (
        expected.op.index,
        "CONV_2D",
        "conv2d_1",
    )
    assert divergence["tensor_index"] == expected.op.outputs[0] and divergence["max_abs_error"] > 0
    assert divergence["checked_tensors"] == 3  # operators 0 and 1 matched, operator 2 did not


@needs_board_tools
def test_float_reference_and_inputs_directory(shared_models, tmp_path):
    """IC against its float model (our outputs dequantized), on inputs given as .npy files."""
    quant = shared_models / "mlperf_tiny/pretrainedResnet_quant.tflite"
    rng = np.random.default_rng(3)
    (tmp_path / "in").mkdir()
    for k in range(2):
        np.save(tmp_path / "in" / f"x{k}.npy", rng.integers(-128, 127, size=(1, 32, 32, 3), dtype=np.int8))
    proc = cli(
        "validate",
        quant,
        "--board",
        "mps2_an386",
        "--inputs",
        tmp_path / "in",
        "--mode",
        "host-driven",
        "--reference",
        shared_models / "mlperf_tiny/pretrainedResnet.tflite",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["samples"] == ["x0.npy", "x1.npy"]
    tflm, floats = report["comparisons"]
    assert tflm["against"] == "tflm" and tflm["outputs"][0]["exact_match_rate"] == 1.0
    assert floats["against"] == "float" and floats["mode"] == "host-driven"
    out = floats["outputs"][0]
    assert 0.5 < out["cosine_similarity"] <= 1.0 and out["max_abs_error"] < 1.0  # probabilities in [0, 1]
    assert out["top1_agreement"] is not None  # a classifier: 10 classes


@pytest.mark.parametrize(
    "inputs, message",
    [
        ("0", "--inputs 0: give between 1 and"),
        ("-3", "--inputs -3: give between 1 and"),
        ("no/such/dir", "--inputs no/such/dir: no such directory (and not a number)"),
        ("", "--inputs : no such directory (and not a number)"),
    ],
)
def test_bad_inputs_are_one_line_errors(shared_models, inputs, message):
    proc = cli(
        "validate", shared_models / "mlperf_tiny/kws_ref_model.tflite", "--board", "mps2_an386", "--inputs", inputs
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr


def test_wrong_input_shape_and_empty_directory(shared_models, tmp_path):
    model = shared_models / "mlperf_tiny/kws_ref_model.tflite"
    (tmp_path / "empty").mkdir()
    proc = cli("validate", model, "--board", "mps2_an386", "--inputs", tmp_path / "empty")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "has no sample files" in proc.stderr
    (tmp_path / "bad").mkdir()
    np.save(tmp_path / "bad" / "x.npy", np.zeros((1, 10, 49, 1), np.int8))
    proc = cli("validate", model, "--board", "mps2_an386", "--inputs", tmp_path / "bad")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "x.npy has shape [1, 10, 49, 1] but the model input 'input_1' needs [1, 49, 10, 1]" in proc.stderr
    proc = cli("validate", model, "--board", "mps2_an386", "--reference", tmp_path / "missing.tflite")
    assert proc.returncode == 2 and "cannot read --reference" in proc.stderr and proc.stderr.count("\n") == 1
    proc = cli("validate", model, "--board", "mps2_an386", "--port", "/dev/ttyACM0")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "add --mode host-driven" in proc.stderr


def _fc(b, rng, x, units, depth, dtype, activation="NONE"):
    """One FULLY_CONNECTED layer from x ([1, depth]) to a new [1, units] tensor."""
    if dtype == "float32":
        w = b.constant(f"w{units}", rng.normal(0, 0.5, (units, depth)).astype(np.float32))
        y = b.activation(f"fc{units}", [1, units], "float32")
    else:
        w = b.constant(
            f"w{units}", rng.integers(-127, 128, (units, depth), dtype=np.int8), scale=[0.01], zero_point=[0]
        )
        y = b.activation(f"fc{units}", [1, units], "int8", scale=0.05, zero_point=0)
    b.op("FULLY_CONNECTED", [x, w], [y], fully_connected_options(activation))
    return y


def _two_layers(dtype: str, relu_between: bool) -> bytes:
    """x -> FULLY_CONNECTED(16) [-> RELU] -> FULLY_CONNECTED(5): a small classifier."""
    rng = np.random.default_rng(0)
    b = ModelBuilder()
    quant = {} if dtype == "float32" else {"scale": 0.02, "zero_point": 0}
    x = b.activation("x", [1, 8], dtype, **quant)
    hidden = _fc(b, rng, x, 16, 8, dtype)
    if relu_between:
        same_as_hidden = {} if dtype == "float32" else {"scale": 0.05, "zero_point": 0}  # so RELU can be fused
        relu = b.activation("relu", [1, 16], dtype, **same_as_hidden)
        b.op("RELU", [hidden], [relu])
        hidden = relu
    y = _fc(b, rng, hidden, 5, 16, dtype)
    return b.finish([x], [y])


def test_a_float_model_passes_within_tolerance_on_the_host(tmp_path):
    model = tmp_path / "float_fc.tflite"
    model.write_bytes(_two_layers("float32", relu_between=False))
    proc = cli("validate", model, "--board", "host", "--inputs", 2, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["passed"] and [c["mode"] for c in report["comparisons"]] == ["standalone", "host-driven"]
    for comparison in report["comparisons"]:
        out = comparison["outputs"][0]
        assert out["passed"] and out["max_abs_error"] < 1e-4 and out["cosine_similarity"] > 0.99999
        assert out["top1_agreement"] == 1.0


def test_layer_by_layer_comparison_skips_a_fused_activation(tmp_path):
    """first_divergence on the host: every operator's output matches, and the pre-RELU tensor the
    fusion pass removed is reported as skipped, not compared."""
    model = tmp_path / "relu_fc.tflite"
    model.write_bytes(_two_layers("int8", relu_between=True))
    library = compile_model(model)
    assert [fn.op.kind for fn in library.functions] == ["FULLY_CONNECTED", "FULLY_CONNECTED"]  # RELU fused
    inputs = random_inputs(library.info.inputs, 5)
    with open_model(library) as session, session.executor() as ex:
        result = first_divergence(
            ex, library, Reference(model.read_bytes(), 1, preserve=True), inputs, load_tflite(model)
        )
    assert result == {
        "diverged": False,
        "checked_tensors": 2,
        "skipped_tensors": [{"tensor_index": 2, "tensor": "fc16"}],
    }


def test_a_reference_model_that_does_not_fit_is_refused_before_running(tmp_path):
    model, other = tmp_path / "float_fc.tflite", tmp_path / "other.tflite"
    model.write_bytes(_two_layers("float32", relu_between=False))
    b = ModelBuilder()
    x, y = b.activation("x", [1, 3], "float32"), b.activation("y", [1, 3], "float32")
    b.op("RELU", [x], [y])
    other.write_bytes(b.finish([x], [y]))
    proc = cli("validate", model, "--board", "host", "--reference", other)
    assert proc.returncode == 2 and proc.stdout == "" and "standalone:" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "microcompiler: error: the --reference model's input 0 has shape [1, 3] but the model's has [1, 8]; pass "
        "the float model this one was quantized from"
    )


def test_a_model_with_state_is_validated_as_one_sequence(tmp_path):
    """A stateful model (SVDF, docs/state.md): the inputs run in order on one firmware (standalone: a
    sequence compiled in; host-driven: one session) against one interpreter that keeps its state.
    Compared input by input with fresh interpreters, the later outputs would differ."""
    model = "examples/svdf_kws/svdf_kws_int8.tflite"
    proc = cli("validate", model, "--board", "host", "--inputs", 4, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["passed"] and [c["mode"] for c in report["comparisons"]] == ["standalone", "host-driven"]
    assert all(o["exact_match_rate"] == 1.0 for c in report["comparisons"] for o in c["outputs"])
    # the state matters: the same inputs through fresh interpreters give other outputs after the first
    library = compile_model(model)
    samples = [random_inputs(library.info.inputs, seed=k) for k in range(4)]
    data = open(model, "rb").read()
    carried = Reference(data, 1)
    in_order = [carried.run(s)[0] for s in samples]
    fresh = [Reference(data, 1).run(s)[0] for s in samples]
    assert any(not np.array_equal(a, b) for a, b in zip(in_order[1:], fresh[1:]))


def test_exact_means_bit_for_bit_and_otherwise_the_largest_ulp_error():
    """ "exact" only when every float equals TFLM's bits; one element 3 ulp off is within tolerance
    and the verdict says by how much."""
    from microcompiler.commands.validate import verdict
    from microcompiler.validation.metrics import output_metrics

    ref = [np.linspace(-1, 1, 12, dtype=np.float32)]
    off = [ref[0].copy()]
    off[0].view(np.int32)[5] += 3
    same = output_metrics("y", [ref[0].copy()], ref, exact=False)
    near = output_metrics("y", off, ref, exact=False)
    assert same["bit_exact"] and same["max_ulp_error"] == 0
    assert near["passed"] and not near["bit_exact"] and near["max_ulp_error"] == 3
    assert verdict({"passed": True, "bit_exact": True}) == "PASSED (exact)"
    text = verdict({"passed": True, "bit_exact": False, "max_ulp_error": 3})
    assert "exact" in text and "not exact" in text and "3 ulp" in text
    assert verdict({"passed": False}) == "FAILED"


def test_a_float_softmax_model_is_exact_on_the_host(tmp_path):
    """SOFTMAX and LOGISTIC in float: bit for bit TFLM's (the runtime's expf), so "PASSED (exact)"."""
    b = ModelBuilder()
    x = b.activation("x", [1, 32], "float32")
    s = b.activation("s", [1, 32], "float32")
    y = b.activation("y", [1, 32], "float32")
    b.op("LOGISTIC", [x], [s])
    b.op("SOFTMAX", [s], [y], softmax_options(2.0))
    model = tmp_path / "float_softmax.tflite"
    model.write_bytes(b.finish([x], [y]))
    proc = cli("validate", model, "--board", "host", "--inputs", 3, "--mode", "standalone")
    assert proc.returncode == 0, proc.stderr
    assert "PASSED (exact)" in proc.stdout
    proc = cli("validate", model, "--board", "host", "--inputs", 3, "--mode", "standalone", "--json")
    report = json.loads(proc.stdout)
    assert report["bit_exact"] and report["max_ulp_error"] == 0
