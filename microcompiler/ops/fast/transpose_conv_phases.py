"""TRANSPOSE_CONV, int8, constant weights and bias: the "phases" fast kernel (template
transpose_conv_phases.c.j2), without the zero-stuffing MACs.

With stride s, output row oy takes its taps from the kernel rows ky = r, r + s, r + 2s, ...
(r = (oy + pad) mod s, its "phase"), and those taps read the consecutive input rows
(oy + pad) / s - (taps - 1) .. (oy + pad) / s. So the transposed convolution is s_h x s_w ordinary
convolutions of the input, one per output phase, each with its sub-kernel: every output pixel sums
only the taps that reach it (the MACs of TFLM's scatter, none of the zeros a stuffed input would
add), and the taps of one pixel, in input order, are th runs of tw x in_c contiguous bytes.

Per output pixel the taps are gathered into an int8 row of the scratch (the input as it lies when
the pixel takes one run of whole 4-byte groups), the taps outside the input get the input zero
point, folded into the phase's bias (bias - zp * sum(w) per phase and channel: TFLM skips those taps,
(zp - zp) * w = 0 does too); then 4 output channels per dot product (mc_dot_r4: SXTB16 of the inputs,
SMLAD with the weights as int16 pairs, 13 instructions per 16 MACs with the DSP extension, the same
arithmetic in portable C elsewhere) and the channels left over one by one. The sums are TFLM's int32
sums modulo 2^32 (the order of integer additions does not matter); the requantization is SMMLAR +
shift (mc_requant_fast) where the weights and bias prove |acc| < 2^30, TFLM's otherwise.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.fast import packing as fast
from microcompiler.ops.plan import KernelPlan, Variant, dsp_or_c
from microcompiler.ops.quant import activation_range, conv_multipliers

PHASES = Variant("phases", ("kernel_simd.h",))


def phase_taps(r: int, k: int, stride: int) -> list[int]:
    """Kernel indices of phase r (ky = r, r + stride, ... < k), in the order their inputs lie
    (input index ascending: kernel index descending)."""
    return list(range(r, k, stride))[::-1]


def phase_tables(ctx, offsets: list[int], k_h: int, k_w: int, s_h: int, s_w: int, unit: str) -> dict:
    """The flash tables of a phases kernel (None where one entry would do): the first weight (`unit`)
    of each phase, the kernel rows per row phase and the kernel columns per column phase."""
    phases = s_h * s_w
    taps_h = [len(phase_taps(r, k_h, s_h)) for r in range(s_h)]
    taps_w = [len(phase_taps(r, k_w, s_w)) for r in range(s_w)]
    return dict(
        offsets=ctx.const(
            "phase_offsets", np.array(offsets, np.int32), comment=f"first {unit} of each phase [{phases}]"
        )
        if phases > 1
        else None,
        taps_h=ctx.const("taps_h", np.array(taps_h, np.int32), comment=f"kernel rows per row phase [{s_h}]")
        if s_h > 1
        else None,
        taps_w=ctx.const("taps_w", np.array(taps_w, np.int32), comment=f"kernel columns per column phase [{s_w}]")
        if s_w > 1
        else None,
    )


def plan(in_c: int, k_h: int, k_w: int, stride_h: int, stride_w: int, features) -> KernelPlan:
    taps = -(-k_h // stride_h) * -(-k_w // stride_w) * in_c
    return KernelPlan.of(PHASES, dsp_or_c(features), scratch_bytes=-(-taps // 4) * 4, rows=4, weights="s16")


def emit_phases(ctx, plan_: KernelPlan, x, w, y, bias, values: dict, activation: str) -> str:
    """``values``: the geometry of TransposeConv.emit (shapes, strides, padding, C names)."""
    v = values
    in_c, out_c, k_h, k_w, s_h, s_w = v["in_c"], v["out_c"], v["k_h"], v["k_w"], v["stride_h"], v["stride_w"]
    w_all = w.data.astype(np.int8).reshape(out_c, k_h, k_w, in_c)
    b = bias.data.astype(np.int64).reshape(-1) if bias is not None else np.zeros(out_c, np.int64)
    zp, y_zp = int(x.quant.zero_point[0]), int(y.quant.zero_point[0])
    words: list[np.ndarray] = []
    offsets, folded, bounds, taps_h, taps_w, direct = [], [], [], [], [], False
    for r_h in range(s_h):
        kys = phase_taps(r_h, k_h, s_h)
        for r_w in range(s_w):
            kxs = phase_taps(r_w, k_w, s_w)
            rows = w_all[:, kys][:, :, kxs].reshape(out_c, -1)  # [oc][j][t][c]: the gathered row's order
            k = rows.shape[1]
            padded = np.zeros((out_c, -(-k // 4) * 4), np.int8)
            padded[:, :k] = rows
            offsets.append(sum(len(a) for a in words))
            words.append(fast.pack_s16_rows4(padded))
            folded.append(b - zp * rows.astype(np.int64).sum(axis=1))
            bounds.append(fast.acc_bounds(b, rows))
            direct |= len(kys) == 1 and k % 4 == 0 and k > 0
        taps_h.append(len(kys))
    taps_w = [len(phase_taps(r_w, k_w, s_w)) for r_w in range(s_w)]
    mult, shift = conv_multipliers(x, w, y, out_c)
    bound = np.max(np.stack(bounds), axis=0)
    per_channel = len(set(zip(mult.tolist(), shift.tolist()))) > 1
    is_fast, c, r = fast.requant_table(mult, shift, y_zp, bound if per_channel else bound.max(keepdims=True))
    ctx.note(requant="smmlar" if is_fast else "reference")
    lo, hi = activation_range(activation, y)
    phases = s_h * s_w
    weights = ctx.const(
        "weights",
        np.concatenate(words).astype(np.int32),
        comment=(
            f"weights of the {phases} phases (offsets in phase_offsets), each: per block of 4 output channels and "
            "group of 4 taps the int16 pairs (k0,k2) (k1,k3) of channels 0..3, then the channels left over"
        ),
    )
    out = dict(
        v,
        isa=plan_.isa,
        zp=zp,
        output_offset=y_zp,
        act_min=lo,
        act_max=hi,
        fast=is_fast,
        per_channel=per_channel,
        weights=weights,
        blocks=out_c // 4,
        rows_tail=out_c % 4,
        direct=direct,
        phases=phases,
        row_bytes=plan_.scratch,
        scratch=ctx.scratch(plan_.scratch),
        bias=ctx.const(
            "bias",
            fast.wrap32(np.concatenate(folded)),
            comment=(
                f"per phase [{phases}] and output channel [{out_c}]: the bias minus the input zero point "
                "times the phase's weights"
            ),
        ),
        offsets=(
            ctx.const(
                "phase_offsets", np.array(offsets, np.int32), comment=f"first weight word of each phase [{phases}]"
            )
            if phases > 1
            else None
        ),
        taps_h=ctx.const("taps_h", np.array(taps_h, np.int32), comment=(f"kernel rows per row phase [{s_h}]"))
        if s_h > 1
        else None,
        taps_w=ctx.const("taps_w", np.array(taps_w, np.int32), comment=(f"kernel columns per column phase [{s_w}]"))
        if s_w > 1
        else None,
    )
    if per_channel:
        out.update(
            multipliers=ctx.const("multiplier", mult, comment=f"requantization multiplier per channel [{out_c}]"),
            cs=ctx.const(
                "c" if is_fast else "shift",
                c,
                comment=(
                    f"per channel [{out_c}]: "
                    + ("rounding constant 2^(r-1) + output zero point * 2^r" if is_fast else "requantization shift")
                ),
            ),
            rs=ctx.const("r", r, comment=f"right shift per channel [{out_c}]") if is_fast else None,
            requant=None,
        )
    else:
        out["requant"] = (int(mult[0]), int(c[0]), int(r[0]))
    return ctx.render("transpose_conv_phases.c.j2", **out)
