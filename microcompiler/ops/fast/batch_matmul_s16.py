"""BATCH_MATMUL, int16 (zero points 0): the "int16-cols4" fast kernel (template batch_matmul_s16.c.j2).

Both sides are int16, so a product needs 31 bits and two of them 32: SMLAD could overflow on the
first pair, and TFLM sums in int64. The kernel packs the rhs columns as int16 pairs (k, k + 1) into
the scratch (once per batch, once when every batch shares it, at compile time into flash when
constant), 4 columns interleaved per pair, and sums each lhs row (read as int16 pairs as it lies, or
copied into the scratch and zero-padded when its length is odd or it is read transposed) against 4
columns at a time with SMLALD (mc_dot4_s16x16: 64-bit accumulators, two MACs per instruction on the
DSP cores, portable C of the same sums elsewhere), the columns left over one by one; then TFLM's
64-bit requantization per output.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.fast.batch_matmul_common import (
    MAX_PACKED_BYTES,
    MatmulCall,
    rhs_columns,
    template_values,
    with_packed_rhs,
)
from microcompiler.ops.plan import KernelPlan, Variant, dsp_or_c

INT16_COLS4 = Variant("int16-cols4", ("kernel_s16.h",))


def words_of(k: int) -> int:
    return -(-k // 2)


def scratch_layout(k: int, n: int, adj_x: bool, constant_rhs: bool) -> tuple[int, int]:
    """(packed rhs bytes, gathered lhs row bytes) in the scratch, in that order."""
    return (0 if constant_rhs else 4 * words_of(k) * n), (4 * words_of(k) if adj_x or k % 2 else 0)


def plan(k: int, n: int, adj_x: bool, constant_rhs: bool, features) -> KernelPlan | None:
    packed, row = scratch_layout(k, n, adj_x, constant_rhs)
    if packed > MAX_PACKED_BYTES:
        return None
    return KernelPlan.of(
        INT16_COLS4,
        dsp_or_c(features),
        scratch_bytes=packed + row,
        columns=4,
        rhs="flash" if constant_rhs else "scratch",
        requant="reference",
    )


def pack(cols: np.ndarray) -> np.ndarray:
    """int16 columns [n][k] -> int32 pair words (k, k + 1) (low half first, k zero-padded to even):
    the columns in blocks of 4 interleaved per pair, then the columns % 4 one after the other."""
    n, k = cols.shape
    words = words_of(k)
    padded = np.zeros((n, 2 * words), np.int64)
    padded[:, :k] = cols
    pair = (padded[:, 0::2] & 0xFFFF) | ((padded[:, 1::2] & 0xFFFF) << 16)
    full = n // 4 * 4
    blocks = pair[:full].reshape(-1, 4, words).transpose(0, 2, 1).reshape(-1)
    flat = np.concatenate([blocks, pair[full:].reshape(-1)])
    return ((flat + 2**31) % 2**32 - 2**31).astype(np.int32)


def emit(ctx, plan_: KernelPlan, call: MatmulCall) -> str:
    """C body of "int16-cols4" for ``call`` (batch_matmul_common.MatmulCall)."""
    k, n, rhs = call.k, call.n, call.rhs
    packed_bytes, row_bytes = scratch_layout(k, n, call.adj_x, rhs.is_constant)
    out = template_values(
        ctx,
        plan_,
        call,
        words=words_of(k),
        full=n // 4 * 4,
        row_bytes=row_bytes,
        packed_words=packed_bytes // 4,
        isa=plan_.isa,
        multiplier=call.requant[0],
        shift=call.requant[1],
    )
    if rhs.is_constant:
        mats = rhs_columns(rhs.data, k, n, call.adj_y)
        out = with_packed_rhs(
            ctx,
            out,
            np.concatenate([pack(c) for c in mats]),
            f"the rhs per matrix [{len(mats)}] as int16 pairs (k, k + 1): the columns in blocks of 4 interleaved "
            "per pair, then the columns % 4",
        )
    return ctx.render("batch_matmul_s16.c.j2", **out)
