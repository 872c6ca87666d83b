"""A compiled model as a Zephyr module (compile --zephyr-module, microcompiler/targets/zephyr_module.py):
the module's files, and a small Zephyr application of its own (tests/data/zephyr_module_app, not a
generated project) built against it with west and run in QEMU, its outputs equal to TFLite Micro's.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from oracle import Oracle

from microcompiler.ccache import ccache_environment

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "tests" / "data" / "zephyr_module_app"
APP_LINE = re.compile(r"app: (-?\d+) -> (-?\d+) in (\d+) ticks")


def _compile_module(model: Path, out: Path) -> Path:
    proc = subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", "compile", str(model), "-o", str(out), "--zephyr-module"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def hello_model(shared_models) -> Path:
    return shared_models / "tflm" / "hello_world_int8.tflite"


def test_the_module_names_its_sources_and_options(hello_model, tmp_path):
    module = _compile_module(hello_model, tmp_path / "mod")
    yml = (module / "zephyr" / "module.yml").read_text()
    assert "name: microcompiler_hello_world_int8" in yml and "cmake: zephyr" in yml and "kconfig: zephyr/Kconfig" in yml
    cmake = (module / "zephyr" / "CMakeLists.txt").read_text()
    listed = re.findall(r"\$\{mc_module_dir\}/(\S+\.c)", cmake)
    assert "src/hello_world_int8_ops.c" in listed and "crt/platform/zephyr/platform.c" in listed
    assert "crt/src/rpc_server.c" in listed and "crt/src/mlperf_dut.c" not in listed  # the DUT needs its own main
    for source in listed:
        assert (module / source).is_file(), source
    kconfig = (module / "zephyr" / "Kconfig").read_text()
    for symbol in ("MICROCOMPILER_HELLO_WORLD_INT8", "MICROCOMPILER_RUNTIME", "MICROCOMPILER_PLATFORM"):
        assert f"config {symbol}\n" in kconfig
    # compiled again into the same directory: the module's files are the compiler's own, replaced
    _compile_module(hello_model, module)
    assert (module / "zephyr" / "module.yml").read_text() == yml


def _missing() -> str:
    return ", ".join(
        what
        for what, ok in (
            ("west (pip install west)", shutil.which("west")),
            ("ZEPHYR_BASE (a Zephyr workspace)", os.environ.get("ZEPHYR_BASE")),
            ("qemu-system-arm", shutil.which("qemu-system-arm")),
        )
        if not ok
    )


@pytest.mark.long  # a Zephyr build (minutes on a cold cache); the module's files are checked in the default suite
@pytest.mark.skipif(bool(_missing()), reason=f"needs {_missing()}; see docs/zephyr.md")
def test_an_application_of_its_own_runs_the_module_model_in_qemu(hello_model, tmp_path):
    from microcompiler.transport.qemu import QemuTransport

    module = _compile_module(hello_model, tmp_path / "mod")
    build = tmp_path / "build"
    proc = subprocess.run(
        ["west", "build", "-b", "mps2/an385", "-d", str(build), str(APP), "--", f"-DZEPHYR_EXTRA_MODULES={module}"],
        capture_output=True,
        text=True,
        timeout=3600,
        env=ccache_environment(tmp_path),
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    with QemuTransport("mps2-an385", build / "zephyr" / "zephyr.elf") as qemu:
        text = qemu.read_until(re.compile(rb"app: done at \d+ Hz"), 120).decode()
    runs = [tuple(map(int, m.groups())) for m in APP_LINE.finditer(text)]
    assert [x for x, _, _ in runs] == list(range(-128, 128, 17))
    oracle = Oracle(hello_model.read_bytes())
    for x, y, ticks in runs:
        assert y == int(oracle.run([np.array([[x]], np.int8)])[0].reshape(-1)[0]), (x, y)
        assert ticks > 0
    assert "app: done at 25000000 Hz" in text
