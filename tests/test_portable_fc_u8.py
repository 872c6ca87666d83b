"""FULLY_CONNECTED "pairs-u8" (cores without the DSP extension: an activation input offset by 128 in
place, 8 rows per pass of mc_pairs_u8_pass, then restored) against the TFLM oracle, bit for bit, on
both paths: with the long multiply (the host, the Cortex-M3) and without it (MC_LONG_MULTIPLY=0)."""

from __future__ import annotations

import numpy as np
import pytest
from harness import assert_matches_oracle, compile_bytes
from model_builder import ModelBuilder, fully_connected_options
from test_portable_kernels import _without_long_multiply


def mlp(
    depth: int, hidden: int, units: int, seed: int = 0, extreme: bool = False, per_tensor: bool = False, y_zp: int = 5
) -> bytes:
    """x [1, depth] -> FULLY_CONNECTED hidden (RELU) -> FULLY_CONNECTED units; the hidden layer is a
    model output too (the second layer offsets it in place: it must find it restored). per_tensor: one
    weight scale per layer (the shared whole-layer kernels where the activation clamps nothing but int8)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.activation("x", [1, depth], "int8", scale=0.02, zero_point=-128)
    h = b.activation("h", [1, hidden], "int8", scale=0.05, zero_point=-128)
    y = b.activation("y", [1, units], "int8", scale=0.08, zero_point=y_zp)
    for name, src, dst, rows, cols, act in (("w1", x, h, hidden, depth, "RELU"), ("w2", h, y, units, hidden, "NONE")):
        weights = (
            np.where(rng.random((rows, cols)) < 0.5, -127, 127).astype(np.int8)
            if extreme
            else rng.integers(-127, 128, (rows, cols), dtype=np.int8)
        )
        scale = rng.uniform(0.002, 0.01, 1 if per_tensor else rows)
        w = b.constant(name, weights, scale=scale, zero_point=[0] * len(scale), axis=0)
        bias = b.constant(
            name + "_bias",
            rng.integers(-3000, 3000, rows).astype(np.int32),
            scale=list(0.02 * scale),
            zero_point=[0] * len(scale),
        )
        b.op("FULLY_CONNECTED", [src, w, bias], [dst], fully_connected_options(act))
    return b.finish([x], [y, h])


def kernels(lib) -> list[str]:
    return [op["kernel"].get("extract") for op in lib.metadata["operators"]]


@pytest.mark.parametrize(
    "depth,hidden,units",
    [
        pytest.param(64, 128, 16, id="128-inputs"),
        pytest.param(40, 131, 8, id="depth-tail"),  # the offset's bytes after the words, depth % 4 = 3
        pytest.param(48, 700, 24, id="three-passes"),  # 256 inputs per pass
    ],
)
def test_fully_connected_u8_both_paths(tmp_path, depth, hidden, units):
    model = mlp(depth, hidden, units)
    lib = assert_matches_oracle(model, tmp_path / "long", n_inputs=3)
    # the first layer reads the model's input (the caller's, maybe const): not offset in place
    assert kernels(lib)[1] == "pairs-u8" and kernels(lib)[0] != "pairs-u8"
    assert "mc_dot_r8_u8p(" in lib.files["src/model_ops.c"]
    _without_long_multiply(model, tmp_path / "int32", "rows4")


def test_fully_connected_u8_extreme_weights(tmp_path):
    """Every weight -127 or 127, 256 inputs: the widest lanes of a pass."""
    model = mlp(32, 256, 8, seed=4, extreme=True)
    lib = assert_matches_oracle(model, tmp_path, n_inputs=3)
    assert kernels(lib)[1] == "pairs-u8"


def test_fully_connected_u8_only_where_it_applies(tmp_path):
    """Rows not in blocks of 8, the tuning knob {"extract": "pairs"}: the signed pairs."""
    lib = compile_bytes(mlp(64, 128, 12), tmp_path / "rows12")
    assert kernels(lib)[1] == "pairs"
    lib = compile_bytes(mlp(64, 128, 16), tmp_path / "tuned", tuning={"FULLY_CONNECTED": {"extract": "pairs"}})
    assert kernels(lib)[1] == "pairs"


@pytest.mark.parametrize(
    "depth,hidden,units,y_zp,whole",
    [
        pytest.param(64, 128, 16, 5, (True, True), id="128-inputs"),
        pytest.param(48, 256, 8, -128, (True, True), id="one-full-pass"),  # 256 inputs: the widest pass
        pytest.param(40, 132, 24, 5, (True, False), id="depth-tail"),  # 132 % 8: mc_dot_r8_u8p
        pytest.param(48, 264, 8, 5, (True, False), id="two-passes"),  # over 256 inputs: mc_dot_r8_u8p
    ],
)
def test_fully_connected_whole_layer_both_paths(tmp_path, depth, hidden, units, y_zp, whole):
    """Per-tensor layers whose activation clamps nothing but int8 (RELU from the zero point -128, NONE):
    the shared whole-layer kernels (kernel_portable_fc.h: mc_fc_r4_s8p on the model's input,
    mc_fc_r8_u8p on the activation, each layer a record and a call) where the pass takes the whole
    depth in groups of 8, else the layer's own loop; then MC_LONG_MULTIPLY=0."""
    model = mlp(depth, hidden, units, seed=2, per_tensor=True, y_zp=y_zp)
    lib = assert_matches_oracle(model, tmp_path / "long", n_inputs=3, sanitize=hidden == 128)
    code = lib.files["src/model_ops.c"]
    assert kernels(lib) == ["pairs", "pairs-u8"]
    assert ("mc_fc_r4_s8p(&layer" in code) == whole[0] and ("mc_fc_r8_u8p(&layer" in code) == whole[1]
    assert ("mc_dot_r8_u8p(" in code) != whole[1]
    _without_long_multiply(model, tmp_path / "int32", "rows4")


def test_fully_connected_whole_layer_only_without_clamp(tmp_path):
    """A RELU above the int8 range's bottom (output zero point 5) clamps: the layer's own loop."""
    b = ModelBuilder()
    rng = np.random.default_rng(1)
    x = b.activation("x", [1, 64], "int8", scale=0.02, zero_point=-128)
    y = b.activation("y", [1, 16], "int8", scale=0.05, zero_point=5)
    w = b.constant("w", rng.integers(-127, 128, (16, 64), dtype=np.int8), scale=[0.004], zero_point=[0], axis=0)
    bias = b.constant("b", rng.integers(-3000, 3000, 16).astype(np.int32), scale=[0.00008], zero_point=[0])
    b.op("FULLY_CONNECTED", [x, w, bias], [y], fully_connected_options("RELU"))
    lib = assert_matches_oracle(b.finish([x], [y]), tmp_path, n_inputs=2)
    assert kernels(lib) == ["pairs"] and "mc_dot_r4_s8p(" in lib.files["src/model_ops.c"]
