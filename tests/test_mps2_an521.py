"""The Cortex-M33 board mps2_an521 (SSE-200 in QEMU 7.2): KWS standalone and host-driven against
TFLite Micro bit for bit, with the DSP kernels in the firmware, and ``bench`` timing it.

The board file gives QEMU's CPU0 (the core that boots) the FPU and DSP extension it lacks by
default (``[qemu] args``), runs Secure on the Secure aliases, and times with the SSE-200's 20 MHz
CMSDK timer; the calibration loop of test_baremetal.py checks that rate.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
from oracle import Oracle

from microcompiler import api
from microcompiler.api import open_model
from microcompiler.boards import load_board
from microcompiler.compiler import compile_model
from microcompiler.inputs import random_inputs
from microcompiler.project import run_on_board

BOARD = "mps2_an521"
TOOLS = ("arm-none-eabi-gcc", "arm-none-eabi-objdump", "cmake", "ninja", "qemu-system-arm")
pytestmark = pytest.mark.skipif(
    not all(shutil.which(t) for t in TOOLS), reason="needs arm-none-eabi-gcc/objdump, cmake, ninja, qemu-system-arm"
)


def _quiet(_: str) -> None:
    pass


def _assert_bit_exact(got: list[np.ndarray], want: list[np.ndarray], what: str) -> None:
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w).reshape(g.shape)
        assert g.dtype == w.dtype and np.array_equal(g, w), (
            f"{what}: output {k} {g.ravel()[:8]} vs TFLM {w.ravel()[:8]}"
        )


@pytest.fixture(scope="module")
def kws(shared_models):
    return shared_models / "mlperf_tiny/kws_ref_model.tflite"


def test_kws_standalone_and_host_driven_equal_tflm(tmp_path, kws):
    board = load_board(BOARD)
    assert "dsp" in board.cpu.features and board.cpu.has_fpu
    library = compile_model(kws, features=board.cpu.features)
    assert {o["kernel"].get("isa") for o in library.metadata["operators"]} - {None} == {"dsp"}
    inputs = random_inputs(library.info.inputs, seed=5)
    want = Oracle(kws.read_bytes()).run(inputs)

    _, built, run = run_on_board(library, board, tmp_path / "standalone", input=inputs, log=_quiet)
    _assert_bit_exact(run.outputs, want, "standalone")
    assert run.hz == 20_000_000 and run.ticks > 0 and 0 < run.stack_bytes < 8 * 1024
    # The DSP extension's dual 16-bit multiply-accumulate, in the model's kernels.
    disassembly = subprocess.run(
        ["arm-none-eabi-objdump", "-d", str(built.elf)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    functions = re.split(r"\n(?=[0-9a-f]{8} <)", disassembly)
    with_smlad = {f.split("<", 1)[1].split(">", 1)[0] for f in functions if re.search(r"\tsmlad\s", f)}
    assert any(name.startswith("kws_ref_model_") for name in with_smlad), sorted(with_smlad)

    with open_model(library, board, project_dir=tmp_path / "host-driven") as session, session.executor() as ex:
        _assert_bit_exact(list(ex(*inputs)), want, "host-driven")


def test_bench_times_kws_per_operator(kws):
    report = api.bench(kws, BOARD, number=2, repeat=1)
    inference = report["inference"]["time"]
    assert report["timer_hz"] == 20_000_000 and inference["instructions"] > 0
    assert inference["basis"] == "QEMU -icount instructions at 20 MHz, one per cycle"
    operators = report["operators"]
    assert len(operators) == len(compile_model(kws).info.operators) == 12
    assert all(op["time"]["instructions"] > 0 for op in operators)
    # the operators, timed one by one, add up to the whole inference (the calls around them aside)
    total = sum(op["time"]["instructions"] for op in operators)
    assert 0.98 * inference["instructions"] < total <= inference["instructions"]
