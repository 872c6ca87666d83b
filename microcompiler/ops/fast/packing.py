"""Compile-time helpers of the fast int8 kernels ("dsp" variants, crt/include/microcompiler/kernel_simd.h).

What an ahead-of-time compiler knows and a library cannot: every weight, bias, zero point and
multiplier. The kernels use it to

* fold the input zero point into the bias (bias - input_zp * sum(w), exact modulo 2^32, which is
  TFLM's int32 accumulator) and feed padding taps the input zero point, so that padded and
  interior pixels share one inner loop with no per-tap offset;
* re-lay the weights out in the order the inner loop reads them (int8 words for SXTB16, or
  sign-extended int16 pairs for SMLAD);
* prove from the weights and bias that the accumulator stays below 2^30, which lets the
  requantization run as SMMLAR + shift (``mc_requant_fast``) instead of the 64-bit reference.

The heuristics that pick a variant are documented in docs/benchmarks.md ("Kernel variants").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from microcompiler.ops.quant import conv_multipliers
from microcompiler.ops.requant_float import ort_requant_table

INT32_MAX = 2**31 - 1
FAST_ACC_LIMIT = 2**30  # |acc| below this: 2 * acc fits int32 (mc_requant_fast)
MAX_FAST_SHIFT = 22  # c = 2^(r-1) + zp * 2^r must stay well inside int32
# Largest im2col buffer (bytes, on the stack) the 4-pixel CONV_2D kernel may use.
MAX_COL_BYTES = 8 * 1024


def wrap32(values) -> np.ndarray:
    v = np.asarray(values, dtype=np.int64)
    return ((v + 2**31) % 2**32 - 2**31).astype(np.int32)


def acc_bounds(bias: np.ndarray | None, w_rows: np.ndarray, max_abs_x: int = 255) -> np.ndarray:
    """Per output channel, the largest |accumulator| TFLM's arithmetic can reach:
    |bias| + max|x + input_offset| * sum|w| (w_rows: [channels, taps])."""
    w_abs = np.abs(w_rows.astype(np.int64)).sum(axis=1)
    b = np.abs(bias.astype(np.int64)) if bias is not None else np.zeros(len(w_abs), np.int64)
    return b + max_abs_x * w_abs


def requant_table(mult: np.ndarray, shift: np.ndarray, output_zp: int, bounds: np.ndarray):
    """(fast, c, r) per channel. fast: every channel qualifies for mc_requant_fast (right shift
    1..22, positive multiplier, |acc| < 2^30); then c = 2^(r-1) + zp * 2^r and r = -shift.
    Otherwise c holds the TFLM shift and r is 0 (the kernel calls mc_requantize)."""
    mult = np.asarray(mult, np.int64)
    shift = np.asarray(shift, np.int64)
    fast = bool(
        np.all(mult > 0)
        and np.all(shift <= -1)
        and np.all(shift >= -MAX_FAST_SHIFT)
        and np.all(bounds < FAST_ACC_LIMIT)
    )
    if fast:
        r = -shift
        c = (1 << (r - 1)) + output_zp * (1 << r)
        return True, c.astype(np.int32), r.astype(np.int32)
    return False, shift.astype(np.int32), np.zeros_like(shift, dtype=np.int32)


def pack_s8_words(w_rows: np.ndarray) -> tuple[np.ndarray, int]:
    """int8 [rows, k] -> int32 words [rows, steps] (4 weights per word, little-endian, k zero-padded
    to a multiple of 4). Returns (words, steps)."""
    rows, k = w_rows.shape
    k4 = -(-k // 4) * 4
    padded = np.zeros((rows, k4), np.int8)
    padded[:, :k] = w_rows
    return padded.reshape(-1).view("<i4").reshape(rows, k4 // 4).astype(np.int32), k4 // 4


def overlapped_rows(w_rows: np.ndarray) -> np.ndarray:
    """int8 [rows, k] with k % 4 != 0 -> the rows back to back (row i at byte i * k) and the few
    bytes the last row's final word reads past its end: a kernel that reads each row as 4 * ceil(k / 4)
    bytes against a zero-padded column ignores the next row's first bytes (no padding in flash)."""
    rows, k = w_rows.shape
    tail = -(-k // 4) * 4 - k
    return np.concatenate([np.asarray(w_rows, np.int8).reshape(-1), np.zeros(tail, np.int8)])


def pairs(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Two int16 lanes per int32 (lo in bits 0-15)."""
    lo = lo.astype(np.int64) & 0xFFFF
    hi = hi.astype(np.int64) & 0xFFFF
    return wrap32(lo | (hi << 16))


def pack_s16_rows4(w_rows: np.ndarray) -> np.ndarray:
    """FULLY_CONNECTED weights [rows, depth] for mc_dot_r4: for each block of 4 rows and each group
    of 4 inputs k0..k3, the pairs (k0,k2) (k1,k3) of row 0, then rows 1, 2, 3. The rows left over
    (rows % 4) follow, each as its own stream of (k0,k2) (k1,k3) pairs. depth % 4 trailing inputs
    are not included (the kernel handles them from an int8 table)."""
    rows, depth = w_rows.shape
    steps = depth // 4
    w = w_rows[:, : steps * 4].astype(np.int32).reshape(rows, steps, 4)
    even, odd = pairs(w[:, :, 0], w[:, :, 2]), pairs(w[:, :, 1], w[:, :, 3])  # [rows, steps]
    per_row = np.stack([even, odd], axis=2)  # [rows, steps, 2]
    blocks = rows // 4
    out = []
    if blocks:
        b = per_row[: blocks * 4].reshape(blocks, 4, steps, 2).transpose(0, 2, 1, 3)  # [blk, steps, row, 2]
        out.append(b.reshape(-1))
    if rows % 4:
        out.append(per_row[blocks * 4 :].reshape(-1))
    return np.concatenate(out).astype(np.int32) if out else np.zeros(0, np.int32)


def interleave_rows4(w_rows: np.ndarray) -> np.ndarray:
    """FULLY_CONNECTED int8 weights [rows, depth] for mc_dot_r4_s8i (portable C): per block of 4 rows,
    input by input the 4 rows' weights ([depth][4]); the rows left over (rows % 4) follow as they are."""
    rows, depth = w_rows.shape
    blocks = rows // 4
    head = w_rows[: blocks * 4].reshape(blocks, 4, depth).transpose(0, 2, 1).reshape(-1)
    return np.concatenate([head, w_rows[blocks * 4 :].reshape(-1)]).astype(np.int8)


def pack_pairs_rows4(w_rows: np.ndarray, unsigned: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """FULLY_CONNECTED int8 weights [rows, depth] for mc_dot_r4_s8p / mc_pairs_pass (portable C, two
    rows per SMLAL): per block of 4 rows, input by input one word of the bytes (from the lowest)
    w0 ^ 0x80, w3, w2 ^ 0x80, w1 (``unsigned``, for mc_pairs_u_pass: w0, w1, w2, w3 each ^ 0x80)
    (uint32 [blocks * depth]); and the rows left over (rows % 4) as they are (int8)."""
    rows, depth = w_rows.shape
    blocks = rows // 4
    q = w_rows[: blocks * 4].astype(np.int8).view(np.uint8).reshape(blocks, 4, depth).transpose(0, 2, 1)
    order = (
        [q[..., r] ^ 0x80 for r in range(4)] if unsigned else [q[..., 0] ^ 0x80, q[..., 3], q[..., 2] ^ 0x80, q[..., 1]]
    )
    lanes = np.stack(order, axis=-1).astype(np.uint32)
    words = lanes[..., 0] | lanes[..., 1] << 8 | lanes[..., 2] << 16 | lanes[..., 3] << 24
    return words.reshape(-1).astype(np.uint32), w_rows[blocks * 4 :].astype(np.int8).copy()


def pack_pairs_u_rows8(w_rows: np.ndarray) -> np.ndarray:
    """int8 weights [rows, depth] (rows % 8 == 0) for mc_pairs_u8_pass: per block of 8 rows, input by
    input the unsigned pairs words (pack_pairs_rows4) of rows 0..3 and of rows 4..7."""
    rows, depth = w_rows.shape
    words, _ = pack_pairs_rows4(w_rows, unsigned=True)
    return words.reshape(rows // 8, 2, depth).transpose(0, 2, 1).reshape(-1).copy()


def pack_depthwise(w_taps: np.ndarray) -> np.ndarray:
    """DEPTHWISE_CONV_2D weights [taps, channels] (channels % 4 == 0) for the 4-channel kernel: per
    group of 4 channels c0..c3 and per tap, the pairs (c0,c2) (c1,c3)."""
    taps, channels = w_taps.shape
    w = np.asarray(w_taps, np.int32).reshape(taps, channels // 4, 4).transpose(1, 0, 2)  # [group, tap, 4]
    even, odd = pairs(w[:, :, 0], w[:, :, 2]), pairs(w[:, :, 1], w[:, :, 3])
    return np.stack([even, odd], axis=2).reshape(-1).astype(np.int32)


def channel_params(bias_folded: np.ndarray, mult: np.ndarray, c: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Per output channel {bias, multiplier, c, r}: one 16-byte record read by the epilogue."""
    return (
        np.stack(
            [wrap32(bias_folded), np.asarray(mult, np.int32), np.asarray(c, np.int32), np.asarray(r, np.int32)], axis=1
        )
        .reshape(-1)
        .astype(np.int32)
    )


def channel_params2(bias_folded: np.ndarray, mult: np.ndarray) -> np.ndarray:
    """Per output channel {bias, multiplier} (8 bytes): the shift and rounding constant are literals
    in the code (channels grouped by shift) or in a separate int8 array."""
    return np.stack([wrap32(bias_folded), np.asarray(mult, np.int32)], axis=1).reshape(-1).astype(np.int32)


RECORD9 = 9  # bytes of a packed {bias, M, r} record (channel_records9)


def channel_records9(bias_folded: np.ndarray, mult: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Per output channel {bias, multiplier, r} packed in 9 bytes: bias and multiplier little-endian
    (read with mc_load_s32le, one unaligned LDR on Cortex-M), then r as one signed byte."""
    words = np.stack([wrap32(bias_folded), np.asarray(mult, np.int32)], axis=1).astype("<i4")
    return np.concatenate(
        [words.view(np.uint8).reshape(len(words), 8), np.asarray(r, np.int8).view(np.uint8).reshape(-1, 1)], axis=1
    ).reshape(-1)


# A folded bias in this many bits (signed) shares its word with a byte: bias << 8 | byte, read back
# with an arithmetic shift right by 8 (the byte: the right shift r, or a channel index).
PACKED_BIAS_BITS = 24
# The low byte of a packed word is used by register-specified shifts as it is (ARM reads only the
# bottom byte of the shift register), so a right shift stored there must stay below this.
PACKED_SHIFT_LIMIT = 32


def fits_packed_bias(bias) -> bool:
    """Whether every value fits the PACKED_BIAS_BITS signed bits of a packed word."""
    b = np.asarray(bias, np.int64)
    limit = 1 << (PACKED_BIAS_BITS - 1)
    return bool(np.all(b >= -limit) and np.all(b < limit))


def channel_records_packed(bias: np.ndarray, low: np.ndarray, mult: np.ndarray) -> np.ndarray:
    """Per output channel {bias << 8 | low, multiplier} (8 bytes): low is a byte (0..255), the
    bias fits PACKED_BIAS_BITS (fits_packed_bias)."""
    low = np.asarray(low, np.int64)
    assert fits_packed_bias(bias) and np.all((low >= 0) & (low <= 255))
    return channel_params2(np.asarray(bias, np.int64) * 256 + low, mult)


def channel_records_start_r(start: np.ndarray, mult: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Per output channel {accumulator start + r, multiplier} (8 bytes) for the lanes encoding: its
    accumulators end at 256 * acc, so they end at 256 * acc + r instead, and the kernel reads r from
    the low byte of the finished accumulator (acc >> 7 stays 2 * acc for r < 128)."""
    r = np.asarray(r, np.int64)
    assert np.all((r >= 0) & (r < PACKED_SHIFT_LIMIT))
    return channel_params2(np.asarray(start, np.int64) + r, mult)


def channel_params3(bias_folded: np.ndarray, mult: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Per output channel {bias, multiplier, r} (12 bytes) for mc_requant_fast: the epilogue computes
    c = ((2 * zp + 1) << r) >> 1 = 2^(r-1) + zp * 2^r (two instructions) instead of loading it."""
    return (
        np.stack([wrap32(bias_folded), np.asarray(mult, np.int32), np.asarray(r, np.int32)], axis=1)
        .reshape(-1)
        .astype(np.int32)
    )


def pack_s16_rows(w_rows: np.ndarray) -> tuple[np.ndarray, int]:
    """int [rows, k] -> per row, per group of 4 k (zero-padded), the int16 pairs (k0,k2) (k1,k3).
    Returns (words [rows, 2 * steps], steps)."""
    rows, k = w_rows.shape
    k4 = -(-k // 4) * 4
    w = np.zeros((rows, k4), np.int32)
    w[:, :k] = w_rows
    w = w.reshape(rows, k4 // 4, 4)
    words = np.stack([pairs(w[:, :, 0], w[:, :, 2]), pairs(w[:, :, 1], w[:, :, 3])], axis=2)
    return words.reshape(rows, -1).astype(np.int32), k4 // 4


LANES_ACC_LIMIT = 2**23  # the "lanes" FC kernel accumulates 256 * acc in int32


def lanes_words(w_rows: np.ndarray) -> np.ndarray | None:
    """int8 [rows, 4 * steps] -> the "lanes" words [rows, steps]: int16 lanes (w0 + 256 w1,
    w2 + 256 w3) per group of 4 (bytes 0 and 2 are w0 and w2; 4 bytes for 4 weights). None when a
    lane does not fit int16 (w1 or w3 == -128 with a negative w0 or w2)."""
    rows, k = w_rows.shape
    w = w_rows.astype(np.int64).reshape(rows, k // 4, 4)
    lo = w[:, :, 0] + 256 * w[:, :, 1]
    hi = w[:, :, 2] + 256 * w[:, :, 3]
    if min(lo.min(initial=0), hi.min(initial=0)) < -32768:
        return None
    return pairs(lo, hi).reshape(rows, k // 4)


def lanes_plan(w_rows: np.ndarray, folded: np.ndarray) -> bool:
    """Whether the "lanes" FC kernel applies: the lanes fit and |bias + sum(w x)| < 2^23 per row."""
    rows, depth = w_rows.shape
    steps = depth // 4
    if steps == 0 or lanes_words(w_rows[:, : steps * 4]) is None:
        return False
    bound = np.abs(folded.astype(np.int64)) + 128 * np.abs(w_rows[:, : steps * 4].astype(np.int64)).sum(axis=1)
    return bool(np.all(bound < LANES_ACC_LIMIT))


def pack_lanes_rows4(w_rows: np.ndarray, chunk_steps: int | None = None) -> np.ndarray:
    """Weights [rows, depth] for mc_dot_r4_s8l: per block of 4 rows and per group of 4 inputs, the
    lanes words of rows 0..3; the rows % 4 left over follow, each as its own stream of words. The
    depth % 4 trailing inputs are not included. With ``chunk_steps`` (the chunked kernel) that
    layout is repeated per chunk of chunk_steps groups of 4 inputs (the last chunk may be shorter),
    chunk after chunk, so the kernel reads the weights in one stream."""
    rows, depth = w_rows.shape
    steps = depth // 4
    words = lanes_words(w_rows[:, : steps * 4])
    blocks = rows // 4
    out = []
    for s0 in range(0, steps, chunk_steps or steps):
        part = words[:, s0 : s0 + (chunk_steps or steps)]
        n = part.shape[1]
        if blocks:
            out.append(part[: blocks * 4].reshape(blocks, 4, n).transpose(0, 2, 1).reshape(-1))
        if rows % 4:
            out.append(part[blocks * 4 :].reshape(-1))
    return np.concatenate(out).astype(np.int32)


# The lanes FC kernel expands 8 bytes per 4 inputs into the scratch buffer; above this many bytes it
# runs the depth in chunks of LANES_CHUNK_BUDGET / 8 groups of 4 inputs (128 inputs), adding each
# chunk into int32 partial sums kept in the scratch (4 bytes per output row), when that is smaller.
LANES_CHUNK_BUDGET = 256


def lanes_scratch_bytes(steps: int, rows: int, chunk_steps: int) -> int:
    """Scratch of the lanes kernel: the expanded input (8 bytes per group of 4 inputs of a chunk),
    plus the int32 partial sums of every row when the depth runs in more than one chunk."""
    return 8 * min(chunk_steps, steps) + (4 * rows if chunk_steps < steps else 0)


def lanes_chunk_steps(steps: int, rows: int, knob=None) -> int:
    """Groups of 4 inputs per chunk of the lanes kernel (== steps: one pass). ``knob``: inputs per
    chunk from the tuning overrides (rounded down to a multiple of 4, at least 4; 0 = one pass);
    without it, chunks of LANES_CHUNK_BUDGET bytes of expanded input when that needs less scratch."""
    if knob is not None:
        chunk = max(1, int(knob) // 4) if int(knob) > 0 else steps
        return min(chunk, steps)
    chunk = LANES_CHUNK_BUDGET // 8
    if chunk < steps and lanes_scratch_bytes(steps, rows, chunk) < lanes_scratch_bytes(steps, rows, steps):
        return chunk
    return steps


def lanes_bias(w_rows: np.ndarray, folded: np.ndarray) -> np.ndarray:
    """Accumulator start of mc_dot_r4_s8l: 256 * bias - 127 * sum(w0 + w2) (mod 2^32)."""
    steps = w_rows.shape[1] // 4
    w = w_rows[:, : steps * 4].astype(np.int64).reshape(len(w_rows), steps, 4)
    return wrap32(256 * folded.astype(np.int64) - 127 * (w[:, :, 0] + w[:, :, 2]).sum(axis=1))


@dataclass
class Requant:
    """A fast int8 convolution's requantization: per output channel the bias with the input zero
    point folded in, multiplier, and (fast: mc_requant_fast, c and r; else the TFLM shift in c)."""

    folded: np.ndarray
    mult: np.ndarray
    c: np.ndarray
    r: np.ndarray
    fast: bool

    @property
    def scale(self) -> int:
        """2 with the fast requantization: weights and bias doubled, the accumulators hold 2 * acc."""
        return 2 if self.fast else 1

    def params(self) -> np.ndarray:
        """{bias, M, r} per channel (fast: c = ((2 zp + 1) << r) >> 1 in the epilogue), else
        {bias, M, shift, 0}; the bias doubled with the fast requantization."""
        if self.fast:
            return channel_params3(self.folded * self.scale, self.mult, self.r)
        return channel_params(self.folded * self.scale, self.mult, self.c, self.r)


def requant_setup(x, w, y, bias, w_rows: np.ndarray, op=None) -> Requant:
    """The Requant of a convolution with int8 weights w_rows [channels, taps] (TFLM's multipliers,
    the bound on |acc| from the weights and bias; ONNX Runtime's float scales, as bits, when ``op``
    requantizes as it does: ops/requant_float.py)."""
    channels = len(w_rows)
    b = bias.data.astype(np.int64) if bias is not None else np.zeros(channels, np.int64)
    folded = b - int(x.quant.zero_point[0]) * w_rows.astype(np.int64).sum(axis=1)
    ort = ort_requant_table(op, x, w, y, channels)
    if ort is not None:
        return Requant(folded, ort[1], ort[2], ort[3], False)
    mult, shift = conv_multipliers(x, w, y, channels)
    is_fast, c, r = requant_table(mult, shift, int(y.quant.zero_point[0]), acc_bounds(b, w_rows))
    return Requant(folded, mult, c, r, is_fast)
