"""Builds go through ccache when it is installed and can write its cache, as Zephyr's do: a second
bare-metal project for the same board, or a second host RPC server, reuses the runtime's objects, and
its program still gives the host's outputs. A cache that cannot be created leaves ccache out instead
of failing every compile."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from microcompiler import open_model
from microcompiler.ccache import compiler_launcher
from microcompiler.compiler import compile_model
from microcompiler.host import HostProgram
from microcompiler.inputs import random_inputs
from microcompiler.project import build, create_project, flash

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "models"
BOARD = "mps2_an386"

pytestmark = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("ccache", "arm-none-eabi-gcc", "cmake", "ninja", "qemu-system-arm")),
    reason="needs ccache, arm-none-eabi-gcc, cmake, ninja and qemu-system-arm",
)


def _ccache_counters(cache: Path) -> dict[str, int]:
    out = subprocess.run(
        ["ccache", "--print-stats"],
        env={**os.environ, "CCACHE_DIR": str(cache)},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    counters = {}
    for line in out.splitlines():
        name, _, value = line.partition("\t")
        if value.strip().isdigit():
            counters[name] = int(value)
    return counters


def _project(tmp_path: Path, model: str):
    return create_project(SHARED / model, "baremetal", BOARD, tmp_path / f"{Path(model).stem}_project")


def test_a_second_project_reuses_the_runtime_objects_and_still_gives_the_host_outputs(tmp_path, monkeypatch):
    cache = tmp_path / "ccache"
    monkeypatch.setenv("CCACHE_DIR", str(cache))
    monkeypatch.delenv("CCACHE_DISABLE", raising=False)
    first = _project(tmp_path, "tflm/hello_world_int8.tflite")
    build(first.dir, log=lambda line: None)
    misses_after_first = _ccache_counters(cache)["direct_cache_miss"]
    assert misses_after_first > 0 and _ccache_counters(cache)["direct_cache_hit"] == 0

    second = _project(tmp_path, "mlperf_tiny/ad01_int8.tflite")
    build(second.dir, log=lambda line: None)
    counters = _ccache_counters(cache)
    runtime_sources = len(list((second.dir / "crt" / "src").glob("*.c")))
    assert counters["direct_cache_hit"] >= runtime_sources  # the crt's objects came from the cache
    assert counters["direct_cache_miss"] - misses_after_first < runtime_sources  # the model's did not

    result = flash(second.dir, timeout=120, log=lambda line: None)
    library = compile_model(SHARED / "mlperf_tiny/ad01_int8.tflite")
    inputs = random_inputs(library.info.inputs)  # the seeded input the firmware compiles in
    expected = HostProgram(library, tmp_path / "host").run([inputs])[0].outputs
    for got, want in zip(result.outputs, expected, strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_cache_that_cannot_be_created_leaves_ccache_out(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder\n")
    monkeypatch.setenv("CCACHE_DIR", str(blocker / "ccache"))
    assert compiler_launcher() == []
    project = _project(tmp_path, "tflm/hello_world_int8.tflite")
    built = build(project.dir, log=lambda line: None)  # would fail on every compile through ccache
    assert built.elf.is_file()

    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "new" / "ccache"))
    assert compiler_launcher() == [f"-DCMAKE_C_COMPILER_LAUNCHER={shutil.which('ccache')}"]


def test_host_rpc_servers_of_two_models_share_the_runtime_through_ccache(tmp_path, monkeypatch):
    cache = tmp_path / "ccache"
    monkeypatch.setenv("CCACHE_DIR", str(cache))
    monkeypatch.delenv("CCACHE_DISABLE", raising=False)
    with open_model(SHARED / "tflm/hello_world_int8.tflite", board="host", project_dir=tmp_path / "first"):
        pass
    runtime_objects = len(list((tmp_path / "first" / "crt_objects").glob("*.o")))
    assert runtime_objects >= 5 and _ccache_counters(cache)["direct_cache_hit"] == 0
    library = compile_model(SHARED / "mlperf_tiny/ad01_int8.tflite")
    inputs = random_inputs(library.info.inputs, seed=3)
    with open_model(library, board="host", project_dir=tmp_path / "second") as session:
        assert _ccache_counters(cache)["direct_cache_hit"] == runtime_objects
        ex = session.executor()  # the server built from cached objects answers like the host program
        for k, x in enumerate(inputs):
            ex.set_input(k, x)
        ex.run()
        got = [ex.get_output(k) for k in range(len(library.info.outputs))]
    want = HostProgram(library, tmp_path / "host").run([inputs])[0].outputs
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
