"""Bad input: one clear line, a non-zero exit, no traceback, nothing half-written."""

import os
import subprocess
import sys

import numpy as np
import pytest
from fuzz.model_mutations import apply_edits, corpus_cases, materialize, seed_bytes, seed_names
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from model_builder import ModelBuilder, fully_connected_options

from microcompiler.compiler import compile_model
from microcompiler.errors import MicrocompilerError
from microcompiler.frontend.tflite import parse_tflite


def cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", *map(str, args)], capture_output=True, text=True, cwd=cwd
    )


def assert_one_line_error(proc, *fragments):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("microcompiler: error: ")
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def one_op_model(kind) -> bytes:
    b = ModelBuilder()
    x = b.activation("x", [1, 4], "float32")
    y = b.activation("y", [1, 4], "float32")
    b.op(kind, [x], [y])
    return b.finish([x], [y])


@pytest.mark.parametrize(
    "kind,stands",
    [
        ("TOPK_V2", "it is not in TFLite Micro either"),
    ],
)
def test_unsupported_operator_names_operator_index_and_where_it_stands(tmp_path, kind, stands):
    model = tmp_path / "m.tflite"
    model.write_bytes(one_op_model(kind))
    out = tmp_path / "out"
    proc = cli("compile", model, "-o", out)
    assert_one_line_error(
        proc,
        f"unsupported operator {kind} at operator index 0",
        stands,
        "'microcompiler ops' lists the supported operators",
    )
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["m.tflite"]  # no temporary directory left behind


@pytest.mark.parametrize("damage", ["truncated", "corrupted", "not_tflite", "empty", "missing"])
def test_bad_model_file_gives_one_line_error_and_no_output(tmp_path, shared_models, damage):
    good = (shared_models / "mlperf_tiny/kws_ref_model.tflite").read_bytes()
    model = tmp_path / "model.tflite"
    if damage == "truncated":
        model.write_bytes(good[: len(good) // 3])
    elif damage == "corrupted":
        bad = bytearray(good)
        rng = np.random.default_rng(1)
        for pos in rng.integers(8, 2000, 200):  # the flatbuffer tables near the start
            bad[pos] ^= 0xFF
        model.write_bytes(bytes(bad))
    elif damage == "not_tflite":
        model.write_text("this is a text file, not a model\n" * 10)
    elif damage == "empty":
        model.write_bytes(b"")
    out = tmp_path / "out"
    proc = cli("compile", model, "-o", out)
    assert_one_line_error(proc)
    assert not out.exists()
    proc = cli("run", model, "--board", "host")
    assert_one_line_error(proc)


def test_truncated_message_says_so(tmp_path, shared_models):
    good = (shared_models / "mlperf_tiny/ad01_int8.tflite").read_bytes()
    with pytest.raises(MicrocompilerError, match="truncated|corrupted"):
        parse_tflite(good[: len(good) // 2])


def test_not_tflite_message_names_identifier():
    with pytest.raises(MicrocompilerError, match="TFL3"):
        parse_tflite(b"\0" * 64)


# The mutation fuzz test: every shared model and the small built models of tests/fuzz/model_mutations.py,
# mutated by one, two or many bit flips, byte sets, splices of their own bytes, insertions, deletions and
# truncations. Compiling must succeed or raise a MicrocompilerError with a one-line message: no other
# exception type. MC_FUZZ_EXAMPLES sets the number of examples (default: a few seconds' worth); the long
# run is `python scripts/fuzz_models.py --examples 20000` (docs/reliability.md).
FUZZ_EXAMPLES = int(os.environ.get("MC_FUZZ_EXAMPLES", "200"))


def _compile_mutant(directory, model: str, edits: list[dict]) -> None:
    path = directory / "m.tflite"
    path.write_bytes(apply_edits(seed_bytes(model), edits))
    try:
        compile_model(path)
    except MicrocompilerError as exc:
        assert "\n" not in str(exc).strip(), f"a multi-line error: {exc}"


@st.composite
def mutations(draw):
    model = draw(st.sampled_from(seed_names()), label="seed model")
    data = seed_bytes(model)
    size = len(data)
    kind = draw(st.sampled_from(["flip1", "flip2", "flipN", "set", "splice", "insert", "delete", "truncate"]))
    offset = st.integers(0, size - 1)
    if kind.startswith("flip"):
        count = {"flip1": 1, "flip2": 2}.get(kind) or draw(st.integers(3, 16))
        raw = [{"at": draw(offset), "flip": 1 << draw(st.integers(0, 7))} for _ in range(count)]
    elif kind == "set":
        raw = [
            {"at": draw(offset), "delete": 1, "insert": f"{draw(st.integers(0, 255)):02x}"}
            for _ in range(draw(st.integers(1, 4)))
        ]
    elif kind == "splice":
        length = draw(st.integers(1, 64))
        raw = [{"at": draw(offset), "delete": length, "copy_from": draw(offset), "copy_len": length}]
    elif kind == "insert":
        raw = [{"at": draw(offset), "delete": 0, "insert": draw(st.binary(min_size=1, max_size=16)).hex()}]
    elif kind == "delete":
        raw = [{"at": draw(offset), "delete": draw(st.integers(1, 64)), "insert": ""}]
    else:
        raw = [{"at": draw(offset), "delete": size, "insert": ""}]
    return model, materialize(data, raw)


@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    derandomize=os.environ.get("MC_FUZZ_RANDOM") is None,
)
@given(mutation=mutations())
def test_fuzz_mutated_models_compile_or_raise_our_error(tmp_path_factory, shared_models, mutation):
    """Mutate real model bytes: the compiler either compiles or raises MicrocompilerError, in one line."""
    model, edits = mutation
    _compile_mutant(tmp_path_factory.mktemp("fuzz"), model, edits)


@pytest.mark.parametrize("case", corpus_cases(), ids=lambda case: case[0])
def test_fuzz_corpus_cases_stay_fixed(tmp_path, shared_models, case):
    """Every mutant that once escaped with a Python exception (tests/data/fuzz_corpus/)."""
    _, data = case
    _compile_mutant(tmp_path, data["model"], data["edits"])


def test_the_fuzz_corpus_is_there_and_names_what_it_found():
    cases = corpus_cases()
    assert len(cases) >= 3
    failures = " ".join(data["failure"] for _, data in cases)
    assert "per_channel" in failures and "OverflowError" in failures
    for _, data in cases:
        assert data["model"] in seed_names() and all(set(e) == {"at", "delete", "insert"} for e in data["edits"])


def test_zero_points_outside_the_type_are_damage_in_one_line(tmp_path):
    b = ModelBuilder()
    x = b.activation("x", [1, 4], "int8", scale=0.5, zero_point=-8320)
    y = b.activation("y", [1, 4], "int8", scale=0.5, zero_point=0)
    b.op("RELU", [x], [y])
    model = tmp_path / "zp.tflite"
    model.write_bytes(b.finish([x], [y]))
    proc = cli("compile", model, "-o", tmp_path / "out")
    assert_one_line_error(proc, "zero point -8320", "damaged")


def test_quantized_fully_connected_without_weight_quantization_is_refused(tmp_path):
    b = ModelBuilder()
    x = b.activation("x", [1, 4], "int8", scale=0.5, zero_point=0)
    w = b.constant("w", np.ones((2, 4), np.int8))  # no quantization parameters
    y = b.activation("y", [1, 2], "int8", scale=0.5, zero_point=0)
    b.op("FULLY_CONNECTED", [x, w, -1], [y], fully_connected_options())
    model = tmp_path / "fc.tflite"
    model.write_bytes(b.finish([x], [y]))
    assert_one_line_error(cli("compile", model, "-o", tmp_path / "out"), "quantization parameters")
