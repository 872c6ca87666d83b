"""Host-driven Zephyr firmware answers at every start: `microcompiler flash` of a host-driven project,
50 times in a row on each emulated board, with no failure (the start-up race of issue 23: a byte of
the host's HELLO held by the UART from before the firmware enabled its receive interrupt; fixed in
crt/platform/zephyr/platform.c). Long: about 2 s a run after the build. Run with
`pytest -m long tests/test_zephyr_start.py`, ideally with the machine loaded (the suite beside it).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from microcompiler.boards import board_names, load_board
from microcompiler.project import create_project
from microcompiler.targets import zephyr
from microcompiler.zephyr import workspace

ROOT = Path(__file__).resolve().parents[1]
RUNS = int(os.environ.get("MICROCOMPILER_FLASH_RUNS", "50"))
EMULATED_ZEPHYR_BOARDS = [name for name in board_names() if load_board(name).emulated and load_board(name).zephyr_board]


@pytest.mark.long
@pytest.mark.parametrize("board_name", EMULATED_ZEPHYR_BOARDS)
def test_host_driven_flash_answers_every_time(board_name, shared_models, tmp_path):
    from microcompiler.project import build

    workspace.require_west()
    zephyr.zephyr_base()
    project = create_project(
        shared_models / "tflm" / "hello_world_int8.tflite", "zephyr", board_name, tmp_path / "p", mode="host-driven"
    )
    build(project.dir, log=lambda _: None)
    failures = []
    for run in range(RUNS):
        proc = subprocess.run(
            [sys.executable, "-m", "microcompiler.cli", "flash", str(project.dir), "--json"],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        if proc.returncode != 0 or '"outputs"' not in proc.stdout:
            failures.append(f"run {run + 1}: {proc.stderr.strip()[-300:]}")
    print(f"{board_name}: {RUNS - len(failures)} of {RUNS} flash runs answered")
    assert not failures, f"{len(failures)} of {RUNS} failed:\n" + "\n".join(failures)
