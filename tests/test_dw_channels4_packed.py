"""DEPTHWISE_CONV_2D channels4 with the DSP extension's packed records (MC_DW4_BIAS and
MC_DW4_STORE_PACKED_NN: per group of 4 channels the 4 biases, then {multiplier, c << 8 | r} per
channel), taken where the output zero point and the clamp's lower end are -128 and the clamp ends at 127. Bit-exact
with TFLM: on the host (the portable macros of the same records) and in QEMU on the Cortex-M4 and M7
(the asm)."""

from __future__ import annotations

import numpy as np
import pytest
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from harness import assert_matches_oracle
from test_fast_kernels import CHANNELS4_TUNING, DSP, kernel_of
from test_op_conv_2d import conv_model

from microcompiler.compiler import compile_model

# (model arguments, packed records expected)
CASES = {
    # stride 2 with SAME padding (the border path), the output zero point at the bottom of the range
    "s2_same_relu_zp-128": (dict(hwc=(9, 10, 8), stride=(2, 2), activation="RELU", output_zp=-128), True),
    # 12 channels (3 groups), stride 1, odd sizes, per-tensor weights
    "s1_c12_per_tensor": (dict(hwc=(5, 7, 12), per_channel=False, activation="NONE", output_zp=-128), True),
    # RELU above an output zero point of -100: the clamp at -100 needs the unpacked epilogue
    "relu_zp-100": (dict(hwc=(5, 7, 12), activation="RELU", output_zp=-100), False),
    # a clamp below the output zero point: the records stay {bias, multiplier, r}
    "none_zp3": (dict(hwc=(6, 6, 8), stride=(2, 2), activation="NONE", output_zp=3), False),
    # stride 2, VALID, 16 channels, input zero point folded into the biases
    "s2_valid_c16": (dict(hwc=(9, 9, 16), stride=(2, 2), padding="VALID", input_zp=77, output_zp=-128), True),
}


def _source(lib) -> str:
    return "\n".join(text for name, text in lib.files.items() if name.endswith(".c"))


@pytest.mark.parametrize("case", list(CASES))
def test_channels4_packed_on_host(tmp_path, case):
    args, packed = CASES[case]
    lib = assert_matches_oracle(
        conv_model(kind="DEPTHWISE_CONV_2D", **args), tmp_path, n_inputs=3, features=DSP, tuning=CHANNELS4_TUNING
    )
    assert kernel_of(lib)["variant"] == "channels4"
    assert ("MC_DW4_STORE_PACKED_NN" in _source(lib)) == packed


def test_channels4_packed_portable_unchanged(tmp_path):
    """Without the DSP extension the records keep {bias, multiplier, r} (the portable C's code)."""
    args, _ = CASES["s2_same_relu_zp-128"]
    model = tmp_path / "m.tflite"
    model.write_bytes(conv_model(kind="DEPTHWISE_CONV_2D", **args))
    lib = compile_model(model, tuning=CHANNELS4_TUNING)
    assert "MC_DW4_STORE_PACKED_NN" not in _source(lib)


@needs_board_tools
@pytest.mark.parametrize("board", ["mps2_an386", "mps2_an500"])
def test_channels4_packed_on_board(tmp_path, board):
    """The asm in QEMU: stride 2 over a border (the default plan of a stride-2 layer is channels4)."""
    args, _ = CASES["s2_same_relu_zp-128"]
    model = conv_model(kind="DEPTHWISE_CONV_2D", **{**args, "hwc": (11, 12, 16)})
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (1, 11, 12, 16), dtype=np.int8)
    assert_matches_oracle_on_board(model, tmp_path, board=board, inputs=[x])
