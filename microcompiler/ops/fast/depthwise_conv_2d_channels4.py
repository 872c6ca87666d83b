"""DEPTHWISE_CONV_2D, int8, depth multiplier 1, channels % 4 == 0: the "channels4" fast kernel
(template depthwise_conv_2d_channels4.c.j2): 4 channels per step with the taps unrolled, int16
weight pairs (SXTB16 + SMLABB/SMLATT with the DSP extension), padding taps read a row of input
zero points, the input zero point folded into the bias. The plan is DepthwiseConv2D.kernel_plan.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.conv_common import bias_tensor, geometry
from microcompiler.ops.fast import packing as fast
from microcompiler.ops.plan import Variant
from microcompiler.ops.quant import activation_range, conv_multipliers
from microcompiler.ops.requant_float import ort_requant_table, requant_output

CHANNELS4 = Variant("channels4", ("kernel_simd.h",))


def emit_channels4(op, graph, ctx, plan) -> str:
    x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    g = geometry(op, graph)
    bias = bias_tensor(op, graph)
    w_taps = w.data.astype(np.int8).reshape(g.k_h * g.k_w, g.out_c)  # [tap][channel]
    zp = int(x.quant.zero_point[0])
    b = bias.data.astype(np.int64) if bias is not None else np.zeros(g.out_c, np.int64)
    folded = b - zp * w_taps.astype(np.int64).sum(axis=0)
    mult, shift = conv_multipliers(x, w, y, g.out_c)
    yq = requant_output(op, ctx.tensor, y)  # the post table's quantization where it has one
    y_zp = int(yq.quant.zero_point[0])
    is_fast, c, r = fast.requant_table(mult, shift, y_zp, fast.acc_bounds(b, w_taps.T))
    ort = ort_requant_table(op, x, w, yq, g.out_c)
    if ort is not None:  # ONNX Runtime's requantization: the reference epilogue, float scales as bits
        is_fast, mult, c, r = ort
    ctx.note(requant="smmlar" if is_fast else "reference")
    scale = 2 if is_fast else 1  # accumulate 2 * acc: saves the doubling in every requantization
    lo, hi = activation_range(op.options["activation"], y)
    # the rounding constant c = 2^(r-1) + zp * 2^r with r in its low byte: one word, c = word >> 8 and the
    # shift by the word's low byte (ASR by a register), where computing c from r took two instructions
    # (MC_DW4_STORE_PACKED_NN: SSAT only, so the output zero point and the clamp at -128, no post table)
    packed = (
        plan.isa == "dsp"
        and is_fast
        and ort is None
        and yq is y
        and lo == y_zp == -128
        and hi == 127
        and bool(np.all(np.abs(c.astype(np.int64)) < 2**23))
    )
    zp_row = (
        None
        if g.always_inside
        else ctx.model_const(
            f"zero_point_row_{g.in_c}",
            np.full(g.in_c, zp, np.int8),
            comment=f"a pixel of {g.in_c} input zero points ({zp}): what padding taps read",
        )
    )
    return ctx.render(
        "depthwise_conv_2d_channels4.c.j2",
        g=g,
        describe=g.describe(),
        input=ctx.arg(op.inputs[0]),
        output=ctx.arg(op.outputs[0]),
        weights=ctx.const(
            "weights",
            fast.pack_depthwise(w_taps.astype(np.int32) * scale),
            comment=f"weights: per group of 4 channels and per tap ({g.k_h}x{g.k_w}) "
            "the int16 pairs (c0,c2) (c1,c3)" + (", doubled" if scale == 2 else ""),
        ),
        params=ctx.const(
            "params",
            channel_params_packed(folded * scale, mult, c, r)
            if packed
            else fast.channel_params3(folded * scale, mult, r)
            if is_fast
            else fast.channel_params(folded * scale, mult, c, r),
            comment=f"per channel [{g.out_c}] "
            + (
                "per group of 4 channels the 4 folded biases, then {multiplier, c << 8 | right shift r} "
                "per channel (c = 2^(r-1) + zp * 2^r)"
                if packed
                else "{folded bias, multiplier, right shift}"
                if is_fast
                else "{folded bias, multiplier, shift, 0}"
            )
            + (", bias doubled" if scale == 2 else ""),
        ),
        packed=packed,
        zp_row=zp_row,
        isa=plan.isa,
        fast=is_fast,
        act_min=lo,
        act_max=hi,
        output_offset=y_zp,
    )


def channel_params_packed(bias: np.ndarray, mult: np.ndarray, c: np.ndarray, r: np.ndarray) -> np.ndarray:
    """channels4's records with the DSP extension (MC_DW4_BIAS, MC_DW4_STORE_PACKED_NN): per group of 4
    channels the 4 biases, then per channel {multiplier, c << 8 | r}: 12 words per group, as before."""
    groups = len(bias) // 4
    biases = fast.wrap32(bias).reshape(groups, 4)
    cr = (np.asarray(c, np.int64) << 8) | np.asarray(r, np.int64)
    pairs = np.stack([np.asarray(mult, np.int64), cr], axis=1).reshape(groups, 8)
    return np.concatenate([biases.astype(np.int64), pairs], axis=1).reshape(-1).astype(np.int32)
