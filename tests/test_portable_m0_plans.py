"""Cores known to lack the 32 x 32 -> 64 multiply (Cortex-M0/M0+/M1/M23: the feature
"no_long_multiply" that the boards add from the core, ops/features.py) get the portable kernels'
int32 path alone: the plan names the kernel that runs there, costs it and reserves no scratch for
the long-multiply path (DEPTHWISE_CONV_2D "rows" instead of "packed-rows" and its ring of packed rows;
CONV_2D "pointwise" and "packed", two-row FULLY_CONNECTED with "lane" 0 and no packed column). Bit for
bit with TFLM, built as the M0 builds it (MC_LONG_MULTIPLY=0) and as any other core would (the C names
no long path, so it stays correct there); a compile for no known core keeps both paths and the scratch.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
from harness import assert_matches_oracle, compile_bytes
from oracle import Oracle
from test_fully_connected import fc_model
from test_op_conv_2d import conv_model
from test_portable_kernels import PACKED_CASES, POINTWISE_CASES

from microcompiler.analysis.analyze import analyze_library
from microcompiler.boards import board_toml, load_board, load_board_file
from microcompiler.host import HostProgram
from microcompiler.inputs import random_inputs
from microcompiler.ops.conv_common import geometry
from microcompiler.ops.fast import conv_2d_packed as packed
from microcompiler.ops.fast.depthwise_conv_2d_packed_rows import ring
from microcompiler.ops.features import NO_LONG_MULTIPLY, core_features

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import lookalikes  # noqa: E402

M0 = core_features("cortex-m0", ())
M3 = load_board("mps2_an385").cpu.features


def kernel_of(lib, kind):
    return next(op["kernel"] for op in lib.metadata["operators"] if op["kind"] == kind)


def _bit_exact_on_both_paths(model: bytes, tmp_path: Path, n_inputs: int = 2):
    """The M0 plan against TFLM: built with MC_LONG_MULTIPLY 1 (the host's default: a core that has
    it runs the same int32 C) and 0 (what the Cortex-M0 compiles). Returns the library."""
    lib = assert_matches_oracle(model, tmp_path / "m0", n_inputs=n_inputs, features=M0)
    assert "MC_LONG_MULTIPLY" not in lib.files["src/model_ops.c"], "an M0 plan generates no long-multiply path"
    inputs = [random_inputs(lib.info.inputs, seed=s) for s in range(n_inputs)]
    oracle = Oracle(model)
    for got, input_set in zip(HostProgram(lib, tmp_path / "int32", opt="-DMC_LONG_MULTIPLY=0").run(inputs), inputs):
        for ours, want in zip(got.outputs, oracle.run(input_set)):
            np.testing.assert_array_equal(ours, np.asarray(want).reshape(ours.shape))
    return lib


def test_the_cores_without_the_long_multiply_say_so(tmp_path):
    assert all(NO_LONG_MULTIPLY in core_features(c, ()) for c in ("cortex-m0", "cortex-m0plus", "cortex-m23"))
    assert not any(NO_LONG_MULTIPLY in core_features(c, ("dsp",)) for c in ("cortex-m3", "cortex-m4", "cortex-m33"))
    assert NO_LONG_MULTIPLY not in M3  # the board file's Cortex-M3
    # a board file of a Cortex-M0+ gets it from its core, and keeps it through board_toml
    text = Path(load_board("mps2_an385").source).read_text().replace('"cortex-m3"', '"cortex-m0plus"')
    (tmp_path / "m0plus.toml").write_text(text)
    board = load_board_file(tmp_path / "m0plus.toml")
    assert board.cpu.features == {NO_LONG_MULTIPLY}
    (tmp_path / "again.toml").write_text(board_toml(board))
    assert load_board_file(tmp_path / "again.toml").cpu.features == board.cpu.features


def test_micro_speech_on_the_m0_plans_the_rows_kernel_without_the_ring(tmp_path):
    """The look-alike's 10x8 depth-multiplier-8 layer: packed-rows on the M3 (and for no known core),
    the rows kernel on the M0, which runs it; the model's scratch smaller by the ring, analyze costs
    the rows kernel; bit-exact on both builds."""
    model = lookalikes.micro_speech()
    m3 = compile_bytes(model, tmp_path / "m3", features=M3)
    anycore = compile_bytes(model, tmp_path / "any")
    lib = _bit_exact_on_both_paths(model, tmp_path)
    assert kernel_of(m3, "DEPTHWISE_CONV_2D")["variant"] == kernel_of(anycore, "DEPTHWISE_CONV_2D")["variant"]
    assert kernel_of(m3, "DEPTHWISE_CONV_2D")["variant"] == "packed-rows"
    kernel = kernel_of(lib, "DEPTHWISE_CONV_2D")
    assert kernel["variant"] == "rows" and kernel["scratch_bytes"] == 0
    op = next(op for op in lib.graph.operators if op.kind == "DEPTHWISE_CONV_2D")
    rows, words = ring(geometry(op, lib.graph))
    # the model's scratch is its largest layer's: the ring on the M3, the SOFTMAX's 16 B on the M0
    others = max(op["kernel"].get("scratch_bytes", 0) for op in lib.metadata["operators"])
    assert m3.info.scratch_bytes == 8 * rows * words == 3520 and lib.info.scratch_bytes == others == 16
    assert "packed-rows" not in lib.files["src/model_ops.c"] and m3.info.arena_bytes == lib.info.arena_bytes
    # analyze (a Cortex-M0 board: the M3's board file with the M0's core) costs the rows kernel
    board = load_board("mps2_an385")
    m0_board = dataclasses.replace(board, cpu=dataclasses.replace(board.cpu, core="cortex-m0", features=M0))
    layers = {layer["kind"]: layer for layer in analyze_library(lib, m0_board)["layers"]}
    assert layers["DEPTHWISE_CONV_2D"]["cost_model"].startswith("m3:DEPTHWISE_CONV_2D|int8|rows|")
    assert analyze_library(lib, m0_board)["totals"]["scratch_bytes"] == lib.info.scratch_bytes


@pytest.mark.parametrize("case", ["odd_pixels", "pixels7"])
def test_pointwise_on_the_m0_keeps_no_packed_scratch(tmp_path, case):
    model = conv_model(**POINTWISE_CASES[case])
    m3 = kernel_of(compile_bytes(model, tmp_path / "m3", features=M3), "CONV_2D")
    kernel = kernel_of(_bit_exact_on_both_paths(model, tmp_path), "CONV_2D")
    assert m3["variant"] == kernel["variant"] == "pointwise" and m3["lane"] > 0 and m3["scratch_bytes"] > 0
    assert kernel["lane"] == 0 and kernel["scratch_bytes"] == 0


@pytest.mark.parametrize("runs", [0, 2])
@pytest.mark.parametrize("case", ["3x3_same_border_odd", "3x3_c3_k27"])
def test_packed_on_the_m0_keeps_only_the_patches(tmp_path, monkeypatch, case, runs):
    """The two gathered patches are the whole scratch: no packed column (K words; 2K with quads),
    no runs helpers, whatever the M3 would take (runs 2: with quads)."""
    monkeypatch.setattr(packed, "RUNS_MIN_LAYERS", 1 if runs else 2)
    monkeypatch.setattr(packed, "QUADS_FREE_BYTES", 1 << 20 if runs == 2 else 0)
    model = conv_model(**PACKED_CASES[case])
    m3 = kernel_of(compile_bytes(model, tmp_path / "m3", features=M3), "CONV_2D")
    lib = _bit_exact_on_both_paths(model, tmp_path)
    kernel = kernel_of(lib, "CONV_2D")
    k = lib.graph.tensors[lib.graph.operators[0].inputs[1]].data[0].size  # taps
    assert m3["variant"] == kernel["variant"] == "packed" and m3.get("quads", 0) == (runs == 2)
    assert (kernel["lane"], kernel["runs"], kernel.get("quads", 0), kernel["pixels"]) == (0, 0, 0, 2)
    assert kernel["scratch_bytes"] == 4 * -(-2 * k // 4) < m3["scratch_bytes"]
    assert "mc_pack" not in lib.files["src/model_ops.c"]


@pytest.mark.parametrize("batches", [2, 3])
def test_two_row_fully_connected_on_the_m0_keeps_no_packed_rows(tmp_path, batches):
    model = fc_model("int8", batches, 160, 8, "RELU", batches == 3, input_zp=7)
    m3 = kernel_of(compile_bytes(model, tmp_path / "m3", features=M3), "FULLY_CONNECTED")
    kernel = kernel_of(_bit_exact_on_both_paths(model, tmp_path), "FULLY_CONNECTED")
    assert m3["extract"] == kernel["extract"] == "interleaved" and m3["lane"] > 0 and m3["scratch_bytes"] == 4 * 160
    assert "lane" not in kernel and kernel["scratch_bytes"] == 0
