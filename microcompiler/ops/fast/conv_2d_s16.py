"""CONV_2D, int16x8 (int16 activations, int8 weights), one group: the "int16-pixel" fast kernel
(template conv_2d_s16.c.j2). Per output pixel the receptive field (kernel_h x kernel_w x channels
int16, padding taps 0: int16 activations have zero point 0) is gathered into an int16 row of the
kernel scratch, zero-padded to a multiple of 4; each block of 4 output channels is then one pass
over the row (mc_dot4_s16: the row's pairs as they lie in memory, the weights stored as int16 pairs
interleaved for the 4 channels: 2 loads + 8 SMLAD per 16 MACs), the output channels % 4 one by one
(mc_dot1_s16). The 32-bit partial sums are proven exact and added into int64 (ops/fast/s16.py), so
the result is TFLM's int64 accumulation bit for bit. The plan is Conv2D.kernel_plan in ops/conv_2d.py.

That kernel needs the weights as int16 pairs in flash, twice the model file's int8 weights. The
default, "int16-blocks" (template conv_2d_s16_blocks.c.j2), keeps them int8 (4 bytes per 4 weights,
ordered for SXTB16: s16.pack_widened) and swaps the loops: per block of 4 output channels it widens
their weights once into int16 pairs in the kernel scratch (mc_widen_s8), then runs every output pixel
with the same mc_dot4_s16 inner loop, reading the receptive field where it lies in the input, one
"segment" per kernel row (kernel_w x channels consecutive int16; per tap with a horizontal dilation),
each segment's taps zero-padded to even in the weights. Pixels whose window crosses the border are
gathered into a zero-padded row first, as above. Widening costs 2 SXTB16 per 4 weights once per layer,
not per pixel, and the gather goes away for interior pixels. The "weights": "s16" knob (tuning) keeps
int16-pixel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from microcompiler.ops.fast import s16
from microcompiler.ops.plan import KernelPlan, Variant, dsp_or_c

INT16_PIXEL = Variant("int16-pixel")

# Largest widened block (4 output channels' weights as int16 pairs, in the kernel scratch) the
# int16-blocks kernel may use; above, int16-pixel (int16 pairs in flash, a row of 2 bytes per tap).
MAX_WIDE_BYTES = 8 * 1024
# int16-blocks writes the segments of a pixel out one after the other up to this many (else loops
# over the kernel rows), and a segment's steps of 4 taps up to this many (else mc_dot4_s16's loop):
# the loop overheads would cost more than the gather of int16-pixel on short segments.
UNROLL_SEGMENTS = 4
UNROLL_STEPS = 4


INT16_BLOCKS = Variant("int16-blocks")


def plan(g, features, w_rows: np.ndarray, weights: str | None = None) -> KernelPlan:
    """int16-blocks (int8 weights in flash) where it costs no more instructions (blocks_pay_off) or
    ``weights`` (the tuning knob) is "s8", unless the widened block would take more than
    MAX_WIDE_BYTES of scratch or a segment's 32-bit sum could overflow where TFLM sums in int64;
    int16-pixel otherwise, and for "s16". ``w_rows``: the weights [output channels, taps]."""
    isa = dsp_or_c(features)
    s = Segments.of(g)
    chosen = weights == "s8" or (weights != "s16" and blocks_pay_off(g, s))
    if chosen and 16 * s.pairs <= MAX_WIDE_BYTES and s.runs_fit(w_rows):
        scratch = 16 * s.pairs + (2 * g.k_h * g.k_w * g.in_c if s.border_pixels(g) else 0)
        return KernelPlan.of(INT16_BLOCKS, isa, scratch_bytes=scratch, out_channels=4, weights="s8")
    return KernelPlan.of(INT16_PIXEL, isa, scratch_bytes=4 * _words(g), out_channels=4, weights="s16")


# What the choice between the two kernels weighs (instructions, Cortex-M4): gathering one segment
# of a border pixel's window (a memcpy or memset call) and one more segment's loop set-up.
GATHER_CALL = 16
SEGMENT_SETUP = 4


def blocks_pay_off(g, s: Segments) -> bool:
    """Whether int16-blocks costs no more instructions than int16-pixel: int16-pixel gathers every
    pixel's window once (one memcpy per segment), int16-blocks gathers the border pixels' windows
    once per block of output channels and sets up each segment's loop per block. First layers with
    one or three input channels, short kernel rows and many border pixels (a keyword spotter's
    10 x 4 convolution of a 49 x 10 input) gather more than they save: int16-pixel for them."""
    blocks = -(-g.out_c // 4)
    pixels = g.batches * g.out_h * g.out_w
    gather = s.count * (GATHER_CALL + s.length // 4)
    extra = border_pixel_count(g) * blocks * gather + pixels * blocks * (s.count - 1) * SEGMENT_SETUP
    return extra <= pixels * gather


def border_pixel_count(g) -> int:
    """Output pixels whose window reaches outside the image."""

    def inside(out, stride, pad, k, dil, size):
        o = np.arange(out) * stride - pad
        return int(np.count_nonzero((o >= 0) & (o + (k - 1) * dil < size)))

    ys = inside(g.out_h, g.stride_h, g.pad_h, g.k_h, g.dil_h, g.in_h)
    xs = inside(g.out_w, g.stride_w, g.pad_w, g.k_w, g.dil_w, g.in_w)
    return g.batches * (g.out_h * g.out_w - ys * xs)


@dataclass(frozen=True)
class Segments:
    """How int16-blocks reads a receptive field: ``count`` runs of ``length`` consecutive int16 (a
    kernel row kernel_w x channels, or with a horizontal dilation one tap's channels), each run's
    weights zero-padded to even (``pairs`` pair words per output channel in all)."""

    length: int
    per_row: int  # segments per kernel row: 1, or kernel_w with a horizontal dilation
    count: int

    @classmethod
    def of(cls, g) -> Segments:
        per_row = g.k_w if (g.dil_w > 1 and g.k_w > 1) else 1
        length = g.in_c if per_row > 1 else g.k_w * g.in_c
        return cls(length, per_row, g.k_h * per_row)

    @property
    def pairs(self) -> int:
        return self.count * -(-self.length // 2)

    @property
    def main(self) -> int:
        """Pair words per segment for mc_dot4_s16 / mc_dot1_s16 (4 taps per step)."""
        return self.length // 4 * 2

    def rows(self, w_rows: np.ndarray) -> np.ndarray:
        """The weights [output channels, 2 * pairs]: per segment its taps, zero-padded to even."""
        segs = w_rows.reshape(len(w_rows), self.count, self.length)
        return np.pad(segs, ((0, 0), (0, 0), (0, self.length % 2))).reshape(len(w_rows), -1)

    def runs_fit(self, w_rows: np.ndarray) -> bool:
        """Every segment's int32 sum is exact (|x| <= 2^15): the int64 runs are the segments."""
        segs = np.abs(w_rows.astype(np.int64)).reshape(len(w_rows), self.count, self.length).sum(axis=2)
        return int(segs.max(initial=0)) * s16.MAX_ABS_X <= s16.INT32_MAX

    def border_pixels(self, g) -> bool:
        return bool(g.bounds_check("y") or g.bounds_check("x"))


def _words(g) -> int:
    """Pair words of the gathered row: K = kernel_h * kernel_w * channels rounded up to 4 taps."""
    return -(-g.k_h * g.k_w * g.in_c // 4) * 2


def emit(op, graph, ctx, plan_: KernelPlan, g, bias) -> str:
    w_rows = ctx.tensor(op.inputs[1]).data.astype(np.int8).reshape(g.out_c, -1)  # [oc][ky][kx][c]
    words = _words(g)
    e = s16.conv_epilogue(op, ctx, w_rows, bias)
    chunk = s16.chunk_words(w_rows, words, e.wide)
    ctx.note(chunk=2 * chunk if chunk < words else 0)
    weights = ctx.const(
        "weights",
        s16.pack_rows(w_rows, words),
        comment=(
            f"weights [{g.out_c} output channels][{2 * words} taps (ky, kx, c), zero-padded] as int16 pairs (low half "
            "first), the channels in blocks of 4 interleaved per pair, then the channels % 4"
        ),
    )
    return s16.render_conv(
        ctx,
        "conv_2d_s16.c.j2",
        op,
        g,
        e,
        weights,
        words=words,
        chunk=chunk,
        k=g.k_h * g.k_w * g.in_c,
        scratch=ctx.scratch(plan_.scratch),
        isa=plan_.isa,
        full=g.out_c // 4 * 4,
    )


def emit_blocks(op, graph, ctx, plan_: KernelPlan, g, bias) -> str:
    w_rows = ctx.tensor(op.inputs[1]).data.astype(np.int8).reshape(g.out_c, -1)  # [oc][ky][kx][c]
    seg = Segments.of(g)
    e = s16.conv_epilogue(op, ctx, w_rows, bias)
    runs = s16.chunk_words(w_rows, seg.pairs, e.wide) < seg.pairs  # one int32 sum could overflow
    ctx.note(chunk=seg.length if runs else 0)
    block_words, row_words = s16.widened_words(g.out_c, seg.pairs)
    what = "kernel row (kernel_w x channels)" if seg.per_row == 1 else "tap (channels)"
    weights = ctx.const(
        "weights",
        s16.pack_widened(seg.rows(w_rows)),
        comment=(
            f"weights [{g.out_c} output channels][{2 * seg.pairs} taps: per {what} {seg.length} taps"
            + (", zero-padded to even" if seg.length % 2 else "")
            + "] int8, 4 per word in the order mc_widen_s8 widens them into int16 pairs: per block of 4 channels"
            " and pair of taps the channels (0, 1) then (2, 3), then the channels % 4 alone"
        ),
    )
    return s16.render_conv(
        ctx,
        "conv_2d_s16_blocks.c.j2",
        op,
        g,
        e,
        weights,
        seg=seg,
        runs=runs,
        block_words=block_words,
        row_words=row_words,
        interior=_interior(g),
        unroll_segments=UNROLL_SEGMENTS,
        unroll_steps=UNROLL_STEPS,
        scratch=ctx.scratch(plan_.scratch),
        isa=plan_.isa,
        full=g.out_c // 4 * 4,
    )


def _interior(g) -> str | None:
    """The C condition under which the window of the output pixel at (iy0, ix0) lies inside the
    image ("1": always; None: never, every pixel gathers)."""
    conds = []
    for v, size, k, dil, pad, out, stride in (
        ("iy0", g.in_h, g.k_h, g.dil_h, g.pad_h, g.out_h, g.stride_h),
        ("ix0", g.in_w, g.k_w, g.dil_w, g.pad_w, g.out_w, g.stride_w),
    ):
        reach = (k - 1) * dil
        if reach >= size:
            return None
        if pad > 0:
            conds.append(f"{v} >= 0")
        if (out - 1) * stride + reach - pad >= size:
            conds.append(f"{v} + {reach} < {size}" if reach else f"{v} < {size}")
    return " && ".join(conds) or "1"
