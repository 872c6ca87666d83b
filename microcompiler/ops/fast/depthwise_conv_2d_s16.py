"""DEPTHWISE_CONV_2D, int16x8 (int16 activations, int8 weights): the "int16-pairs" fast kernel
(template depthwise_conv_2d_s16.c.j2). Per output pixel the receptive field is gathered into an
int16 row [tap][channel] (zeros outside the image), then the output channels in pairs with the
taps unrolled, the weights stored as int16 pairs per tap:

* depth multiplier 1 ("pairs": "channels"): channels c, c + 1 are one word of the row: LDR + LDR +
  SMLABB + SMLATT per 2 MACs; an odd last channel alone;
* even depth multiplier ("multiplier"): the two output channels of a pair read the same input:
  LDRSH + LDR + SMLABB + SMLABT per 2 MACs;
* odd depth multiplier above 1 ("none"): one output channel at a time.

TFLM sums in int64; the kernel's int32 sums are exact where 2^15 * (sum of a channel's |weights|)
fits int32 (any kernel up to 511 taps; plan() keeps the reference beyond). The plan is
DepthwiseConv2D.plan in ops/depthwise_conv_2d.py.

That kernel stores the weights as int16 pairs, twice the model file's int8. The default,
"int16-pair-planes" (template depthwise_conv_2d_s16_planes.c.j2), keeps them int8 (pack_s8) and
swaps the loops: per pair of output channels (or single channel) it widens their weights once into
the scratch (mc_widen_s8: one word per tap with both channels' weights, as above; mc_widen_s8_taps
for a single channel) and runs every output pixel with the same taps, reading the input channel(s)
where they lie (no padding) or from a zero-padded plane of them in the scratch (padding: the plane's
border is zeroed once per layer, its inside copied per input channel), so that no pixel gathers.
The "weights": "s16" knob (tuning) keeps int16-pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from microcompiler.ops.fast import s16
from microcompiler.ops.plan import KernelPlan, Variant, dsp_or_c

INT16_PAIRS = Variant("int16-pairs")
INT16_PAIR_PLANES = Variant("int16-pair-planes")

UNROLL_MAX_TAPS = 16  # taps written out one per line up to this kernel size; above, a loop over the
# kernel rows with a row's taps written out (up to this width), else a loop over the taps


def channel_rows(w) -> np.ndarray:
    """The weights [output channels, taps] of the [1, kernel_h, kernel_w, output channels] tensor."""
    return w.data.astype(np.int8).reshape(-1, w.shape[3]).T


# Largest zero-padded plane (int16-pair-planes, in the kernel scratch); above, int16-pairs.
MAX_PLANE_BYTES = 8 * 1024


def plan(g, multiplier: int, w, features, weights: str | None = None) -> KernelPlan | None:
    """int16-pair-planes (int8 weights in flash) unless ``weights`` is "s16" (the tuning knob) or its
    plane would exceed MAX_PLANE_BYTES, then int16-pairs; None where one int32 sum could overflow
    (the reference then)."""
    if int(np.abs(channel_rows(w).astype(np.int64)).sum(axis=1).max()) * s16.MAX_ABS_X > s16.INT32_MAX:
        return None
    pairs = "channels" if multiplier == 1 else ("multiplier" if multiplier % 2 == 0 else "none")
    isa = dsp_or_c(features)
    plane = Plane.of(g, pairs)
    if weights != "s16" and plane.nbytes <= MAX_PLANE_BYTES:
        wide = 4 * max(_even(g.k_h * g.k_w), -(-g.k_h * g.k_w // 4) * 4)
        return KernelPlan.of(INT16_PAIR_PLANES, isa, scratch_bytes=wide + plane.nbytes, pairs=pairs, weights="s8")
    return KernelPlan.of(INT16_PAIRS, isa, scratch_bytes=2 * g.k_h * g.k_w * g.in_c, pairs=pairs, weights="s16")


def _even(n: int) -> int:
    return n + n % 2


@dataclass(frozen=True)
class Plane:
    """Where int16-pair-planes reads a pixel's taps: the input itself (no padding: ``height`` 0), or
    a zero-padded plane of the pair's input channel(s), ``height`` x ``width`` positions of
    ``per_position`` int16 (2 for a pair of channels, 1 for one channel), the image at (top, left)."""

    height: int
    width: int
    top: int
    left: int
    per_position: int

    @classmethod
    def of(cls, g, pairs: str) -> Plane:
        if not (g.bounds_check("y") or g.bounds_check("x")):
            return cls(0, 0, 0, 0, 2 if pairs == "channels" else 1)
        reach_h = (g.out_h - 1) * g.stride_h + (g.k_h - 1) * g.dil_h + 1
        reach_w = (g.out_w - 1) * g.stride_w + (g.k_w - 1) * g.dil_w + 1
        height = max(reach_h, g.pad_h + g.in_h)
        width = max(reach_w, g.pad_w + g.in_w)
        return cls(height, width, g.pad_h, g.pad_w, 2 if pairs == "channels" else 1)

    @property
    def nbytes(self) -> int:
        return 2 * self.height * self.width * self.per_position


def pack(rows: np.ndarray, pairs: str) -> np.ndarray:
    """Words [group][tap] of int16 pairs: output channels (2p, 2p + 1) per group in the pair modes
    (an odd last channel with 0 in the high half), every channel alone (high half 0) otherwise."""
    n, taps = rows.shape
    r = rows.astype(np.int64)
    paired = n // 2 * 2 if pairs != "none" else 0
    lo = np.concatenate([r[0:paired:2], r[paired:]])
    hi = np.concatenate([r[1:paired:2], np.zeros((n - paired, taps), np.int64)])
    words = (lo & 0xFFFF) | ((hi & 0xFFFF) << 16)
    return ((words + 2**31) % 2**32 - 2**31).astype(np.int32).reshape(-1)


def emit(op, ctx, plan_: KernelPlan, g, bias, multiplier: int) -> str:
    rows = channel_rows(ctx.tensor(op.inputs[1]))
    e = s16.conv_epilogue(op, ctx, rows, bias)
    taps = g.k_h * g.k_w
    layout = {
        "channels": "per pair of channels (c, c + 1)",
        "multiplier": "per pair of output channels of one input",
        "none": "per output channel (high half 0)",
    }[plan_.knob("pairs")]
    weights = ctx.const(
        "weights",
        pack(rows, plan_.knob("pairs")),
        comment=(
            f"weights [{g.out_c} output channels][{taps} taps (ky, kx)] as int16 pairs {layout}, the taps of a pair "
            "consecutive"
        ),
    )
    return s16.render_conv(
        ctx,
        "depthwise_conv_2d_s16.c.j2",
        op,
        g,
        e,
        weights,
        taps=taps,
        m=multiplier,
        pairs=plan_.knob("pairs"),
        unroll=taps <= UNROLL_MAX_TAPS,
        row_unroll=1 < g.k_w <= UNROLL_MAX_TAPS,
        scratch=ctx.scratch(plan_.scratch),
        isa=plan_.isa,
    )


def pack_s8(rows: np.ndarray, pairs: str) -> np.ndarray:
    """int8 words of int16-pair-planes in the order its channel loop widens them: per pair of output
    channels (a, b) (the pair modes) per 2 taps (a[t], a[t + 1], b[t], b[t + 1]) (mc_widen_s8: the
    words (a[t], b[t]), (a[t + 1], b[t + 1])), the taps zero-padded to even; then each channel alone
    (mode "none", the odd last channel of "channels") as its taps in order, zero-padded to 4
    (mc_widen_s8_taps)."""
    n, taps = rows.shape
    r = rows.astype(np.int8)
    paired = n // 2 * 2 if pairs != "none" else 0
    te, t4 = _even(taps), -(-taps // 4) * 4
    parts = []
    if paired:
        a = np.pad(r[0:paired:2], ((0, 0), (0, te - taps))).reshape(paired // 2, -1, 2)
        b = np.pad(r[1:paired:2], ((0, 0), (0, te - taps))).reshape(paired // 2, -1, 2)
        parts.append(np.concatenate([a, b], axis=2).reshape(-1))
    if n > paired:
        parts.append(np.pad(r[paired:], ((0, 0), (0, t4 - taps))).reshape(-1))
    return np.concatenate(parts).view("<i4").astype(np.int32)


def emit_planes(op, ctx, plan_: KernelPlan, g, bias, multiplier: int) -> str:
    rows = channel_rows(ctx.tensor(op.inputs[1]))
    e = s16.conv_epilogue(op, ctx, rows, bias)
    taps = g.k_h * g.k_w
    pairs = plan_.knob("pairs")
    weights = ctx.const(
        "weights",
        pack_s8(rows, pairs),
        comment=(
            f"weights [{g.out_c} output channels][{taps} taps (ky, kx)] int8, 4 per word in the order "
            + (
                "the channel loop widens them: per pair of output channels per 2 taps (a[t], a[t + 1], b[t], b[t + 1])"
                if pairs != "none"
                else "the channel loop widens them"
            )
            + (", then " if pairs == "channels" and g.out_c % 2 else "")
            + ("each channel's taps zero-padded to 4" if pairs == "none" or g.out_c % 2 else "")
        ),
    )
    return s16.render_conv(
        ctx,
        "depthwise_conv_2d_s16_planes.c.j2",
        op,
        g,
        e,
        weights,
        taps=taps,
        pair_words=_even(taps) // 2,
        single_words=-(-taps // 4),
        wide_words=max(_even(taps), -(-taps // 4) * 4),
        m=multiplier,
        pairs=pairs,
        plane=Plane.of(g, pairs),
        unroll=taps <= UNROLL_MAX_TAPS,
        row_unroll=1 < g.k_w <= UNROLL_MAX_TAPS,
        scratch=ctx.scratch(plan_.scratch),
        isa=plan_.isa,
    )
