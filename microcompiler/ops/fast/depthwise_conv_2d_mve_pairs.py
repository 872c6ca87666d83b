"""Helium "mve-pixels2x8": an int8 DEPTHWISE_CONV_2D of 8 channels (depth multiplier 1) with stride 1
across, two adjacent output pixels per 16-lane vector (crt/include/microcompiler/kernel_mve_dw.h).

With 8 channels and horizontal stride 1 the taps of output pixels ox and ox + 1 are 16 contiguous
input bytes (input pixels ix and ix + 1), and their 16 outputs are contiguous too: the layer runs the
"mve-channels16" arithmetic (VMULLB/VMULLT.S8 into four int32 accumulators, VQRDMULH + VRSHL) on
pixel pairs, with each tap's 8 weights twice and each channel's requantization record twice. Pairs
whose windows leave the image, and the last pixel of an odd row, gather their taps (8 bytes per
pixel, the input zero point outside the image) into the kernel scratch first. The DSP planes kernel
took 2.3 instructions per MAC on these layers (the MobileNet v1 0.25 stem); this takes about 1.1.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.conv_common import RequantizedLayer
from microcompiler.ops.fast.mve import depthwise_rows, dw16_order, records
from microcompiler.ops.plan import ISA_MVE, KernelPlan, Variant

MVE_PIXELS2X8 = Variant("mve-pixels2x8", ("kernel_mve_dw.h",), shared_body=False)
CHANNELS = 8


def plan(g, depth_multiplier: int) -> KernelPlan | None:
    """The plan of an int8 DEPTHWISE_CONV_2D with 8 channels, depth multiplier 1, stride and dilation 1
    across, or None."""
    if depth_multiplier != 1 or g.in_c != CHANNELS or g.stride_w != 1 or g.dil_w != 1:
        return None
    taps = g.k_h * g.k_w
    return KernelPlan.of(MVE_PIXELS2X8, ISA_MVE, scratch_bytes=16 * taps + 16, pixels=2, channels=8)


def emit(ctx, plan: KernelPlan, g, w_taps: np.ndarray, layer: RequantizedLayer) -> str:
    """C body of "mve-pixels2x8": w_taps int8 [taps, 8]."""
    folded = layer.bias.astype(np.int64) - layer.x_zp * w_taps.astype(np.int64).sum(axis=0)
    shift = np.broadcast_to(np.asarray(layer.shift), (CHANNELS,))
    mult = np.broadcast_to(np.asarray(layer.mult), (CHANNELS,))
    lanes = dw16_order(16) % CHANNELS  # lane l of a pair holds channel l % 8 of pixel l // 8
    pairs = bool(w_taps.min(initial=0) > -128)  # two int16 products cannot overflow
    ctx.note(requant="vqrdmulh", tap_pairs=pairs)
    pair_geometry = type("PairGeometry", (), {})()
    for name in ("k_h", "k_w", "dil_h", "dil_w", "in_w"):
        setattr(pair_geometry, name, getattr(g, name))
    pair_geometry.in_c = CHANNELS
    rows, taps = depthwise_rows(pair_geometry)
    return ctx.render(
        "depthwise_conv_2d_mve_pairs.c.j2",
        rows=rows,
        taps=taps,
        g=g,
        describe=layer.describe,
        input=layer.input_c,
        output=layer.output_c,
        weights=ctx.const("weights", np.concatenate([w_taps, w_taps], axis=1).astype(np.int8).reshape(-1)),
        params=ctx.const("params", records(folded[lanes], mult[lanes], shift[lanes])),
        scratch=ctx.scratch(plan.scratch),
        pairs=pairs,
        general=int(np.any(shift >= 0)),
        in_zp=layer.x_zp,
        out_zp=layer.y_zp,
        act_min=layer.act[0],
        act_max=layer.act[1],
    )
