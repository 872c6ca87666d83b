"""BATCH_MATMUL, int8: the "cols4" fast kernel (template batch_matmul_cols4.c.j2), for attention's
products of two activations ([heads, seq, d] x [heads, d, seq]) and for constant right-hand sides.

The right-hand side's columns, minus its zero point, are laid out as FULLY_CONNECTED rows4 weights:
per block of 4 columns and group of 4 k the int16 pairs (k0,k2) (k1,k3) (packing.pack_s16_rows4).
An activation is packed into the kernel scratch once per batch (once for the whole operator when
every batch shares it), a constant one at compile time into flash; the start value of column j is
-lhs_zp * sum_k (rhs[k][j] - rhs_zp), so that each output is one dot product of the lhs row as it
lies (int8, SXTB16) with its column: TFLM's sum of (lhs - lhs_zp) * (rhs - rhs_zp), modulo 2^32
like its int32 accumulator. 4 columns per mc_dot_r4 (13 instructions per 16 MACs with the DSP
extension, the same arithmetic in portable C elsewhere), the columns left over one by one, the
requantization SMMLAR + shift (mc_requant_fast) where |acc| < 2^30 is proven from the zero points
and the depth, TFLM's otherwise. An lhs read transposed (adj_x), or whose rows are not a multiple of
4 long, is gathered row by row into the scratch.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.fast import packing as fast
from microcompiler.ops.fast.batch_matmul_common import (
    MAX_PACKED_BYTES,
    MatmulCall,
    rhs_columns,
    template_values,
    with_packed_rhs,
)
from microcompiler.ops.plan import KernelPlan, Variant, dsp_or_c
from microcompiler.ops.quant import INT_RANGES

COLS4 = Variant("cols4", ("kernel_simd.h",))


def steps_of(k: int) -> int:
    return -(-k // 4)


def scratch_layout(m: int, k: int, n: int, adj_x: bool, constant_rhs: bool) -> tuple[int, int, int]:
    """(packed rhs bytes, start value bytes, gathered lhs row bytes) in the scratch."""
    packed = 0 if constant_rhs else 8 * steps_of(k) * n
    start = 0 if constant_rhs else 4 * n
    row = 4 * steps_of(k) if adj_x or k % 4 else 0
    return packed, start, row


def plan(m: int, k: int, n: int, adj_x: bool, constant_rhs: bool, features) -> KernelPlan | None:
    packed, start, row = scratch_layout(m, k, n, adj_x, constant_rhs)
    if packed > MAX_PACKED_BYTES:
        return None
    return KernelPlan.of(
        COLS4,
        dsp_or_c(features),
        scratch_bytes=packed + start + row,
        columns=4,
        rhs="flash" if constant_rhs else "scratch",
    )


def pack_constant(rhs: np.ndarray, k: int, n: int, adj_y: bool, rhs_zp: int, lhs_zp: int):
    """A constant rhs [..., K, N] (adj_y: [..., N, K]) -> (words per rhs matrix, start values per rhs
    matrix), each matrix laid out as the kernel packs an activation."""
    mats = rhs_columns(rhs, k, n, adj_y)
    words, starts = [], []
    for cols in mats - rhs_zp:
        padded = np.zeros((n, 4 * steps_of(k)), np.int64)
        padded[:, :k] = cols
        words.append(fast.pack_s16_rows4(padded))
        starts.append(fast.wrap32(-lhs_zp * cols.sum(axis=1)))
    return np.concatenate(words).astype(np.int32), np.concatenate(starts).astype(np.int32)


def emit_cols4(ctx, plan_: KernelPlan, call: MatmulCall) -> str:
    """C body of "cols4" for ``call`` (batch_matmul_common.MatmulCall)."""
    m, k, n, rhs = call.m, call.k, call.n, call.rhs
    lhs_zp, rhs_zp, out_zp = call.zero_points
    mult, shift = call.requant
    bound = k * (128 + abs(lhs_zp)) * (128 + abs(rhs_zp))
    is_fast, c, r = fast.requant_table(np.array([mult]), np.array([shift]), out_zp, np.array([bound]))
    ctx.note(requant="smmlar" if is_fast else "reference")
    steps = steps_of(k)
    packed_bytes, start_bytes, row_bytes = scratch_layout(m, k, n, call.adj_x, rhs.is_constant)
    out = template_values(
        ctx,
        plan_,
        call,
        steps=steps,
        blocks=n // 4,
        cols_tail=n % 4,
        lhs_zp=lhs_zp,
        rhs_zp=rhs_zp,
        fast=is_fast,
        requant=(mult, int(c[0]), int(r[0])),
        output_offset=out_zp,
        act_min=INT_RANGES[call.dtype][0],
        act_max=INT_RANGES[call.dtype][1],
        isa=plan_.isa,
        row_bytes=row_bytes,
        k_tail=k % 4,
    )
    if rhs.is_constant:
        words, starts = pack_constant(rhs.data, k, n, call.adj_y, rhs_zp, lhs_zp)
        matrices = len(starts) // n
        out = with_packed_rhs(
            ctx,
            out,
            words,
            f"the rhs minus its zero point, per matrix [{matrices}]: per block of 4 columns and group of 4 k the "
            "int16 pairs (k0,k2) (k1,k3) of columns 0..3, then the columns left over",
        )
        out["start"] = ctx.const(
            "start",
            starts,
            comment=(
                f"per matrix [{matrices}] and column [{n}]: -lhs zero point * sum of the column minus the rhs zero point"
            ),
        )
    return ctx.render("batch_matmul_cols4.c.j2", **out)
