"""Run a small model standalone on an emulated board (bare-metal firmware in QEMU) and compare its
outputs with the TFLM oracle: the on-device half of the single-operator sweeps."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from oracle import Oracle

from microcompiler.boards import load_board
from microcompiler.compiler import compile_model
from microcompiler.inputs import random_inputs
from microcompiler.project import run_on_board

TOOLS = ("arm-none-eabi-gcc", "cmake", "ninja", "qemu-system-arm")
needs_board_tools = pytest.mark.skipif(
    not all(shutil.which(t) for t in TOOLS), reason="needs arm-none-eabi-gcc, cmake, ninja and qemu-system-arm"
)


def assert_matches_oracle_on_board(
    model_bytes: bytes,
    tmp_path: Path,
    board: str = "mps2_an386",
    inputs: list[np.ndarray] | None = None,
    float_rtol: float = 1e-5,
    patches: str | None = None,
    ram_limit: int | None = None,
):
    """Compile for the board's CPU, build, run once in QEMU on ``inputs`` (default: the seeded
    random input) and compare every output with TFLM: integers bit-exact, floats within
    ``float_rtol``; ``patches``: compile_model's patch grid (default: its automatic choice); ``ram_limit``:
    its RAM budget. Returns
    the run result."""
    tmp_path = Path(tmp_path)
    tmp_path.mkdir(parents=True, exist_ok=True)
    model = tmp_path / "model.tflite"
    model.write_bytes(model_bytes)
    info = load_board(board)
    library = compile_model(model, features=frozenset(info.cpu.features), patches=patches, ram_limit=ram_limit)
    if inputs is None:
        inputs = random_inputs(library.info.inputs)
    _, _, run = run_on_board(library, info, tmp_path / "project", input=list(inputs), log=lambda _: None)
    want = Oracle(model_bytes).run(list(inputs))
    assert len(run.outputs) == len(want)
    for k, (got, exp) in enumerate(zip(run.outputs, want)):
        exp = np.asarray(exp).reshape(got.shape)
        if got.dtype == np.float32:
            np.testing.assert_allclose(got, exp, rtol=float_rtol, atol=1e-6, err_msg=f"output {k} on {board}")
        else:
            assert np.array_equal(got, exp), f"output {k} on {board}: {got.ravel()[:8]} vs TFLM {exp.ravel()[:8]}"
    return run
