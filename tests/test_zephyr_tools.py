"""bench and validate on Zephyr firmware (`--template zephyr`) in QEMU, as on bare metal: `bench` times
every operator of a host-driven Zephyr build; `validate` runs seeded inputs standalone and
host-driven and compares them with the TFLite Micro interpreter. The MLPerf Tiny DUT on Zephyr is
tests/test_mlperf_zephyr.py; `tune --template zephyr` builds Zephyr firmware for every round. Long (Zephyr builds): `pytest -m long tests/test_zephyr_tools.py`.
"""

import json
import os
import shutil

import pytest
from harness import cli

needs_zephyr = pytest.mark.skipif(
    not (shutil.which("west") and os.environ.get("ZEPHYR_BASE")),
    reason="needs west and a Zephyr workspace (ZEPHYR_BASE); see docs/zephyr.md",
)


@pytest.mark.long
@needs_zephyr
def test_bench_times_every_operator_on_zephyr(shared_models):
    model = shared_models / "mlperf_tiny" / "kws_ref_model.tflite"
    proc = cli(
        "bench",
        model,
        "--board",
        "mps2_an385",
        "--template",
        "zephyr",
        "--json",
        "--number",
        "1",
        "--repeat",
        "2",
        timeout=3600,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["timer_hz"] == 25_000_000  # the system timer's cycles (QEMU has no DWT)
    host = json.loads(cli("bench", model, "--board", "host", "--json", "--number", "1", "--repeat", "1").stdout)
    assert [(op["index"], op["kind"]) for op in report["operators"]] == [
        (op["index"], op["kind"]) for op in host["operators"]
    ]
    assert all(op["ticks"] > 0 for op in report["operators"])
    # -icount shift=0: the same firmware takes the same instructions every time
    runs = report["inference"]["ticks_per_run_each_repeat"]
    assert len(runs) == 2 and runs[0] == runs[1] > 0
    assert report["operator_ticks_total"] <= report["inference"]["ticks"] * 1.5


@pytest.mark.long
@needs_zephyr
def test_validate_is_exact_on_zephyr(shared_models):
    proc = cli(
        "validate",
        shared_models / "tflm" / "hello_world_int8.tflite",
        "--board",
        "mps2_an385",
        "--template",
        "zephyr",
        "--inputs",
        2,
        "--seed",
        3,
        "--json",
        timeout=3600,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["passed"] and report["divergence"] is None
    assert [c["mode"] for c in report["comparisons"]] == ["standalone", "host-driven"]
    for comparison in report["comparisons"]:
        for out in comparison["outputs"]:
            assert out["exact_match_rate"] == 1.0 and out["max_abs_error"] == 0


@pytest.mark.long
@needs_zephyr
def test_tune_builds_zephyr_firmware_each_round(tmp_path):
    from test_tuning import small_model

    model = tmp_path / "small.tflite"
    model.write_bytes(small_model())
    out = tmp_path / "zephyr.tuning.json"
    proc = cli(
        "tune",
        model,
        "--board",
        "mps2_an385",
        "--template",
        "zephyr",
        "--jobs",
        "2",
        "--output",
        out,
        "--json",
        timeout=3600,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["exact"] and report["tuned"] >= 1 and out.is_file()
    assert report["tuned_ticks"] <= report["heuristic_ticks"]
    x = tmp_path / "x.npy"
    import numpy as np
    from oracle import tflm_run

    inputs = np.random.default_rng(1).integers(-128, 128, (1, 4, 4, 4), dtype=np.int8)
    np.save(x, inputs)
    ran = cli("run", model, "--board", "mps2_an385", "--tuning", out, "--input", x, "--json", timeout=1200)
    assert ran.returncode == 0, ran.stderr
    ours = np.array(json.loads(ran.stdout)["outputs"][0], dtype=np.int8).reshape(-1)
    assert np.array_equal(ours, tflm_run(model.read_bytes(), [inputs])[0].reshape(-1))
