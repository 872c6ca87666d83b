"""DEPTHWISE_CONV_2D, int8, an even depth multiplier, in portable C (no DSP extension): the
"packed-rows" kernel (template depthwise_conv_2d_packed_rows.c.j2; micro_speech's 10x8 layer of one
input channel and 8 output channels). With the long multiply (Armv7-M, the host: MC_LONG_MULTIPLY)
each input row is packed once, with its padding, into a ring of kernel-height rows in the scratch:
P[c] = x[c] + x[c + stride] * 2^L (padded columns, lane_bits). Per output row 4 pixels x 2 output
channels per step: the words P[ox s + kx d] (pixels 0 and 1) and P[ox s + 2 s + kx d] (pixels 2 and
3) times the two channels' weights, 4 SMLAL of the 4 64-bit sums per tap: per tap 2 LDR, 2 LDRSB and
4 SMLAL for 8 MACs, 1.0 instructions per MAC in the loop (the rows kernel: 1.7). The sums start at
2^(L - 1) so that the low lane is (S mod 2^L) - 2^(L - 1) and the high one S >> L (MC_LANE0_OFS).
Weights and requantization records are the rows kernel's (int8 [channel][ky][kx], 9-byte records);
without the long multiply (Armv6-M) the layer runs the rows kernel's C on them.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.conv_common import geometry
from microcompiler.ops.fast import depthwise_conv_2d_rows as rows_kernel
from microcompiler.ops.fast.conv_2d_pointwise import lane_bits
from microcompiler.ops.plan import ISA_C, KernelPlan, Variant

PACKED_ROWS = Variant("packed-rows", ("kernel_simd.h", "kernel_portable.h"))
PIXELS = 4  # output pixels per step (two packed words)


def _lane(op, graph) -> int:
    g = geometry(op, graph)
    return lane_bits(rows_kernel._taps(op, graph).T.reshape(g.out_c, -1))


def fits(op, graph) -> bool:
    """The rows kernel's conditions (its C is the Cortex-M0 path), an even depth multiplier (channel
    pairs of one input channel) and a lane width for the weights (128 sum|w| < 2^22 per channel)."""
    g = geometry(op, graph)
    mult = op.options.get("depth_multiplier", 1)
    return mult % 2 == 0 and g.out_c == g.in_c * mult and rows_kernel.fits(op, graph) and _lane(op, graph) > 0


def ring(g) -> tuple[int, int]:
    """(rows, words per row) of the ring of packed rows: the padded input rows one output row reads,
    and the packed words its groups of PIXELS pixels read."""
    groups = -(-g.out_w // PIXELS)
    rows = (g.k_h - 1) * g.dil_h + 1
    words = g.stride_w * (PIXELS * groups - 2) + (g.k_w - 1) * g.dil_w + 1
    return rows, words


def plan(op, graph) -> KernelPlan:
    g = geometry(op, graph)
    rows, words = ring(g)
    return KernelPlan.of(
        PACKED_ROWS,
        ISA_C,
        scratch_bytes=8 * rows * words,
        channels=2,
        pixels=PIXELS,
        weights="s8",
        lane=_lane(op, graph),
    )


def edge_words(g, words: int) -> tuple[list[tuple[int, int | None, int | None]], int, int]:
    """The packed words of a row with a padding lane: (word, input column of lane 0 or None, of lane 1
    or None), and the range [lo, hi) of the words whose both lanes are inside (a loop)."""
    lo = max(0, g.pad_w)
    hi = max(lo, min(words, g.in_w + g.pad_w - g.stride_w))

    def col(c: int) -> int | None:
        i = c - g.pad_w
        return i if 0 <= i < g.in_w else None

    return [(k, col(k), col(k + g.stride_w)) for k in range(words) if not lo <= k < hi], lo, hi


def emit(op, graph, ctx, plan) -> str:
    g = geometry(op, graph)
    values = rows_kernel.values(op, graph, ctx)
    rows, words = ring(g)
    edges, lo, hi = edge_words(g, words)
    lane = plan.knob("lane")
    return ctx.render(
        "depthwise_conv_2d_packed_rows.c.j2",
        rows_c=ctx.render("depthwise_conv_2d_rows.c.j2", **values),
        ring_rows=rows,
        words=words,
        edges=edges,
        lo=lo,
        hi=hi,
        lane=lane,
        zp2=int(np.int32(values["input_offset"] + values["input_offset"] * 2**lane)),
        groups=-(-g.out_w // PIXELS),
        scratch=ctx.scratch(8 * rows * words),
        **values,
    )
