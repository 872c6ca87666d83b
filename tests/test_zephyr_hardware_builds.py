"""The boards people own, built from the Zephyr workspace (issue 33, item 3): KWS (MLPerf Tiny's
keyword spotting, ../shared/models/mlperf_tiny) for six hardware boards named as Zephyr names them,
standalone and host-driven, and the MLPerf Tiny DUT (mlperf-zephyr) for nucleo_l4r5zi, MLPerf Tiny's
reference board. They cannot run here; each build is checked for what would make it wrong on the
board (tests/firmware_checks.py): it fits the board's memory, it holds the DSP kernels (SMLAD) on the
M4, M7 and M33, its FPU build attributes match the board's core, and the sizes microcompiler reports
are the ELF's. Long (a Zephyr build each, 1-5 min): `pytest -m long tests/test_zephyr_hardware_builds.py`;
the default suite builds KWS for nucleo_l4r5zi standalone once (tests/test_zephyr_build.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from firmware_checks import check_firmware, created_weights

from microcompiler.boards import load_board_file

ROOT = Path(__file__).resolve().parents[1]
# Zephyr's board targets (hardware model v2), as a user types them after --board.
BOARDS = [
    "nucleo_l4r5zi",  # STM32L4R5, Cortex-M4F
    "nucleo_f746zg",  # STM32F746, Cortex-M7 (single-precision FPU)
    "nucleo_h743zi",  # STM32H743, Cortex-M7 (double-precision FPU)
    "b_u585i_iot02a",  # STM32U585, Cortex-M33 with FPU and DSP
    "nrf52840dk/nrf52840",  # nRF52840, Cortex-M4F
    "nrf5340dk/nrf5340/cpuapp",  # nRF5340 application core, Cortex-M33 with FPU and DSP
]
pytestmark = [
    pytest.mark.long,
    pytest.mark.skipif(
        not (shutil.which("west") and os.environ.get("ZEPHYR_BASE")),
        reason="needs west and the Zephyr workspace of ../shared/zephyr (tests/conftest.py); see docs/zephyr.md",
    ),
]


def mc(*args, timeout: float = 3600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", *map(str, args)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def build_and_check(model: Path, board: str, project: Path, *options: str) -> None:
    create = mc("create-project", model, "--board", board, "-o", project, *options)
    assert create.returncode == 0, create.stderr
    build = mc("build", project)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr
    check_firmware(
        project / "build" / "zephyr" / "zephyr.elf",
        load_board_file(project / "board.toml"),  # the board the project was made for
        model.stem,
        build.stdout,
        created_weights(create.stdout),
    )


@pytest.fixture(scope="module")
def kws(shared_models) -> Path:
    return shared_models / "mlperf_tiny" / "kws_ref_model.tflite"


@pytest.mark.parametrize("mode", ["standalone", "host-driven"])
@pytest.mark.parametrize("board", BOARDS)
def test_kws_builds_for_the_board_with_its_kernels_and_fpu(board, mode, kws, tmp_path):
    build_and_check(kws, board, tmp_path / "p", "--template", "zephyr", "--mode", mode)


def test_the_mlperf_dut_builds_for_the_reference_board(kws, tmp_path):
    build_and_check(kws, "nucleo_l4r5zi", tmp_path / "p", "--template", "mlperf-zephyr", "--benchmark", "kws01")
