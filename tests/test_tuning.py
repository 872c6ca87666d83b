"""microcompiler tune (docs/tuning.md): candidates from the kernels, the versioned log, --tuning applied.

The QEMU test tunes a three-layer model with --jobs 2 (two QEMU instances), then reuses its log on
another model; the rest needs no device.
"""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
from harness import cli
from model_builder import ModelBuilder, conv2d_options, fully_connected_options, pool_options

from microcompiler.boards import load_board
from microcompiler.compiler import compile_model, run_passes
from microcompiler.frontend.tflite import load_tflite
from microcompiler.tuning.candidates import operator_candidates
from microcompiler.tuning.log import LOG_VERSION, TuningLog
from microcompiler.tuning.signature import cpu_key, operator_signature

BOARD = "mps2_an386"
needs_qemu = pytest.mark.skipif(
    any(shutil.which(t) is None for t in ("qemu-system-arm", "arm-none-eabi-gcc", "cmake", "ninja")),
    reason="needs qemu-system-arm, arm-none-eabi-gcc, cmake and ninja",
)


def small_model(pool: bool = False, seed: int = 0) -> bytes:
    """CONV_2D 3x3 (4 -> 8 channels) -> FULLY_CONNECTED (128 -> 6), and with ``pool`` an AVERAGE_POOL_2D
    between them (another model sharing the two tunable layers' signatures... but the FC's input)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.activation("x", [1, 4, 4, 4], "int8", scale=0.05, zero_point=-3)
    w = b.constant("conv_w", rng.integers(-127, 128, (8, 3, 3, 4), dtype=np.int8), scale=[0.02] * 8, zero_point=[0] * 8)
    bias = b.constant("conv_b", rng.integers(-300, 300, 8).astype(np.int32), scale=[0.001] * 8, zero_point=[0] * 8)
    c = b.activation("conv", [1, 4, 4, 8], "int8", scale=0.05 * 0.02 * math.sqrt(36) * 40, zero_point=-128)
    b.op("CONV_2D", [x, w, bias], [c], conv2d_options("SAME", activation="RELU"))
    src = c
    if pool:
        src = b.activation("pool", [1, 4, 4, 8], "int8", scale=0.05 * 0.02 * math.sqrt(36) * 40, zero_point=-128)
        b.op("AVERAGE_POOL_2D", [c], [src], pool_options((1, 1), (1, 1), "VALID"))
    fw = b.constant("fc_w", rng.integers(-127, 128, (6, 128), dtype=np.int8), scale=[0.01], zero_point=[0])
    fb_ = b.constant("fc_b", rng.integers(-500, 500, 6).astype(np.int32), scale=[0.0024], zero_point=[0])
    y = b.activation("y", [1, 6], "int8", scale=0.5, zero_point=2)
    b.op("FULLY_CONNECTED", [src, fw, fb_], [y], fully_connected_options("NONE"))
    return b.finish([x], [y])


@pytest.fixture()
def model(tmp_path):
    path = tmp_path / "small.tflite"
    path.write_bytes(small_model())
    return path


def test_candidates_come_from_the_kernels_heuristic_first_and_distinct(model):
    board = load_board(BOARD)
    graph = run_passes(load_tflite(model))
    conv, fc = graph.operators
    conv_candidates = operator_candidates(conv, graph, board.cpu.features)
    assert conv_candidates[0] == {}
    assert {"weights": "s16"} in conv_candidates and {"variant": "reference"} in conv_candidates
    assert {"weights": "s8"} not in conv_candidates  # the heuristic's own choice: same code, dropped
    fc_candidates = operator_candidates(fc, graph, board.cpu.features)
    assert fc_candidates[0] == {} and len(fc_candidates) >= 3
    assert any("chunk" in k for k in fc_candidates)  # 128 inputs: chunking the lanes kernel changes the code


def _log_for(model, knobs_by_kind: dict) -> TuningLog:
    graph = run_passes(load_tflite(model))
    cpu = cpu_key(load_board(BOARD).cpu)
    return TuningLog(
        [
            {"cpu": cpu, "signature": operator_signature(op, graph), "knobs": knobs_by_kind[op.kind]}
            for op in graph.operators
            if op.kind in knobs_by_kind
        ]
    )


def test_compile_applies_a_log_per_operator_signature(model, tmp_path):
    log = _log_for(model, {"CONV_2D": {"weights": "s16"}}).save(tmp_path / "t.json")
    plain = cli("compile", model, "--board", BOARD, "-o", tmp_path / "plain")
    tuned = cli("compile", model, "--board", BOARD, "--tuning", log, "-o", tmp_path / "tuned")
    assert plain.returncode == 0 and tuned.returncode == 0, plain.stderr + tuned.stderr
    assert "1 operators tuned by" in tuned.stdout
    kernels = [
        [o["kernel"] for o in json.loads((tmp_path / d / "metadata.json").read_text())["operators"]]
        for d in ("plain", "tuned")
    ]
    assert kernels[0][0]["weights"] == "s8" and kernels[1][0]["weights"] == "s16"
    assert kernels[0][1] == kernels[1][1]  # no entry for the FC: the heuristic
    project = cli("create-project", model, "--board", BOARD, "--tuning", log, "-o", tmp_path / "project")
    assert project.returncode == 0, project.stderr
    meta = json.loads((tmp_path / "project/model/metadata.json").read_text())
    assert meta["operators"][0]["kernel"]["weights"] == "s16"
    other_cpu = load_board("mps2_an500").cpu  # a log is per CPU: nothing applies on an M7
    assert (
        compile_model(model, features=other_cpu.features, tuning=TuningLog.load(log).for_cpu(other_cpu)).metadata[
            "operators"
        ][0]["kernel"]["weights"]
        == "s8"
    )


@pytest.mark.parametrize(
    "content,message",
    [
        ("{not json", "is damaged (not JSON)"),
        (json.dumps({"entries": []}), "is not a microcompiler tuning log"),
        (json.dumps({"format": "microcompiler-tuning", "version": LOG_VERSION + 1, "entries": []}), "has version 2"),
        (
            json.dumps({"format": "microcompiler-tuning", "version": LOG_VERSION, "entries": [{"cpu": "x"}]}),
            "is damaged (an entry lacks",
        ),
    ],
)
def test_a_bad_log_is_one_line_error(model, tmp_path, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    for command in (
        ["compile", model, "--board", BOARD, "-o", tmp_path / "out"],
        ["tune", model, "--board", BOARD, "--output", tmp_path / "new.json"],
    ):
        r = cli(*command, "--tuning", bad)
        assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "new.json").exists()


def test_a_knob_the_kernel_does_not_offer_and_other_refusals(model, tmp_path):
    log = _log_for(model, {"CONV_2D": {"weights": "s4"}}).save(tmp_path / "t.json")
    r = cli("compile", model, "--board", BOARD, "--tuning", log, "-o", tmp_path / "out")
    assert r.returncode == 2 and "sets weights='s4' for CONV_2D" in r.stderr, r.stderr
    r = cli("compile", model, "--tuning", log, "-o", tmp_path / "out")
    assert r.returncode == 2 and "--tuning needs --board" in r.stderr
    r = cli("tune", model, "--board", BOARD, "--port", "/dev/ttyACM0")
    assert r.returncode == 2 and "not supported yet" in r.stderr and len(r.stderr.splitlines()) == 1
    mine = tmp_path / "notes.json"
    mine.write_text("{}")
    r = cli("tune", model, "--board", BOARD, "--output", mine)
    assert r.returncode == 2 and "is not a tuning log" in r.stderr and mine.read_text() == "{}"


@needs_qemu
def test_tune_with_two_qemu_instances_then_reuse_the_log_on_another_model(model, tmp_path):
    out = tmp_path / "small.tuning.json"
    r = cli("tune", model, "--board", BOARD, "--jobs", "2", "--output", out, "--json", timeout=600)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["exact"] and report["tuned"] == 2 and report["reused"] == 0
    assert report["tuned_ticks"] <= report["heuristic_ticks"]  # the tuner's guarantee, not a speed figure
    assert "tuning: 1/" in r.stderr  # progress on stderr (plain lines: not a terminal)
    log = json.loads(out.read_text())
    assert log["format"] == "microcompiler-tuning" and log["version"] == LOG_VERSION
    for entry, row in zip(log["entries"], report["signatures"]):
        assert entry["cpu"] == "cortex-m4+dsp+fpu" and entry["signature"]["kind"] == row["kind"]
        assert entry["candidates"][0]["knobs"] == {} and entry["candidates"][0]["exact"]
        exact = [c for c in entry["candidates"] if c["exact"]]
        assert entry["ticks"] == min(c["ticks"] for c in exact)  # the fastest exact one (ties: the heuristic)
        if entry["ticks"] == entry["heuristic_ticks"]:
            assert entry["knobs"] == {}
    other = tmp_path / "other.tflite"
    other.write_bytes(small_model(pool=True))
    r = cli("tune", other, "--board", BOARD, "--jobs", "2", "--tuning", out, "--output", tmp_path / "o.json", "--json")
    assert r.returncode == 0, r.stderr
    again = json.loads(r.stdout)
    # both layers' signatures were tuned on the first model; the AVERAGE_POOL_2D between them is new (its
    # candidates: sxtab16 and the reference loop)
    assert again["reused"] == 2 and again["tuned"] == 1
    assert [s["status"] for s in again["signatures"]] == ["reused", "tuned", "reused"]
    entries = json.loads((tmp_path / "o.json").read_text())["entries"]
    assert [e for e in entries if e["signature"]["kind"] != "AVERAGE_POOL_2D"] == log["entries"]
    assert [e["signature"]["kind"] for e in entries].count("AVERAGE_POOL_2D") == 1


def test_local_runner_runs_jobs_at_once_and_reports_a_failure():
    import threading

    from microcompiler.tuning.runner import LocalRunner

    both = threading.Barrier(2, timeout=10)  # only passes if two jobs run at the same time

    def job(k):
        both.wait()
        return k * 10

    with LocalRunner(2) as runner:
        assert sorted(runner.run(job, [1, 2])) == [(0, 10), (1, 20)]

    def failing(k):
        if k == 1:
            raise ValueError("job 1 failed")
        return k

    with LocalRunner(1) as runner, pytest.raises(ValueError, match="job 1 failed"):
        list(runner.run(failing, [0, 1, 2]))
    with LocalRunner(1, timeout=0.2) as runner, pytest.raises(TimeoutError, match="no tuning job finished"):
        list(runner.run(lambda _: threading.Event().wait(2), [0]))


def test_a_measurement_job_is_plain_data_another_runner_can_ship(model):
    import pickle

    from microcompiler.tuning.measure import MeasureJob, measure

    job = MeasureJob(
        model=str(model),
        board=BOARD,
        tuning={0: {"weights": "s16"}},
        inputs=[np.zeros((1, 4, 4, 4), np.int8)],
        expected={3: np.ones(6, np.int8)},
    )
    copy = pickle.loads(pickle.dumps(job))
    assert copy.tuning == job.tuning and np.array_equal(copy.expected[3], job.expected[3])
    assert pickle.loads(pickle.dumps(measure)) is measure  # a module-level function: shipped by name


def test_the_ray_runner_without_ray_installed_is_one_line_naming_the_extra(model):
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['ray'] = None; from microcompiler.cli import main; "
        f"sys.exit(main(['tune', {str(model)!r}, '--board', '{BOARD}', '--runner', 'ray']))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        "microcompiler: error: --runner ray needs Ray, which is not installed; install it with "
        "\"pip install 'microcompiler[ray]'\""
    ]
