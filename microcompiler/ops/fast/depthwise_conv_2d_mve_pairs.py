"""Helium "mve-pixels2x8": an int8 DEPTHWISE_CONV_2D of 8 channels (depth multiplier 1) with stride 1
across, two adjacent output pixels per 16-lane vector (crt/include/microcompiler/kernel_mve_dw.h).

With 8 channels and horizontal stride 1 the taps of output pixels ox and ox + 1 are 16 contiguous
input bytes (input pixels ix and ix + 1), and their 16 outputs are contiguous too: the layer runs the
"mve-channels16" arithmetic (VMULLB/VMULLT.S8 into four int32 accumulators, VQRDMULH + VRSHL) on
pixel pairs, with each tap's 8 weights twice and each channel's requantization record twice. Pairs
whose windows leave the image, and the last pixel of an odd row, copy each kernel row's k_w + 1
input pixels into a strip of the kernel scratch first (the input zero point outside the image) and
read their taps there at the interior's offsets. The DSP planes kernel took 2.3 instructions per MAC
on these layers (the MobileNet v1 0.25 stem); this takes 1.0-1.3 (the patches' narrow images: more
border pairs).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from microcompiler.ops.conv_common import RequantizedLayer
from microcompiler.ops.fast.mve import depthwise_rows, dw16_order, dw16_requantization, records
from microcompiler.ops.plan import ISA_MVE, KernelPlan, Variant

MVE_PIXELS2X8 = Variant("mve-pixels2x8", ("kernel_mve_dw.h",), shared_body=False)
CHANNELS = 8


def plan(g, depth_multiplier: int) -> KernelPlan | None:
    """The plan of an int8 DEPTHWISE_CONV_2D with 8 channels, depth multiplier 1, stride and dilation 1
    across, or None."""
    if depth_multiplier != 1 or g.in_c != CHANNELS or g.stride_w != 1 or g.dil_w != 1:
        return None
    return KernelPlan.of(MVE_PIXELS2X8, ISA_MVE, scratch_bytes=g.k_h * strip_bytes(g) + 16, pixels=2, channels=8)


def strip_bytes(g) -> int:
    """A border pair's kernel row: its k_w + 1 input pixels."""
    return (g.k_w + 1) * CHANNELS


def _rows(g, in_w: int, dil_h: int) -> tuple[list[int], list[tuple[int, int]]]:
    """depthwise_rows of the pairs' 8-channel pixels in an image in_w pixels wide."""
    pair_geometry = SimpleNamespace(k_h=g.k_h, k_w=g.k_w, dil_h=dil_h, dil_w=1, in_w=in_w, in_c=CHANNELS)
    return depthwise_rows(pair_geometry)


def emit(ctx, plan: KernelPlan, g, w_taps: np.ndarray, layer: RequantizedLayer) -> str:
    """C body of "mve-pixels2x8": w_taps int8 [taps, 8]."""
    folded, mult, shift, values = dw16_requantization(ctx, w_taps, layer)
    lanes = dw16_order(16) % CHANNELS  # lane l of a pair holds channel l % 8 of pixel l // 8
    rows, taps = _rows(g, g.in_w, g.dil_h)
    strip_rows, strip_taps = _rows(g, g.k_w + 1, 1)  # the border pairs' strips, one after the other
    assert strip_taps == taps and len(strip_rows) == len(rows)  # one tap code for both (offsets from k_w only)
    return ctx.render(
        "depthwise_conv_2d_mve_pairs.c.j2",
        rows=rows,
        taps=taps,
        g=g,
        weights=ctx.const(
            "weights",
            np.concatenate([w_taps, w_taps], axis=1).astype(np.int8).reshape(-1),
            comment=f"weights [{len(w_taps)} taps (ky, kx)][2 pixels][8 channels], int8: each tap's 8 twice",
        ),
        params=ctx.const(
            "params",
            records(folded[lanes], mult[lanes], shift[lanes]),
            comment="4 requantization records (lanes 0,4,8,12 / 2,6,10,14 / 1,5,9,13 / 3,7,11,15 of a pixel pair, "
            "lane l channel l % 8) {folded bias[4], multiplier[4], -right shift[4]"
            + (", left shift[4]}" if np.any(shift >= 0) else "}"),
        ),
        strip_rows=strip_rows,
        strip=strip_bytes(g),
        scratch=ctx.scratch(plan.scratch),
        in_zp=layer.x_zp,
        **values,
    )
