"""TRANSPOSE_CONV, int8, constant weights and bias, Helium (Cortex-M55): the "mve-phases" kernel
(template transpose_conv_mve.c.j2).

The same decomposition as "phases" (transpose_conv_phases.py: one ordinary convolution of the input
per output phase, each output pixel summing only the taps that reach it, no zero-stuffing MACs), with
the arithmetic of the "mve-dot" CONV_2D (mve.py): per phase the weights as int8 blocks of 4 output
channels x 16 taps (mve.pack_blocks) and the requantization records {bias - input zero point *
sum(w), multiplier, -right shift[, left shift]} per block (mve.records); two output pixels of one
phase (ox and ox + stride_w) gathered into two 16-byte-padded rows of the scratch (taps outside the
input: the input zero point, which the folded bias accounts for), then 2 pixels x 4 output channels
per mc_mve_dot_2x4_rows (VLDRB + VMLADAVA.S8) and mc_v4_requant (VQRDMULH + VRSHL: TFLM's
MultiplyByQuantizedMultiplier for any multiplier). The sums are TFLM's int32 sums modulo 2^32.
Every phase needs at least one tap (kernel >= stride); otherwise "phases" runs.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.fast.mve import CHUNK, pack_blocks, records, steps_of
from microcompiler.ops.fast.transpose_conv_phases import phase_tables, phase_taps
from microcompiler.ops.features import has_mve
from microcompiler.ops.plan import ISA_MVE, KernelPlan, Variant
from microcompiler.ops.quant import activation_range, conv_multipliers

MVE_PHASES = Variant("mve-phases", ("kernel_mve.h",))


def plan(in_c: int, k_h: int, k_w: int, stride_h: int, stride_w: int, features) -> KernelPlan | None:
    if not has_mve(features) or k_h < stride_h or k_w < stride_w:
        return None
    taps = -(-k_h // stride_h) * -(-k_w // stride_w) * in_c
    return KernelPlan.of(MVE_PHASES, ISA_MVE, scratch_bytes=2 * steps_of(taps) * CHUNK, pixels=2, out_channels=4)


def emit(ctx, plan_: KernelPlan, x, w, y, bias, values: dict, activation: str) -> str:
    """``values``: the geometry of TransposeConv.emit (shapes, strides, padding, C names)."""
    v = values
    in_c, out_c, k_h, k_w, s_h, s_w = v["in_c"], v["out_c"], v["k_h"], v["k_w"], v["stride_h"], v["stride_w"]
    w_all = w.data.astype(np.int8).reshape(out_c, k_h, k_w, in_c)
    b = bias.data.astype(np.int64).reshape(-1) if bias is not None else np.zeros(out_c, np.int64)
    zp, y_zp = int(x.quant.zero_point[0]), int(y.quant.zero_point[0])
    mult, shift = conv_multipliers(x, w, y, out_c)
    packed: list[np.ndarray] = []
    recs: list[np.ndarray] = []
    offsets: list[int] = []
    for r_h in range(s_h):
        kys = phase_taps(r_h, k_h, s_h)
        for r_w in range(s_w):
            rows = w_all[:, kys][:, :, phase_taps(r_w, k_w, s_w)].reshape(out_c, -1)  # the gathered row's order
            offsets.append(sum(len(a) for a in packed))
            packed.append(pack_blocks(rows))
            recs.append(records(b - zp * rows.astype(np.int64).sum(axis=1), mult, shift))
    ctx.note(requant="vqrdmulh")
    lo, hi = activation_range(activation, y)
    phases = s_h * s_w
    blocks = -(-out_c // 4)
    # some phase has one kernel row whose run of taps is whole chunks: its pixels inside the input read in place
    direct = any(
        len(phase_taps(r_h, k_h, s_h)) == 1 and len(phase_taps(r_w, k_w, s_w)) * in_c % CHUNK == 0
        for r_h in range(s_h)
        for r_w in range(s_w)
    )
    return ctx.render(
        "transpose_conv_mve.c.j2",
        **v,
        zp=zp,
        out_zp=y_zp,
        act_min=lo,
        act_max=hi,
        general=int(np.any(np.asarray(shift) >= 0)),
        record=len(recs[0]) // blocks,  # int32 per record: 16, or 12 without left shifts (mve.records)
        direct=direct,
        phases=phases,
        blocks=blocks,
        row_bytes=plan_.scratch // 2,
        scratch=ctx.scratch(plan_.scratch),
        weights=ctx.const(
            "weights",
            np.concatenate(packed),
            comment=(
                f"weights of the {phases} phases (offsets in phase_offsets), each: per block of 4 output channels and "
                "chunk of 16 taps the 16 int8 of channels 0, 1, 2, 3 (zero-padded)"
            ),
        ),
        params=ctx.const(
            "params",
            np.concatenate(recs),
            comment=(
                f"per phase [{phases}] and block of 4 output channels [{blocks}] the record {{bias - input zero point "
                "* sum of the phase's weights [4], multiplier[4], -right shift[4]"
                + (", left shift[4]}" if np.any(np.asarray(shift) >= 0) else "}")
            ),
        ),
        **phase_tables(ctx, offsets, k_h, k_w, s_h, s_w, "weight"),
    )
