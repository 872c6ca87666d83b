"""The "pairs" kernels of cores without the DSP extension (kernel_portable.h: two output rows per
32 x 32 -> 64 multiply-accumulate on the int8 weights 4 rows per word) against the TFLM oracle, bit
for bit, on both of their paths: with the long multiply (the host, the Cortex-M3) and without it
(MC_LONG_MULTIPLY=0, what the Cortex-M0/M0+ compile: int32 multiply-accumulates on the same words).
FULLY_CONNECTED (mc_dot_r4_s8p) and the int8 LSTM's gate matmuls (pairs-rows4: mc_pairs_pass on the
input, mc_pairs_u_pass / mc_pairs_u8_pass on the hidden state offset by 128 in place, the cell update
after each block of units)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from board_oracle import needs_board_tools
from harness import assert_matches_oracle, compile_bytes
from lstm_models import lstm_int8
from oracle import Oracle
from test_fully_connected import fc_model
from test_portable_kernels import _without_long_multiply
from test_state import assert_steps_match, check_sequence, sequence
from test_state_board import _library

from microcompiler.ops.fast.packing import pack_pairs_rows4, pack_pairs_u_rows8
from microcompiler.ops.lstm import sigmoid_sym_table
from microcompiler.ops.lut16 import SIGMOID_TABLE_UINT16
from microcompiler.project import run_on_board


def kernel_of(lib, kind=None):
    ops = lib.metadata["operators"]
    return next(op["kernel"] for op in ops if kind is None or op["kind"] == kind)


def test_pairs_words_hold_the_weights():
    """Every weight once, in its byte: signed (w0 ^ 0x80, w3, w2 ^ 0x80, w1) and unsigned (each ^ 0x80)."""
    w = np.arange(-64, 64, dtype=np.int8).reshape(8, 16)
    words, rest = pack_pairs_rows4(w[:7])
    b = words.view(np.uint8).reshape(1, 16, 4)  # one block of 4 rows, 16 inputs, 4 bytes
    assert np.array_equal(b[0, :, 0] ^ 0x80, w[0].view(np.uint8)) and np.array_equal(b[0, :, 3], w[1].view(np.uint8))
    assert np.array_equal(b[0, :, 2] ^ 0x80, w[2].view(np.uint8)) and np.array_equal(b[0, :, 1], w[3].view(np.uint8))
    assert np.array_equal(rest, w[4:7])
    u8 = pack_pairs_u_rows8(w).view(np.uint8).reshape(16, 2, 4) ^ 0x80  # [input][rows 0..3, 4..7][4]
    assert np.array_equal(u8.reshape(16, 8).T, w.view(np.uint8))


@pytest.mark.parametrize(
    "units,depth,batches",
    [
        pytest.param(8, 128, 2, id="8x128"),
        pytest.param(9, 131, 1, id="rows-tail"),
        pytest.param(10, 203, 2, id="depth-mod-4", marks=pytest.mark.long),
        pytest.param(8, 700, 1, id="three-passes"),
        pytest.param(13, 257, 1, id="pass-plus-one", marks=pytest.mark.long),
    ],
)
def test_fully_connected_pairs_both_paths(tmp_path, units, depth, batches):
    """The default portable FULLY_CONNECTED (at least 1,024 weights): 256 inputs per pass (the low
    lanes' 24 bits), depth % 4 inputs first, rows % 4 row by row; then MC_LONG_MULTIPLY=0."""
    model = fc_model("int8", batches, depth, units, "RELU", units % 2 == 1, input_zp=-128)
    lib = assert_matches_oracle(model, tmp_path / "long", n_inputs=3, sanitize=depth == 131)
    if batches == 1:
        assert kernel_of(lib)["extract"] == "pairs" and kernel_of(lib)["isa"] == "c"
        assert "mc_dot_r4_s8p(" in lib.files["src/model_ops.c"]
    else:  # two batch rows per SMLAL instead (test_fully_connected_rows2_both_paths)
        assert kernel_of(lib)["extract"] == "interleaved" and kernel_of(lib)["lane"] > 0
    _without_long_multiply(model, tmp_path / "int32", "rows4")


@pytest.mark.parametrize(
    "units,depth,batches,per_channel",
    [
        pytest.param(32, 32, 16, True, id="transformer"),
        pytest.param(8, 160, 4, False, id="per-tensor"),
        pytest.param(6, 203, 3, True, id="odd-batches-rows-tail"),
        pytest.param(16, 64, 2, False, id="two"),
    ],
)
def test_fully_connected_rows2_both_paths(tmp_path, units, depth, batches, per_channel):
    """Two batch rows or more: both rows' inputs packed per input word (x0 + x1 * 2^L, the scratch),
    mc_dot_x2r4_s8i, the lanes requantized into both rows; an odd last row packed twice, rows % 4 row
    by row for both; then MC_LONG_MULTIPLY=0 (the interleaved loop)."""
    model = fc_model("int8", batches, depth, units, "RELU", per_channel, input_zp=7)
    lib = assert_matches_oracle(model, tmp_path / "long", n_inputs=3, sanitize=batches == 3)
    kernel = kernel_of(lib)
    assert kernel["extract"] == "interleaved" and kernel["lane"] > 0 and kernel["scratch_bytes"] == 4 * depth
    # per-row requantization, rows in blocks of 4: requantized by the shared mc_fc_rows2_store
    helper = per_channel and units % 4 == 0
    assert "mc_dot_x2r4_s8i(" in lib.files["src/model_ops.c"]
    assert ("mc_fc_rows2_store(" in lib.files["src/model_ops.c"]) == helper
    _without_long_multiply(model, tmp_path / "int32", "rows4")


def test_fully_connected_pairs_where_it_pays(tmp_path):
    """One block of 4 rows (the input's sum not shared) or fewer than 32 inputs: mc_dot_r4_s8i."""
    for units, depth in ((4, 1000), (40, 31)):
        lib = compile_bytes(fc_model("int8", 1, depth, units, "NONE", False), tmp_path / f"{units}_{depth}")
        assert kernel_of(lib)["extract"] == "interleaved"


def test_fully_connected_pairs_extreme_weights(tmp_path):
    """Every weight -128 or 127 and inputs at both ends: the widest lanes a pass can hold."""
    rng = np.random.default_rng(3)
    model = fc_model("int8", 1, 256, 8, "NONE", False, input_zp=0, seed=5)
    lib = compile_bytes(model, tmp_path / "lib")
    assert kernel_of(lib)["extract"] == "pairs"
    extreme = [[np.where(rng.random(lib.info.inputs[0].shape) < 0.5, -128, 127).astype(np.int8)] for _ in range(3)]
    assert_matches_oracle(model, tmp_path / "run", inputs=extreme)


LSTM_SHAPES = {
    "units8": dict(n_input=8, n_state=8),  # blocks of 8 units, 8 hidden rows per pass
    "units12": dict(n_input=5, n_state=12, batch=2),  # blocks of 4 units
    "units6": dict(n_input=8, n_state=6),  # no blocks: the gate buffer, the gate per row
    "wide_input": dict(n_input=300, n_state=8, steps=2),  # the input in two passes
    "time_major_clip": dict(n_input=3, n_state=16, batch=2, time_major=True, cell_clip=0.6),
}


@pytest.mark.parametrize("case", list(LSTM_SHAPES))
@pytest.mark.parametrize("opt", ["-O2", "-DMC_LONG_MULTIPLY=0"], ids=["long", "int32"])
def test_lstm_pairs_sequence(tmp_path, case, opt):
    """Sequences of inferences against TFLM (its own hidden and cell state), then reset and again."""
    library = check_sequence(lstm_int8(**LSTM_SHAPES[case]), tmp_path, executors=("aot",), opt=opt)
    kernel = kernel_of(library, "UNIDIRECTIONAL_SEQUENCE_LSTM")
    assert kernel["variant"] == "pairs-rows4" and kernel["isa"] == "c"
    ops = library.files["src/model_ops.c"]
    assert ("int16_t gv[" in ops) == (LSTM_SHAPES[case]["n_state"] % 4 == 0)
    assert ("mc_pairs_u8_pass(" in ops) == (LSTM_SHAPES[case]["n_state"] % 8 == 0)


@pytest.mark.long  # 264 units: about 6 s under the sanitizers
def test_lstm_pairs_wide_state_sanitized(tmp_path):
    """A hidden state of 264 units (two passes of the hidden side), under ASan + UBSan."""
    library = check_sequence(lstm_int8(n_input=4, n_state=264, steps=2), tmp_path, executors=("aot",), sanitize=True)
    assert kernel_of(library, "UNIDIRECTIONAL_SEQUENCE_LSTM")["variant"] == "pairs-rows4"


SYM_CHECK_C = r"""
#include <stdio.h>
#include "microcompiler/kernel_activation.h"
#include "microcompiler/kernel_simd.h"
static const uint16_t sym[513] = {%s};
static const uint16_t table[256] = {%s};
int main(void) {
  const uint16_t* const mid = sym + 256;
  long bad = 0;
  int32_t v;
  for (v = -(1 << 18); v <= (1 << 18); ++v) {
    /* the sigmoid on the LSTM's gate inputs (3 x int16), tanh on any input saturated to 17 bits */
    if (v >= -3 * 32768 && v <= 3 * 32767 && mc_sigmoid_s16_sym(v, mid) != mc_sigmoid_s16(v, table)) ++bad;
    if (mc_tanh_s16_sym(MC_SSAT17(v), mid) != mc_tanh_s16(v, table)) ++bad;
  }
  printf("%%ld\n", bad);
  return 0;
}
"""


def test_lstm_sym_activations_match_the_table_helpers(tmp_path):
    """mc_sigmoid_s16_sym / mc_tanh_s16_sym (the extended table, no abs and no branch: the pairs LSTM's
    cell update) give mc_sigmoid_s16 / mc_tanh_s16's value (TFLM's int16 LOGISTIC and TANH) for every
    input they take, tanh's saturated ends included, which random LSTM weights rarely reach."""
    sym = sigmoid_sym_table()
    assert sym.shape == (513,) and sym[256] == SIGMOID_TABLE_UINT16[0]
    source = tmp_path / "sym.c"
    source.write_text(SYM_CHECK_C % (", ".join(map(str, sym.tolist())), ", ".join(map(str, SIGMOID_TABLE_UINT16))))
    include = Path(__file__).resolve().parents[1] / "crt" / "include"
    exe = tmp_path / "sym"
    subprocess.run(["cc", "-O1", "-std=c99", f"-I{include}", str(source), "-o", str(exe)], check=True, timeout=120)
    result = subprocess.run([str(exe)], check=True, timeout=60, capture_output=True, text=True)
    assert result.stdout.strip() == "0"


M3 = "mps2_an385"


@needs_board_tools
@pytest.mark.parametrize("name", ["keras_lstm_int8", "units12_clip"])
def test_lstm_pairs_sequence_on_the_m3(tmp_path, name):
    """The pairs LSTM as the Cortex-M3 compiles it (SSAT, SMLAL/UMLAL, the sym activations, the gate
    records) in QEMU, standalone, every step bit-exact with TFLM invoked as often: the keras model
    (32 units: blocks of 8, int32 hidden start values) and 12 units with a cell clip (blocks of 4)."""
    model = (
        (Path(__file__).parent / "models" / "keras" / "lstm_int8.tflite").read_bytes()
        if name == "keras_lstm_int8"
        else lstm_int8(n_input=5, n_state=12, batch=2, cell_clip=0.6, seed=4)
    )
    library = _library(model, tmp_path, board=M3)
    assert kernel_of(library, "UNIDIRECTIONAL_SEQUENCE_LSTM")["variant"] == "pairs-rows4"
    assert "mc_tanh_s16_sym(MC_SSAT17(" in next(text for path, text in library.files.items() if path.endswith("_ops.c"))
    seq = sequence(library.info, steps=4)
    _, _, run = run_on_board(library, M3, tmp_path / "project", input_steps=seq, log=lambda _: None)
    assert_steps_match(run.step_outputs, Oracle(model).run_sequence(seq), f"standalone on {M3}")
