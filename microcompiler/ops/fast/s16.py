"""Compile-time helpers of the fast int16x8 kernels (int16 activations, int8 weights; the C side is
crt/include/microcompiler/kernel_s16.h): the weight re-layout into int16 pairs, the proof that the
32-bit SMLAD partial sums are exact, and the requantization constants.

TFLM's int16x8 CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED sum in int64 and add an int64 bias
(or none), then apply the 64-bit requantize; with an int32 bias they sum in int32 (wrapping) and
apply the 32-bit one. The kernels sum runs of taps in int32 with SMLAD and add each run into int64;
``chunk_words`` picks runs short enough that no run can leave int32, so the int64 total is TFLM's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from microcompiler.ops.quant import activation_range, conv_multipliers

INT32_MAX = 2**31 - 1
MAX_ABS_X = 2**15  # |int16| <= 2^15
# Taps per 32-bit run whatever the weights: 2^15 * 128 * 503 < 2^31 (250 words + a 3-tap tail).
SAFE_RUN_WORDS = 250


def pack_rows(w_rows: np.ndarray, words: int) -> np.ndarray:
    """int32 pair words of the int8 rows [rows, K] (K <= 2 * words, zero-padded): the rows in blocks
    of 4 interleaved per pair (word 4 s + j of a block = pair s of row j), then the rows % 4 tail
    rows one after the other (mc_dot4_s16, mc_dot1_s16)."""
    rows, k = w_rows.shape
    padded = np.zeros((rows, 2 * words), np.int64)
    padded[:, :k] = w_rows
    pair = (padded[:, 0::2] & 0xFFFF) | ((padded[:, 1::2] & 0xFFFF) << 16)  # [rows, words]
    full = rows // 4 * 4
    blocks = pair[:full].reshape(-1, 4, words).transpose(0, 2, 1).reshape(-1)
    return _wrap(np.concatenate([blocks, pair[full:].reshape(-1)]))


def pack_rows_s8(w_rows: np.ndarray) -> np.ndarray:
    """int8 words of the rows [rows, K] for mc_dot4_s16_s8 / mc_dot1_s16_s8: each row zero-padded to
    a multiple of 4 taps, each word's 4 taps stored (w0, w2, w1, w3) so that SXTB16 gives the int16
    pair (w0, w1) and SXTB16 ROR #8 (w2, w3); the rows in blocks of 4 interleaved per word (word
    4 s + j of a block = word s of row j), then the rows % 4 one after the other. 4 bytes per 4
    weights: the model file's size plus the padding of the last word."""
    rows, k = w_rows.shape
    words = -(-k // 4)
    padded = np.zeros((rows, 4 * words), np.int8)
    padded[:, :k] = w_rows
    swapped = padded.reshape(rows, words, 4)[:, :, [0, 2, 1, 3]]
    per_row = np.ascontiguousarray(swapped).reshape(rows, -1).view("<i4").astype(np.int32)  # [rows, words]
    full = rows // 4 * 4
    blocks = per_row[:full].reshape(-1, 4, words).transpose(0, 2, 1).reshape(-1)
    return np.concatenate([blocks, per_row[full:].reshape(-1)])


def pack_widened(w_rows: np.ndarray) -> np.ndarray:
    """int8 words of the rows [rows, 2 * pairs] that mc_widen_s8 turns into pack_rows' int16 pair
    layout, 4 bytes per 4 weights: per block of 4 rows and pair s the words (r0[2s], r1[2s],
    r0[2s + 1], r1[2s + 1]) and (r2[2s], r3[2s], r2[2s + 1], r3[2s + 1]) (SXTB16 gives pair s of
    rows 0 and 2, SXTB16 ROR #8 of rows 1 and 3: the 4 pair words of index s); then each of the
    rows % 4 per 2 pairs (r[2s], r[2s + 2], r[2s + 1], r[2s + 3]), an odd last pair with a zero pair."""
    rows, k = w_rows.shape
    w = np.asarray(w_rows, np.int64)
    full = rows // 4 * 4
    pairs = k // 2
    blocks = w[:full].reshape(-1, 4, pairs, 2)  # [block][row][pair][tap]
    # bytes per block and pair: rows (0, 1) then (2, 3), taps interleaved with rows
    block_bytes = blocks.reshape(-1, 2, 2, pairs, 2).transpose(0, 3, 1, 4, 2).reshape(-1)
    tail = w[full:]
    if pairs % 2:
        tail = np.concatenate([tail, np.zeros((rows - full, 2), np.int64)], axis=1)
    tail_bytes = tail.reshape(rows - full, -1, 2, 2).transpose(0, 1, 3, 2).reshape(-1) if rows > full else tail
    data = np.concatenate([block_bytes, tail_bytes.reshape(-1)]).astype(np.int8)
    return data.view("<i4").astype(np.int32)


def widened_words(rows: int, pairs: int) -> tuple[int, int]:
    """int8 words pack_widened writes per block of 4 rows and per row of the rows % 4."""
    return 2 * pairs, -(-pairs // 2)


def _wrap(values: np.ndarray) -> np.ndarray:
    return ((values.astype(np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def chunk_words(w_rows: np.ndarray, words: int, wide: bool) -> int:
    """Pair words per 32-bit run: all of them when every row's |weights| sum to at most
    INT32_MAX / 2^15 (then no input can overflow the int32 sum), else SAFE_RUN_WORDS. With an
    int32 bias (not ``wide``) TFLM's own sum wraps modulo 2^32 like SMLAD: one run."""
    if not wide:
        return words
    worst = int(np.abs(w_rows.astype(np.int64)).sum(axis=1).max()) * MAX_ABS_X
    return words if worst <= INT32_MAX else min(words, SAFE_RUN_WORDS)


@dataclass
class Epilogue:
    """The requantization of the int16x8 kernels (template macro ``store`` of _s16.j2)."""

    mode: str  # see epilogue()
    bias: str | None  # C name of the bias array
    mult: str  # the multiplier: a literal, or the name of the per-channel array
    shift: str
    per_channel: bool
    act_min: int
    act_max: int

    @property
    def wide(self) -> bool:
        """TFLM sums in int64 (an int64 bias or none)."""
        return self.mode != "int32"

    @property
    def exact32(self) -> bool:
        """|sum + bias| provably fits int32 (the one-multiply requantizations)."""
        return self.mode in ("narrow", "smmulr")


def epilogue(ctx, bias, mult: np.ndarray, shift: np.ndarray, lo: int, hi: int, w_rows: np.ndarray) -> Epilogue:
    """Constants of the requantization: literals for one multiplier, else per-channel arrays.
    ``bias``: the (constant) bias tensor or None; ``w_rows``: the weights [output channels, taps].

    mode "int32": an int32 bias; TFLM sums in int32 (wrapping) and applies the 32-bit requantize.
    mode "wide": TFLM's int64 sum + int64 bias and mc_requantize64.
    mode "narrow": the same where the weights and bias prove |sum + bias| <= INT32_MAX for every
    input: the bias as int32 and mc_requantize64_s32 (one SMULL instead of a 64 x 64-bit multiply)
    with mc_requantize64's reduced multiplier R (< 2^15) and total shift s = 15 - shift computed here.
    mode "smmulr": "narrow" with 16 <= s <= 32 for every channel: floor((x R + 2^(s-1)) / 2^s) =
    floor((x M + 2^31) / 2^32) for M = R * 2^(32-s) < 2^31 (numerator and denominator times
    2^(32-s)), one SMMULR (mc_smmlar with 0); the multiplier M alone per channel."""
    wide = bias is None or bias.dtype == "int64"
    b_data = bias.data.astype(np.int64).reshape(-1) if bias is not None else np.zeros(1, np.int64)
    worst = int(np.abs(w_rows.astype(np.int64)).sum(axis=1).max()) * MAX_ABS_X + int(np.abs(b_data).max())
    total_shift = 15 - shift.astype(np.int64)
    narrow = wide and worst <= INT32_MAX and bool(np.all((total_shift >= 1) & (total_shift <= 62)))
    mode = "narrow" if narrow else ("wide" if wide else "int32")
    if narrow:
        m32 = mult.astype(np.int64)
        reduced = np.where(m32 < 0x7FFF0000, (m32 + (1 << 15)) >> 16, 0x7FFF)
        if bool(np.all((total_shift >= 16) & (total_shift <= 32))):
            mode = "smmulr"
            mult = (reduced << (32 - total_shift)).astype(np.int32)
            shift = np.zeros_like(mult)
        else:
            mult, shift = reduced.astype(np.int32), total_shift.astype(np.int32)
    out_c = len(mult)  # 1: per-tensor
    uniform = len(set(zip(mult.tolist(), shift.tolist()))) == 1
    what = {
        "smmulr": ("multiplier R * 2^(32 - s) (SMMULR)", ""),
        "narrow": ("reduced multiplier", "total right shift"),
    }.get(mode, ("multiplier", "shift"))
    if uniform:
        m, s = str(int(mult[0])), str(int(shift[0]))
    else:
        m = ctx.const("multiplier", mult, comment=f"requantization {what[0]} per output channel [{out_c}]")
        s = (
            ""
            if mode == "smmulr"
            else ctx.const("shift", shift, comment=(f"requantization {what[1]} per output channel [{out_c}]"))
        )
    b = None
    if bias is not None:
        ctype = "int64" if mode == "wide" else "int32"  # narrow, smmulr: |bias| < 2^31 is proven
        b = ctx.const("bias", b_data.astype(ctype), comment=f"bias per output channel [{b_data.size}] ({ctype})")
    return Epilogue(mode, b, m, s, not uniform, lo, hi)


def conv_epilogue(op, ctx, w_rows: np.ndarray, bias) -> Epilogue:
    """The Epilogue of an int16x8 CONV_2D or DEPTHWISE_CONV_2D: TFLM's multipliers per output channel,
    the fused activation's range; ``w_rows``: the weights [output channels, taps]."""
    x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    mult, shift = conv_multipliers(x, w, y, len(w_rows))
    lo, hi = activation_range(op.options["activation"], y)
    return epilogue(ctx, bias, mult, shift, lo, hi, w_rows)


def render_conv(ctx, template: str, op, g, e: Epilogue, weights: str, **values) -> str:
    """An int16x8 convolution's template with what every one of them reads."""
    return ctx.render(
        template,
        g=g,
        describe=g.describe(),
        input=ctx.arg(op.inputs[0]),
        output=ctx.arg(op.outputs[0]),
        weights=weights,
        e=e,
        **values,
    )
