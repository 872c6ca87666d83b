"""``microcompiler run`` over a sequence of inputs (docs/state.md): --steps, repeated --input, a
leading time axis; every step's outputs compared with TFLM invoked as many times; bad combinations
refused with one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from oracle import Oracle
from svdf_models import stacked_svdf_kws
from test_errors import assert_one_line_error, cli

FEATURES = [1, 40]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("state_cli") / "kws.tflite"
    path.write_bytes(stacked_svdf_kws())
    return path


def frames(n: int, seed: int = 7) -> np.ndarray:
    return np.random.default_rng(seed).integers(-128, 128, (n, *FEATURES), dtype=np.int8)


def run_json(*args):
    proc = cli("run", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def oracle_steps(model, seq: np.ndarray) -> list[list]:
    return [out[0].tolist() for out in Oracle(model.read_bytes()).run_sequence([[x] for x in seq])]


def test_time_axis_and_steps(model, tmp_path):
    seq = frames(10)
    np.save(tmp_path / "frames.npy", seq)
    report = run_json(model, "--input", tmp_path / "frames.npy", "--steps", 10)
    got = [step["outputs"][0] for step in report["steps"]]
    assert got == oracle_steps(model, seq)
    assert report["outputs"][0] == got[-1] and len({json.dumps(g) for g in got}) > 1


def test_repeated_inputs_are_steps_host_driven(model, tmp_path):
    seq = frames(3, seed=8)
    paths = []
    for k, x in enumerate(seq):
        paths += ["--input", tmp_path / f"f{k}.npy"]
        np.save(tmp_path / f"f{k}.npy", x)
    report = run_json(model, *paths, "--mode", "host-driven")
    assert [step["outputs"][0] for step in report["steps"]] == oracle_steps(model, seq)


def test_steps_alone_prints_each_step(model):
    proc = cli("run", model, "--steps", 3, "--executor", "graph")
    assert proc.returncode == 0, proc.stderr
    assert [line for line in proc.stdout.splitlines() if line.startswith("step ")] == ["step 0:", "step 1:", "step 2:"]


@pytest.mark.parametrize(
    "shape,steps,fragment",
    [
        ((4, *FEATURES), 3, "its first axis must be the 3 steps"),
        (tuple(FEATURES), 2, "its first axis must be the 2 steps"),
    ],
)
def test_bad_time_axis(model, tmp_path, shape, steps, fragment):
    np.save(tmp_path / "x.npy", np.zeros(shape, np.int8))
    assert_one_line_error(cli("run", model, "--input", tmp_path / "x.npy", "--steps", steps), fragment)


def test_steps_with_one_file_per_step_is_refused(model, tmp_path):
    for k in range(2):
        np.save(tmp_path / f"x{k}.npy", np.zeros(FEATURES, np.int8))
    assert_one_line_error(
        cli("run", model, "--input", tmp_path / "x0.npy", "--input", tmp_path / "x1.npy", "--steps", 2),
        "takes one --input file per model input",
    )


@pytest.mark.parametrize("value", ["0", "-3", "two"])
def test_steps_must_be_positive(model, value):
    assert_one_line_error(cli("run", model, "--steps", value), "give a whole number greater than 0")


def test_bench_refuses_a_sequence(model, tmp_path):
    for k in range(2):
        np.save(tmp_path / f"x{k}.npy", np.zeros(FEATURES, np.int8))
    assert_one_line_error(
        cli("bench", model, "--input", tmp_path / "x0.npy", "--input", tmp_path / "x1.npy"), "bench times one input set"
    )


def test_zephyr_standalone_takes_a_sequence_but_its_mlperf_variant_does_not():
    """Zephyr's standalone firmware runs a sequence as bare metal's does (tests/test_zephyr.py); the
    MLPerf DUT on Zephyr runs the protocol's inputs and refuses one."""
    from microcompiler.errors import MicrocompilerError
    from microcompiler.targets import get_target

    for template in ("baremetal", "zephyr"):
        for mode in ("standalone", "host-driven"):
            get_target(template).check_sequence(mode)
    with pytest.raises(MicrocompilerError, match="not a sequence"):
        get_target("mlperf-zephyr").check_sequence("standalone")


def test_mlperf_template_refuses_a_sequence():
    from microcompiler.errors import MicrocompilerError
    from microcompiler.targets import get_target

    with pytest.raises(MicrocompilerError, match="not a sequence"):
        get_target("mlperf").check_sequence("standalone")
