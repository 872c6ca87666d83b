"""The lanes FULLY_CONNECTED kernel as one routine per layer (kernel_fc_lanes.h, mc_fc_l128) and its
8-input form (MC_FC_L8) against the TFLM oracle, bit for bit: one pass of 128 inputs and 2-5 chunks
of them (partial sums in the scratch), 8 inputs with rows % 4 left over, the requantization on the 256-scaled sums with and without the correction for negative
sums (NONE with the output zero point above -128; RELU with it at -128), several right shifts (the
epilogue per shift), extreme inputs; the layers it does not take keep the earlier lanes kernel. On
the host the routine runs as portable C; on the emulated Cortex-M4 its assembly.
"""

from __future__ import annotations

import numpy as np
import pytest
from model_builder import ModelBuilder, fully_connected_options
from test_fast_kernels import DSP, QEMU_TOOLS, _check_library, assert_device_matches_tflm


def _fc(b, rng, name, x, x_scale, depth, units, activation, out_zp, out_scale, pair=None):
    w_scale = 0.01
    weights = rng.integers(-127, 128, (units, depth), dtype=np.int8)
    if pair is not None:  # row 0's first two weights
        weights[0, :2] = pair
    w = b.constant(f"{name}_w", weights, scale=[w_scale], zero_point=[0])
    bias = b.constant(
        f"{name}_b", rng.integers(-3000, 3000, units).astype(np.int32), scale=[x_scale * w_scale], zero_point=[0]
    )
    y = b.activation(name, [1, units], "int8", scale=out_scale, zero_point=out_zp)
    b.op("FULLY_CONNECTED", [x, w, bias], [y], fully_connected_options(activation))
    return y


def fc_l128_model(layers, seed=0, input_zp=-5):
    """One int8 input per distinct depth; layers: (depth, units, activation, output zero point,
    output scale), each an output of the model."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    inputs = {}
    outs = []
    for k, (depth, units, activation, out_zp, out_scale, *pair) in enumerate(layers):
        if depth not in inputs:
            inputs[depth] = b.activation(f"x{depth}", [1, depth], "int8", scale=0.02, zero_point=input_zp)
        x = inputs[depth]
        outs.append(_fc(b, rng, f"f{k}", x, 0.02, depth, units, activation, out_zp, out_scale, *pair))
    return b.finish(list(inputs.values()), outs)


# (depth, units, activation, output zero point, output scale): output scales that give right
# shifts r from 2 to 11 (the epilogue's SSAT shift r + 7)
L128_LAYERS = [
    (128, 8, "NONE", 3, 0.05),  # one pass, the sign correction
    (128, 4, "RELU", -128, 0.01),  # one pass, no correction (the clamp starts at the zero point)
    (128, 12, "NONE", -128, 2.5),  # NONE with the zero point at -128: no correction either
    (256, 12, "RELU", -128, 0.2),  # 2 chunks
    (384, 4, "NONE", 90, 0.08),  # 3 chunks
    (640, 16, "RELU", -128, 0.4),  # 5 chunks
    (640, 8, "NONE", -7, 0.003),  # 5 chunks, a small output scale: many saturated outputs
    (128, 4, "NONE", 20, 0.2),  # the shift 16 (packed stores) with the correction
    (256, 4, "NONE", 20, 0.2),  # the same in 2 chunks (the chunked last pass's epilogue, one block)
]
# MC_FC_L8 (8 inputs in registers): rows by 4 and the rows % 4 left over, with and without the correction
L8_LAYERS = [(8, 128, "RELU", -128, 0.05), (8, 7, "NONE", 3, 0.02), (8, 2, "NONE", -128, 0.01)]
# layers neither takes: rows % 4, depth % 128, a clamp above -128 (RELU with zero point 3), 12 inputs,
# weights whose lanes fit int16 as w0 + 256 w1 (the earlier kernel) but not swapped (w1 + 256 w0)
OTHER_LAYERS = [
    (128, 8, "RELU", -128, 0.2, (-128, -5)),
    (8, 4, "NONE", 3, 0.05, (-128, -1)),
    (128, 6, "NONE", 3, 0.05),
    (132, 8, "RELU", -128, 0.2),
    (256, 8, "RELU", 3, 0.2),
    (8, 8, "RELU6", -128, 0.05),
    (12, 4, "NONE", 3, 0.05),
]


def _ops_c(lib) -> str:
    return next(text for path, text in lib.files.items() if path.endswith("_ops.c"))


@pytest.mark.parametrize("input_zp", [-128, 17])
def test_fc_l128_on_host(tmp_path, input_zp):
    from microcompiler.compiler import compile_model
    from microcompiler.inputs import random_inputs

    path = tmp_path / "fc.tflite"
    path.write_bytes(fc_l128_model(L128_LAYERS + L8_LAYERS + OTHER_LAYERS, seed=3, input_zp=input_zp))

    info = compile_model(path, features=DSP).info
    inputs = [random_inputs(info.inputs, seed=s) for s in range(2)]
    inputs += [[np.full(t.shape, v, np.int8) for t in info.inputs] for v in (-128, 127)]
    lib = _check_library(path, tmp_path, inputs=inputs, sanitize=True)
    ops = [o for o in lib.metadata["operators"] if o["kind"] == "FULLY_CONNECTED"]
    assert all(o["kernel"]["extract"] == "lanes" for o in ops)
    assert _ops_c(lib).count("mc_fc_l128_run(") == len(L128_LAYERS)
    # the epilogue families: one pass (the records' next) or chunked (the loop test), each signed or not
    for family, chunked in (("", False), ("_CHUNKED", True)):
        for signed in (False, True):
            expected = sum((layer[0] > 128) == chunked and (layer[3] > -128) == signed for layer in L128_LAYERS)
            assert _ops_c(lib).count(f"MC_FC_L128_EPI{family}{'_SIGNED' if signed else ''}(") == expected
    # a record per block of 4 rows and a terminator per layer in its first chunk
    assert _ops_c(lib).count("MC_FC_L128_GO,") == sum(layer[1] // 4 for layer in L128_LAYERS)
    assert _ops_c(lib).count("MC_FC_L128_NEXT,") == sum(layer[0] > 128 for layer in L128_LAYERS)
    assert _ops_c(lib).count("MC_FC_L128_DONE\n}") == sum(layer[0] == 128 for layer in L128_LAYERS)
    assert _ops_c(lib).count("  MC_FC_L8(") == len(L8_LAYERS)
    assert _ops_c(lib).count("MC_FC_L8_SIGNED)") == sum(layer[3] > -128 for layer in L8_LAYERS)


@pytest.mark.skipif(not QEMU_TOOLS, reason="needs arm-none-eabi-gcc, cmake, ninja and qemu-system-arm")
def test_fc_l128_on_cortex_m4_matches_tflm(tmp_path):
    """The assembly: every layer kind of L128_LAYERS and L8_LAYERS in one model on the emulated Cortex-M4."""
    from microcompiler.boards import load_board
    from microcompiler.compiler import compile_model

    path = tmp_path / "fc.tflite"
    path.write_bytes(fc_l128_model(L128_LAYERS + L8_LAYERS, seed=5))
    board = load_board("mps2_an386")
    lib = compile_model(path, features=board.cpu.features)
    assert _ops_c(lib).count("mc_fc_l128_run(") == len(L128_LAYERS)
    assert _ops_c(lib).count("  MC_FC_L8(") == len(L8_LAYERS)
    assert_device_matches_tflm(path, lib, board, tmp_path, outputs=len(L128_LAYERS + L8_LAYERS), seed=11)


def test_a_model_of_8_input_layers_alone_has_no_scratch(tmp_path):
    """MC_FC_L8 keeps its expanded input in registers: a model whose only lanes layers are 8-input ones
    reserves no scratch (an unused scratch array fails -Werror's unused-variable on the boards) and
    still equals TFLM."""
    path = tmp_path / "fc8.tflite"
    path.write_bytes(fc_l128_model(L8_LAYERS, seed=7))
    lib = _check_library(path, tmp_path, sanitize=True)
    assert [o["kernel"].get("routine") for o in lib.metadata["operators"]] == ["l8"] * len(L8_LAYERS)
    assert all(o["kernel"]["scratch_bytes"] == 0 for o in lib.metadata["operators"])
    assert "_scratch" not in _ops_c(lib)
