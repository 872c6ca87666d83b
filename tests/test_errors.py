"""Bad input: one clear line, a non-zero exit, no traceback, nothing half-written."""
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from microcompiler.compiler import compile_model
from microcompiler.errors import MicrocompilerError
from microcompiler.frontend.tflite import parse_tflite
from model_builder import ModelBuilder


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "microcompiler.cli", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd)


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


@pytest.mark.parametrize("kind,stands", [
    ("SVDF", "TFLite Micro runs it (keeps state across inferences); it is on microcompiler's roadmap"),
    ("TOPK_V2", "it is not in TFLite Micro either"),
])
def test_unsupported_operator_names_operator_index_and_where_it_stands(tmp_path, kind, stands):
    model = tmp_path / "m.tflite"
    model.write_bytes(one_op_model(kind))
    out = tmp_path / "out"
    proc = cli("compile", model, "-o", out)
    assert_one_line_error(proc, f"unsupported operator {kind} at operator index 0", stands,
                          "'microcompiler ops' lists the supported operators")
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


FUZZ_SEEDS = ["tflm/hello_world_int8.tflite", "tflm/hello_world_float.tflite"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_mutated_models_compile_or_raise_our_error(tmp_path_factory, shared_models, data):
    """Mutate real model bytes: the compiler either compiles or raises MicrocompilerError."""
    seed = data.draw(st.sampled_from(FUZZ_SEEDS), label="seed model")
    buf = bytearray((shared_models / seed).read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        if not buf:
            break
        kind = data.draw(st.sampled_from(["flip", "set", "truncate", "insert"]))
        pos = data.draw(st.integers(0, max(0, len(buf) - 1)))
        if kind == "flip":
            buf[pos] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "set":
            buf[pos] = data.draw(st.integers(0, 255))
        elif kind == "truncate":
            del buf[pos:]
        else:
            buf[pos:pos] = data.draw(st.binary(min_size=1, max_size=8))
    path = tmp_path_factory.mktemp("fuzz") / "m.tflite"
    path.write_bytes(bytes(buf))
    try:
        compile_model(path)
    except MicrocompilerError as exc:
        assert "\n" not in str(exc).strip()
