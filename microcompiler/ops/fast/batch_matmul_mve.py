"""BATCH_MATMUL, int8, Helium (Cortex-M55): the "mve-dot" kernel (template batch_matmul_mve.c.j2),
for attention's products of two activations and for constant right-hand sides.

The rhs columns are laid out as the "mve-dot" CONV_2D weights (mve.pack_blocks: per block of 4
columns and chunk of 16 k, the 16 int8 of columns 0, 1, 2, 3), as they lie: no zero point taken
off, so they stay int8. An activation is packed into the scratch once per batch (once when every
batch shares it) with VLDRB gathers, a constant one at compile time into flash. Then 2 lhs rows x
4 columns per mc_mve_dot_2x4_rows (VLDRB + VMLADAVA.S8, 15 instructions per 128 MACs) give
D = sum lhs * rhs, and TFLM's sum of (lhs - lhs_zp) * (rhs - rhs_zp) is

    D - lhs_zp * (column sum of rhs) - rhs_zp * (row sum of lhs) + K * lhs_zp * rhs_zp

modulo 2^32 like its int32 accumulator: the column terms are the start values (per column, from the
packed columns' VADDVA sums, or at compile time), the row term one VADDVA per chunk of the row. The
requantization is mc_v4_requant (VQRDMULH + VRSHL: TFLM's MultiplyByQuantizedMultiplier for any
multiplier). An lhs read transposed (adj_x), or whose rows are not a multiple of 16 long, is
gathered row by row into the scratch (16-byte chunks, zero-padded: the padding meets zero weights).
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.fast import wrap32
from microcompiler.ops.fast.batch_matmul_common import (
    MAX_PACKED_BYTES,
    MatmulCall,
    rhs_columns,
    template_values,
    with_packed_rhs,
)
from microcompiler.ops.fast.mve import CHUNK, pack_blocks, records, steps_of
from microcompiler.ops.features import has_mve
from microcompiler.ops.plan import ISA_MVE, KernelPlan, Variant

MVE_DOT = Variant("mve-dot", ("kernel_mve.h",))
MVE_S16 = Variant("mve-s16", ("kernel_mve_matmul.h",))
MAX_GATHER_STRIDE = (2**16 - 1) // (CHUNK - 1)  # mc_mve_gather16_s8's 16-bit offsets


def scratch_layout(m: int, k: int, n: int, adj_x: bool, constant_rhs: bool) -> tuple[int, int, int]:
    """(start value bytes, packed rhs bytes, gathered lhs rows bytes) in the scratch, in that order."""
    n4, k16 = -(-n // 4) * 4, steps_of(k) * CHUNK
    start = 0 if constant_rhs else 4 * n4
    packed = 0 if constant_rhs else n4 * k16
    rows = 2 * k16 if adj_x or k % CHUNK else 0
    return start, packed, rows


def plan(m: int, k: int, n: int, adj_x: bool, adj_y: bool, constant_rhs: bool, features) -> KernelPlan | None:
    """The "mve-dot" plan on Helium cores, or None (no MVE, or an rhs too large to pack, or strides
    beyond the gathers' offsets)."""
    if not has_mve(features):
        return None
    start, packed, rows = scratch_layout(m, k, n, adj_x, constant_rhs)
    if packed > MAX_PACKED_BYTES or (adj_x and m > MAX_GATHER_STRIDE):
        return None
    if not constant_rhs and not adj_y and n > MAX_GATHER_STRIDE:
        return None
    return KernelPlan.of(
        MVE_DOT,
        ISA_MVE,
        scratch_bytes=start + packed + rows,
        rows=2,
        columns=4,
        rhs="flash" if constant_rhs else "scratch",
    )


def pack_constant(rhs: np.ndarray, k: int, n: int, adj_y: bool, lhs_zp: int, rhs_zp: int):
    """A constant rhs [..., K, N] (adj_y: [..., N, K]) -> (packed int8 per matrix, start values per
    matrix: -lhs_zp * column sum + K * lhs_zp * rhs_zp, the columns padded to a multiple of 4)."""
    mats = rhs_columns(rhs, k, n, adj_y)
    n4 = -(-n // 4) * 4
    packed, starts = [], []
    for cols in mats:
        packed.append(pack_blocks(cols.astype(np.int8)))
        start = np.zeros(n4, np.int64)
        start[:n] = -lhs_zp * cols.astype(np.int64).sum(axis=1) + k * lhs_zp * rhs_zp
        starts.append(wrap32(start))
    return np.concatenate(packed), np.concatenate(starts).astype(np.int32)


def emit(ctx, plan_: KernelPlan, call: MatmulCall) -> str:
    """C body of "mve-dot" for ``call`` (batch_matmul_common.MatmulCall)."""
    m, k, n, rhs = call.m, call.k, call.n, call.rhs
    lhs_zp, rhs_zp, out_zp = call.zero_points
    mult, shift = call.requant
    ctx.note(requant="vqrdmulh")
    steps = steps_of(k)
    start_bytes, packed_bytes, rows_bytes = scratch_layout(m, k, n, call.adj_x, rhs.is_constant)
    n4 = -(-n // 4) * 4
    out = template_values(
        ctx,
        plan_,
        call,
        n4=n4,
        k16=steps * CHUNK,
        steps=steps,
        lhs_zp=lhs_zp,
        rhs_zp=rhs_zp,
        out_zp=out_zp,
        rows_bytes=rows_bytes,
        packed_at=start_bytes,
        rows_at=start_bytes + packed_bytes,
        general=int(shift >= 0),
        record=ctx.const(
            "requant",
            records(np.zeros(4, np.int64), np.array([mult]), np.array([shift])),
            comment="the requantization record {0[4], multiplier[4], -right shift[4]"
            + (", left shift[4]}" if shift >= 0 else "}")
            + " of every column",
        ),
    )
    if rhs.is_constant:
        packed, starts = pack_constant(rhs.data, k, n, call.adj_y, lhs_zp, rhs_zp)
        matrices = len(starts) // n4
        out = with_packed_rhs(
            ctx,
            out,
            packed,
            f"the rhs per matrix [{matrices}]: per block of 4 columns and chunk of 16 k the 16 int8 of columns "
            "0, 1, 2, 3 (zero-padded)",
        )
        out["start"] = (
            ctx.const(
                "start",
                starts,
                comment=(
                    f"per matrix [{matrices}] and column [{n4}]: -lhs zero point * the column's sum "
                    "+ k * lhs zero point * rhs zero point"
                ),
            )
            if lhs_zp
            else None
        )
    return ctx.render("batch_matmul_mve.c.j2", **out)


# ---- int16 ("mve-s16") ----------------------------------------------------------------------------

CHUNK_S16 = 8  # int16 lanes of a Q register: inputs per VMLALDAVA.S16


def scratch_layout_s16(k: int, n: int, adj_x: bool, constant_rhs: bool) -> tuple[int, int]:
    """(packed rhs bytes, gathered lhs row bytes) of "mve-s16" in the scratch, in that order."""
    n4, k8 = -(-n // 4) * 4, -(-k // CHUNK_S16) * CHUNK_S16
    return (0 if constant_rhs else 2 * n4 * k8), (2 * k8 if adj_x or k % CHUNK_S16 else 0)


def plan_s16(m: int, k: int, n: int, adj_x: bool, adj_y: bool, constant_rhs: bool, features) -> KernelPlan | None:
    """The "mve-s16" plan of an int16 BATCH_MATMUL (zero points 0) on Helium cores, or None."""
    if not has_mve(features):
        return None
    packed, row = scratch_layout_s16(k, n, adj_x, constant_rhs)
    limit = (2**16 - 1) // (CHUNK_S16 - 1)
    if packed > MAX_PACKED_BYTES or (adj_x and m > limit) or (not constant_rhs and not adj_y and n > limit):
        return None
    return KernelPlan.of(
        MVE_S16,
        ISA_MVE,
        scratch_bytes=packed + row,
        rows=1,
        columns=4,
        rhs="flash" if constant_rhs else "scratch",
        requant="reference",
    )


def pack_s16(cols: np.ndarray) -> np.ndarray:
    """int16 columns [n][k] -> blocks of 4 columns x chunks of 8 k (per chunk the 8 int16 of columns 0,
    1, 2, 3), the columns padded to a multiple of 4 and k to a multiple of 8 with zeros."""
    n, k = cols.shape
    n4, k8 = -(-n // 4) * 4, -(-k // CHUNK_S16) * CHUNK_S16
    padded = np.zeros((n4, k8), np.int16)
    padded[:n, :k] = cols
    return padded.reshape(n4 // 4, 4, k8 // CHUNK_S16, CHUNK_S16).transpose(0, 2, 1, 3).reshape(-1).copy()


def emit_s16(ctx, plan_: KernelPlan, call: MatmulCall) -> str:
    """C body of "mve-s16" for ``call`` (batch_matmul_common.MatmulCall)."""
    k, n, rhs = call.k, call.n, call.rhs
    steps = -(-k // CHUNK_S16)
    packed_bytes, row_bytes = scratch_layout_s16(k, n, call.adj_x, rhs.is_constant)
    out = template_values(
        ctx,
        plan_,
        call,
        n4=-(-n // 4) * 4,
        k8=steps * CHUNK_S16,
        steps=steps,
        row_bytes=row_bytes,
        packed_elements=packed_bytes // 2,
        multiplier=call.requant[0],
        shift=call.requant[1],
    )
    if rhs.is_constant:
        mats = rhs_columns(rhs.data, k, n, call.adj_y)
        out = with_packed_rhs(
            ctx,
            out,
            np.concatenate([pack_s16(c.astype(np.int16)) for c in mats]),
            f"the rhs per matrix [{len(mats)}]: per block of 4 columns and chunk of 8 k the 8 int16 of columns "
            "0, 1, 2, 3 (zero-padded)",
        )
    return ctx.render("batch_matmul_mve_s16.c.j2", **out)
