"""`compile --board B` (kernels for the board's CPU) and `compile --kernels reference`."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from oracle import Oracle

from microcompiler.compiler import compile_model
from microcompiler.host import HostProgram
from microcompiler.inputs import random_inputs

ROOT = Path(__file__).resolve().parents[1]
SINGLE_VARIANT = {
    "gemmlowp-fixed-point",
    "exp-table",
    "lut",
    "memcpy",
}  # SOFTMAX, the int8 tables and MC_PATCH_COPY (docs/memory.md) have one implementation


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", *map(str, args)], capture_output=True, text=True, cwd=ROOT
    )


def variants(out_dir: Path) -> list[str]:
    meta = json.loads((out_dir / "metadata.json").read_text())
    return [op["kernel"]["variant"] for op in meta["operators"]]


def test_compile_for_a_board_uses_its_fast_kernels(tmp_path, shared_models):
    model = shared_models / "mlperf_tiny/kws_ref_model.tflite"
    proc = cli("compile", model, "--board", "mps2_an386", "-o", tmp_path / "m4")
    assert proc.returncode == 0, proc.stderr
    assert "for mps2_an386" in proc.stdout
    meta = json.loads((tmp_path / "m4/metadata.json").read_text())
    isas = {op["kernel"].get("isa") for op in meta["operators"]}
    assert "dsp" in isas, "the Cortex-M4's DSP kernels"
    proc = cli("compile", model, "--board", "mps2_an385", "-o", tmp_path / "m3")
    meta = json.loads((tmp_path / "m3/metadata.json").read_text())
    assert "dsp" not in {op["kernel"].get("isa") for op in meta["operators"]}, "the Cortex-M3 has no DSP extension"


def test_reference_kernels_are_bit_exact_and_differ_from_the_fast_ones(tmp_path, shared_models):
    model = shared_models / "mlperf_tiny/kws_ref_model.tflite"
    assert cli("compile", model, "--board", "mps2_an386", "-o", tmp_path / "fast").returncode == 0
    proc = cli("compile", model, "--board", "mps2_an386", "--kernels", "reference", "-o", tmp_path / "ref")
    assert proc.returncode == 0, proc.stderr
    assert "reference kernels" in proc.stdout
    assert set(variants(tmp_path / "ref")) <= {"reference"} | SINGLE_VARIANT
    assert set(variants(tmp_path / "fast")) - {"reference"} - SINGLE_VARIANT, "fast kernels were chosen"
    fast_c = (tmp_path / "fast/src/kws_ref_model_ops.c").read_text()
    ref_c = (tmp_path / "ref/src/kws_ref_model_ops.c").read_text()
    assert "mc_dot_p4" in fast_c and "mc_dot_p4" not in ref_c


@pytest.mark.parametrize("model", ["mlperf_tiny/kws_ref_model", "mlperf_tiny/pretrainedResnet_quant"])
def test_reference_kernels_match_tflm(tmp_path, shared_models, model):
    path = shared_models / f"{model}.tflite"
    library = compile_model(path, kernels="reference")
    assert {op["kernel"]["variant"] for op in library.metadata["operators"]} <= {"reference"} | SINGLE_VARIANT
    inputs = [random_inputs(library.info.inputs, seed=s) for s in range(3)]
    ours = HostProgram(library, tmp_path / "build").run(inputs)
    oracle = Oracle(path.read_bytes())
    for got, x in zip(ours, inputs):
        assert np.array_equal(got.outputs[0], oracle.run(x)[0].reshape(got.outputs[0].shape))


def test_unknown_board_and_kernel_choice_are_one_line_errors(tmp_path, shared_models):
    model = shared_models / "tflm/hello_world_int8.tflite"
    proc = cli("compile", model, "--board", "nope", "-o", tmp_path / "x")
    assert proc.returncode == 2 and "unknown board 'nope'" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    proc = cli("compile", model, "--kernels", "turbo", "-o", tmp_path / "y")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
