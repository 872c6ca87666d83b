"""Compile a model with microcompiler, run it on the host, and compare with the TFLM oracle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
from oracle import Oracle

from microcompiler.compiler import compile_model
from microcompiler.host import HostProgram
from microcompiler.inputs import random_inputs

FLOAT_RTOL = 1e-5
ROOT = Path(__file__).resolve().parents[1]


def cli(*args, timeout=600) -> subprocess.CompletedProcess:
    """``microcompiler ARGS`` with this interpreter, from the repository root, output captured."""
    return subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )


def compile_bytes(
    model_bytes: bytes,
    tmp_path: Path,
    name: str = "model",
    features=frozenset(),
    kernels: str = "fast",
    patches: str | None = None,
    ram_limit: int | None = None,
    tuning: dict | None = None,
):
    Path(tmp_path).mkdir(parents=True, exist_ok=True)
    path = Path(tmp_path) / f"{name}.tflite"
    path.write_bytes(model_bytes)
    return compile_model(
        path, features=frozenset(features), kernels=kernels, patches=patches, ram_limit=ram_limit, tuning=tuning
    )


def assert_matches_oracle(
    model_bytes: bytes,
    tmp_path: Path,
    n_inputs: int = 5,
    sanitize: bool = False,
    float_atol: float = 1e-6,
    inputs: list[list[np.ndarray]] | None = None,
    executor: str = "aot",
    features=frozenset(),
    kernels: str = "fast",
    patches: str | None = None,
    ram_limit: int | None = None,
    tuning: dict | None = None,
):
    """Run n_inputs seeded random inputs through microcompiler (host build) and TFLM.

    int8/int16 outputs must be bit-exact; float32 within FLOAT_RTOL relative (plus float_atol absolute
    for values near zero). Returns the microcompiler library for further checks. ``features`` selects
    the target's kernel variants (e.g. {"dsp"}: the SIMD kernels, with their portable C emulation of
    the DSP instructions on the host); ``kernels="reference"`` every layer's reference loop nest;
    ``patches``: the patch grid knob ("off": layer by layer, docs/memory.md); ``ram_limit``: the RAM budget
    the plan must fit (passes/ram_budget.py); ``tuning``: per-kind knobs (``{"CONV_2D": {"weights": "s16"}}``).
    """
    library = compile_bytes(
        model_bytes, tmp_path, features=features, kernels=kernels, patches=patches, ram_limit=ram_limit, tuning=tuning
    )
    if inputs is None:
        inputs = [random_inputs(library.info.inputs, seed=s) for s in range(n_inputs)]
    program = HostProgram(library, Path(tmp_path) / "build", sanitize=sanitize, executor=executor)
    ours = program.run(inputs)
    oracle = Oracle(model_bytes)
    for k, input_set in enumerate(inputs):
        want = oracle.run(input_set)
        for j, (got, exp) in enumerate(zip(ours[k].outputs, want)):
            exp = exp.reshape(got.shape)
            if got.dtype == np.float32:
                np.testing.assert_allclose(
                    got, exp, rtol=FLOAT_RTOL, atol=float_atol, err_msg=f"input set {k}, output {j}"
                )
            else:
                diff = int(np.count_nonzero(got != exp))
                assert diff == 0, (
                    f"input set {k}, output {j}: {diff} of {got.size} elements differ; "
                    f"first at {np.argwhere(got != exp)[0].tolist()}: ours "
                    f"{got[tuple(np.argwhere(got != exp)[0])]}, TFLM "
                    f"{exp[tuple(np.argwhere(got != exp)[0])]}"
                )
    return library
