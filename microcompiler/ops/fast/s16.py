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
    wide: bool  # int64 sum + int64 bias (or none) + mc_requantize64; else int32 + mc_requantize
    bias: str | None  # C name of the bias array
    mult: str  # the multiplier: a literal, or the name of the per-channel array
    shift: str
    per_channel: bool
    act_min: int
    act_max: int


def epilogue(ctx, bias, mult: np.ndarray, shift: np.ndarray, lo: int, hi: int) -> Epilogue:
    """Constants of the requantization: literals for one multiplier, else per-channel arrays.
    ``bias``: the (constant) bias tensor or None."""
    wide = bias is None or bias.dtype == "int64"
    out_c = len(mult)  # 1: per-tensor
    uniform = len(set(zip(mult.tolist(), shift.tolist()))) == 1
    if uniform:
        m, s = str(int(mult[0])), str(int(shift[0]))
    else:
        m = ctx.const("multiplier", mult, comment=f"requantization multiplier per output channel [{out_c}]")
        s = ctx.const("shift", shift, comment=f"requantization shift per output channel [{out_c}]")
    b = None
    if bias is not None:
        data = bias.data.astype(np.int64 if wide else np.int32).reshape(-1)
        b = ctx.const("bias", data, comment=f"bias per output channel [{data.size}] ({'int64' if wide else 'int32'})")
    return Epilogue(wide, b, m, s, not uniform, lo, hi)
