"""What the BATCH_MATMUL fast kernels share (ops/fast/batch_matmul_cols4.py, batch_matmul_s16.py,
batch_matmul_mve.py): the operator as they take it, the template values every one of them reads, the
constant right-hand side's columns and their packed copy in flash."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from microcompiler.ops.plan import KernelPlan

MAX_PACKED_BYTES = 16 * 1024  # the largest right-hand side a kernel packs into the scratch


@dataclass(frozen=True)
class MatmulCall:
    """One BATCH_MATMUL as a fast kernel emits it: ``values`` are BatchMatMul.emit's (C names, batch
    offsets, index expressions, m, k and n), ``rhs`` the right-hand tensor (its data when constant),
    the transposes, the zero points (lhs, rhs, output), the requantization (multiplier, shift) and
    the output type."""

    values: dict
    rhs: Any
    m: int
    k: int
    n: int
    adj_x: bool
    adj_y: bool
    zero_points: tuple[int, int, int]
    requant: tuple[int, int]
    dtype: str


def template_values(ctx, plan: KernelPlan, call: MatmulCall, **kernel) -> dict:
    """The values every kernel's template reads (the call's, the transposes, whether the rhs is a
    constant, the scratch, whether one packed rhs serves every batch) and the kernel's own."""
    return dict(
        call.values,
        adj_x=call.adj_x,
        adj_y=call.adj_y,
        constant=call.rhs.is_constant,
        scratch=ctx.scratch(plan.scratch) if plan.scratch else None,
        pack_once=call.values["rhs_offset"] is None,
        **kernel,
    )


def rhs_columns(rhs: np.ndarray, k: int, n: int, adj_y: bool) -> np.ndarray:
    """A constant rhs [..., K, N] (adj_y: [..., N, K]) as its matrices' columns [matrix][column j][k]
    (int64), what every BATCH_MATMUL kernel packs at compile time."""
    data = rhs.astype(np.int64)
    return data.reshape(-1, n, k) if adj_y else data.reshape(-1, k, n).transpose(0, 2, 1)


def with_packed_rhs(ctx, out: dict, packed: np.ndarray, comment: str) -> dict:
    """``out`` with the constant rhs packed in flash (``packed``) and the expression of the matrix a
    batch reads (``matrix``; None: one for all)."""
    return dict(out, packed=ctx.const("rhs_packed", packed, comment=comment), matrix=out["rhs_matrix"])
