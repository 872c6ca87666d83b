"""CONV_2D, int8, one group, the "im2col" fast kernel (template conv_2d_im2col.c.j2): 4 output pixels
x 1 output channel per inner loop over the im2col columns of 4 pixels (gathered into the scratch
buffer, padding taps filled with the input zero point), the input zero point folded into the bias,
weights as int8 words (SXTB16), in the "lanes" encoding (kernel_lanes.h: one SXTB16 per word for the
4 pixels) or pre-extended int16 pairs (SMLAD). The plan (which kernel, its knobs) is Conv2D.kernel_plan in
ops/conv_2d.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from microcompiler.ops.conv_common import bias_tensor, geometry
from microcompiler.ops.fast import packing as fast
from microcompiler.ops.plan import Variant
from microcompiler.ops.quant import activation_range

IM2COL = Variant("im2col", ("kernel_simd.h",))
# portable C: 2 output channels per pass over a column of at least this many groups of 4 inputs
PAIRS_MIN_STEPS = 9
BIAS_START_MIN_STEPS = 32  # 1x1 layers start their sums inside the first SMLAD from 128 input channels


def emit_im2col(op, graph, ctx, plan) -> str:
    x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    g = geometry(op, graph)
    w_rows = w.data.astype(np.int8).reshape(g.out_c, -1)  # [oc][ky][kx][c]
    s16 = plan.knob("weights") == "s16"
    zp = int(x.quant.zero_point[0])
    rq = fast.requant_setup(x, w, y, bias_tensor(op, graph), w_rows, op)
    folded, mult, c, r, is_fast = rq.folded, rq.mult, rq.c, rq.r, rq.fast
    y_zp = int(y.quant.zero_point[0])
    ctx.note(requant="smmlar" if is_fast else "reference")
    scale = 2 if s16 and is_fast else 1  # int16 weights and bias doubled: the accumulator is 2 * acc
    lanes = plan.knob("extract") == "lanes"
    direct = None
    if s16:
        words, steps = fast.pack_s16_rows(w_rows.astype(np.int32) * scale)
        w_comment = (
            f"weights [{g.out_c} output channels][{words.shape[1]} words]: per 4 taps (ky, kx, c) the int16 "
            "pairs (k0,k2) (k1,k3)" + (", doubled" if scale == 2 else "")
        )
    elif lanes:  # 256-scaled accumulators from the lanes bias; no doubling (acc >> 7 = 2 * acc)
        direct = direct_layout(g)
        words, folded = im2col_lanes(direct.permute(w_rows) if direct else w_rows, folded)
        steps = words.shape[1]
        w_comment = (
            f"weights [{g.out_c} output channels][{words.shape[1]} words]: per 4 taps (ky, kx, c) the "
            "lanes (k0 + 256 k1, k2 + 256 k3), zero-padded"
            + (
                f"; taps in the column's order: per kernel row {direct.words} word{'s' if direct.words != 1 else ''}"
                + (
                    f" ({direct.over} zero byte{'s' if direct.over > 1 else ''} after each row, before the last)"
                    if direct.over
                    else ""
                )
                + (f", then the last {direct.leftover} bytes of every row" if direct.leftover else "")
                if direct
                else ""
            )
        )
    else:
        words, steps = fast.pack_s8_words(w_rows)
        w_comment = (
            f"weights [{g.out_c} output channels][{words.shape[1]} words]: 4 int8 taps (ky, kx, c) "
            "per word, zero-padded"
        )
    row_words = words.shape[1]
    row_bytes = 4 * row_words  # a weight row's place in the weights
    if not s16 and not lanes and plan.isa == "dsp" and w_rows.shape[1] % 4:
        # no padding in flash: the rows overlap (the column's padding taps are zero), read as
        # unaligned words, which every core with the DSP extension allows
        words, row_bytes = fast.overlapped_rows(w_rows), w_rows.shape[1]
        w_comment = (
            f"weights [{g.out_c} output channels][{row_bytes} int8 taps (ky, kx, c)], then zeros for the "
            f"last row's final word: each row is read as {steps} words, the last one reaching into the next "
            "row (against the column's zero taps)"
        )
    lo, hi = activation_range(op.options["activation"], y)
    npix = g.out_h * g.out_w
    bias_name = "lanes accumulator start" if lanes else "folded bias"
    # one multiplier for every channel (per-tensor weights): literal constants, the bias alone
    uniform: bool | tuple[int, int, int] = len(set(zip(mult.tolist(), c.tolist(), r.tolist()))) == 1
    record = "uniform" if uniform else "reference"  # how the epilogue reads the requantization
    if uniform:
        params = ctx.const(
            "bias",
            fast.wrap32(folded * scale),
            comment=f"bias [{g.out_c}] with the input zero point folded in"
            + (", doubled" if scale == 2 else "")
            + (" (lanes: 256 * bias - 127 * sum of the even weights)" if lanes else ""),
        )
        uniform = (int(mult[0]), int(c[0]), int(r[0]))
    elif is_fast and lanes:  # 8 bytes: the accumulators end at 256 * acc + r
        record = "start_r"
        params = ctx.const(
            "params",
            fast.channel_records_start_r(folded, mult, r),
            comment=f"per output channel [{g.out_c}] {{lanes accumulator start + right shift r, "
            "multiplier}: the accumulators end at 256 * acc + r, r in their low byte",
        )
    elif is_fast and plan.isa == "dsp" and fast.fits_packed_bias(folded * scale):
        # 8 bytes: {bias << 8 | r, multiplier} (without the DSP extension the portable dot product needs
        # every register, and the extra value costs more than the byte saved: 9-byte records there)
        record = "bias_r"
        params = ctx.const(
            "params",
            fast.channel_records_packed(folded * scale, r, mult),
            comment=f"per output channel [{g.out_c}] {{{bias_name}"
            + (" (doubled)" if scale == 2 else "")
            + " << 8 | right shift r, multiplier}",
        )
    elif is_fast:  # {bias, multiplier, r} in 9 bytes; c from r in the epilogue
        record = "r9"
        params = ctx.const(
            "params",
            fast.channel_records9(folded * scale, mult, r),
            comment=f"per output channel [{g.out_c}] {{{bias_name}, multiplier}} (int32, "
            "little-endian) and the right shift (int8): 9 bytes",
        )
    else:
        params = ctx.const(
            "params",
            fast.channel_params(folded * scale, mult, c, r),
            comment=f"per output channel [{g.out_c}] {{{bias_name}, multiplier, shift, 0}}",
        )
    contiguous = g.k_h == g.k_w == 1 and g.stride_h == g.stride_w == 1 and g.always_inside and g.in_c % 4 == 0
    return ctx.render(
        "conv_2d_im2col.c.j2",
        g=g,
        describe=g.describe(),
        input=ctx.arg(op.inputs[0]),
        output=ctx.arg(op.outputs[0]),
        weights=ctx.const("weights", words.reshape(-1), comment=w_comment),
        row_bytes=row_bytes,
        params=params,
        uniform=uniform,
        record=record,
        stride={"uniform": 1, "r9": fast.RECORD9, "reference": 4}.get(record, 2),
        scratch=ctx.scratch(plan.scratch),
        steps=steps,
        words=row_words,
        s16=s16,
        isa=plan.isa,
        taps_mode=g.in_c % 4 == 0,
        zp=zp,
        zp_pair=_pair(zp),
        npix=npix,
        lanes=lanes,
        direct=direct,
        # 1x1, stride 1, no padding: the 4 pixels' inputs one after the other (no row and column count)
        contiguous=contiguous,
        lanes_zp=(_pair(zp), _pair(255 * zp + 127)),
        full=npix // 4,
        tail=npix % 4,
        # a tail of 1 or 2 pixels: dot products on those pixels only (mc_dot_narrow, kernel_simd.h); in
        # portable C the lanes encoding's 4-pixel loop is cheaper than its pairs (KWS on the M3 +0.1%)
        narrow_tail=(plan.isa == "dsp" or not lanes) and npix % 4 in (1, 2) and row_bytes % 4 == 0,
        # portable C: full groups of 4 pixels run 2 output channels per pass (mc_dot_p4x2_s8, signed
        # sums: r9 records need |acc| < 2^30), where the column is long enough to pay for its code
        # (PAIRS_MIN_STEPS: IC's first layer (7 groups) and 1x1 shortcuts (4, 8) keep mc_dot_p4: less flash)
        pairs_of_channels=plan.isa == "c"
        and record == "r9"
        and not s16
        and not lanes
        and row_bytes % 4 == 0
        and g.out_c >= 2
        and steps >= PAIRS_MIN_STEPS,
        # DSP, lanes: the sums start at the record's first word inside the first SMLAD
        # (mc_dot_p4_s8l_b, kernel_lanes.h: 3 MOVs fewer per output channel and 4 pixels); where the
        # column is a multiple of 4 steps that costs ~170 bytes of code per layer, so only in 1x1
        # convolutions of at least 128 input channels (32 steps: MobileNet's wide pointwise layers,
        # VWW -0.8% on the M7), not KWS's 64-channel ones or IC's 3x3 layers, whose flash may not grow
        bias_start=plan.isa == "dsp" and lanes and (steps % 4 != 0 or (contiguous and steps >= BIAS_START_MIN_STEPS)),
        fast=is_fast,
        act_min=lo,
        act_max=hi,
        output_offset=y_zp,
    )


def _pair(v: int) -> int:
    """v in both int16 halves of a word."""
    return int(fast.pairs(np.array([v]), np.array([v]))[0])


def lanes_ok(op, graph) -> bool:
    """im2col_lanes_ok for the operator's constant weights and bias (Conv2D.kernel_plan)."""
    x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
    bias = bias_tensor(op, graph)
    w_rows = w.data.astype(np.int8).reshape(w.shape[0], -1)
    b = bias.data.astype(np.int64) if bias is not None else np.zeros(w.shape[0], np.int64)
    folded = b - int(x.quant.zero_point[0]) * w_rows.astype(np.int64).sum(axis=1)
    layout = direct_layout(geometry(op, graph))
    return im2col_lanes_ok(layout.permute(w_rows) if layout else w_rows, folded)


@dataclass(frozen=True)
class DirectLayout:
    """The lanes column of a layer whose input channels are not a multiple of 4 (a stem on RGB or
    grayscale pixels), gathered straight from the input rows instead of through a byte buffer: each
    kernel row (k_w * C contiguous bytes) gives ``words`` groups of 4 read as unaligned words; with
    ``over`` > 0 the words cover ``over`` bytes more than the row (zero weights): past its end, and for
    the last kernel row before its start instead, so no word reads outside the input (the byte
    after every other row is in the input, the rows below exist). The ``leftover`` bytes at the end of
    every row are packed 4 to a group after them. The weights are stored in that order (``permute``),
    with zeros for the extra bytes and the last group's padding."""

    row_bytes: int  # k_w * C
    rows: int  # k_h
    words: int  # word groups per kernel row
    over: int  # bytes the words of a row read besides its taps (at most C: one pixel)
    leftover: int  # bytes per row after its words, packed into the last groups

    @property
    def steps(self) -> int:
        return self.rows * self.words + -(-self.rows * self.leftover // 4)

    def order(self) -> list[int | None]:
        """Per column position: the tap (ky * row_bytes + j) it holds, or None (a zero weight)."""
        taps: list[int | None] = []
        for ky in range(self.rows):
            first = self.start(ky)
            taps += [
                ky * self.row_bytes + j if 0 <= j < self.row_bytes else None
                for j in range(first, first + 4 * self.words)
            ]
        left = [ky * self.row_bytes + j for ky in range(self.rows) for j in range(4 * self.words, self.row_bytes)]
        taps += left + [None] * (-len(left) % 4)
        return taps

    def start(self, ky: int) -> int:
        """Where kernel row ky's first word starts, relative to the row: the last row's words end
        with it (they start ``over`` bytes before it)."""
        return -self.over if ky == self.rows - 1 else 0

    def leftover_groups(self) -> list[list[tuple[int, int]]]:
        """The leftover groups: per group, the (kernel row, byte in the row) of its bytes."""
        left = [(ky, j) for ky in range(self.rows) for j in range(4 * self.words, self.row_bytes)]
        return [left[i : i + 4] for i in range(0, len(left), 4)]

    def permute(self, w_rows: np.ndarray) -> np.ndarray:
        out = np.zeros((w_rows.shape[0], 4 * self.steps), np.int8)
        for i, tap in enumerate(self.order()):
            if tap is not None:
                out[:, i] = w_rows[:, tap]
        return out


def direct_layout(g) -> DirectLayout | None:
    """The direct column layout of an im2col layer in the lanes encoding (DirectLayout), for input
    channels not a multiple of 4 and contiguous taps along a row (border pixels go through the byte
    buffer); None where it does not apply or would need more groups than the byte buffer's column
    (the scratch stays the same)."""
    if g.in_c % 4 == 0 or g.dil_w != 1:
        return None
    row = g.k_w * g.in_c
    same = -(-g.k_h * row // 4)
    padded = DirectLayout(row, g.k_h, -(-row // 4), -row % 4, 0)
    if g.k_h > 1 and padded.over <= g.in_c and padded.steps == same:
        return padded
    split = DirectLayout(row, g.k_h, row // 4, 0, row % 4)
    return split if split.steps == same else None


# The lanes im2col saves one instruction per 4 inputs and output channel in the dot product and
# costs one more per 4 inputs and pixel in the gather (SXTB16, REV16 and EOR for P and Q instead of
# two SXTB16): it pays from a few output channels on (IC's 16-channel layers on the M4: 12,086,880
# -> 11,720,840 instructions; it cost 3 more per group before Q was REV16 ^ 0x007F007F).
LANES_MIN_OUT_CHANNELS = 4


def im2col_lanes_ok(w_rows: np.ndarray, folded: np.ndarray) -> bool:
    """Whether the im2col kernel reads its int8 weights in the lanes encoding (kernel_lanes.h): it
    pays (LANES_MIN_OUT_CHANNELS), the lanes of every word fit int16 and |acc| < 2^23 (w_rows:
    [channels, K], folded: the bias with the input zero point folded in)."""
    return len(w_rows) >= LANES_MIN_OUT_CHANNELS and fast.lanes_plan(_padded(w_rows), folded)


def im2col_lanes(w_rows: np.ndarray, folded: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(weight words [channels, steps], accumulator start per channel) of the lanes encoding."""
    padded = _padded(w_rows)
    return fast.lanes_words(padded), fast.lanes_bias(padded, folded)


def _padded(w_rows: np.ndarray) -> np.ndarray:
    rows, k = w_rows.shape
    out = np.zeros((rows, -(-k // 4) * 4), np.int8)
    out[:, :k] = w_rows
    return out
