"""BATCH_MATMUL: float32, int8 and int16 (int16 with zero points 0); adj_x/adj_y; broadcasting of the
batch dimensions (ranks 2 to 5); the right-hand side constant or an activation.

out[..., i, j] = sum_k lhs[..., i, k] * rhs[..., k, j], with lhs/rhs read transposed where adj_x/adj_y
say so, as TFLM's ``batch_matmul.cc`` and ``reference/batch_matmul.h``:

* the sum runs over k ascending from 0 (float32 sums in TFLM's order);
* int8: ``(lhs - lhs_zp) * (rhs - rhs_zp)`` summed in int32, requantized with
  lhs_scale * rhs_scale (multiplied in float32) / output_scale, plus the output zero point, clamped to
  int8 (the operator has no fused activation); int16 sums in int64 and uses the 64-bit requantize;
* only the first scale and zero point of each tensor count (TFLM reads ``params``).

The batch loop is flattened: each output batch reads its lhs and rhs matrices at offsets resolved at
compile time (a flash table only when a broadcast mixes the two sides' strides).

The fast kernels (int8): "cols4" in ops/fast/batch_matmul_cols4.py (the rhs columns packed as int16
pairs, 4 columns per SMLAD dot product); on Helium cores "mve-dot" in ops/fast/batch_matmul_mve.py
(the rhs columns as int8 blocks, 2 rows x 4 columns per VMLADAVA.S8 dot product).
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.fast import batch_matmul_cols4 as cols4
from microcompiler.ops.fast import batch_matmul_mve, batch_matmul_s16
from microcompiler.ops.fast.batch_matmul_common import MatmulCall
from microcompiler.ops.plan import REFERENCE_PLAN, KernelPlan
from microcompiler.ops.quant import INT_RANGES, quantize_multiplier

INT32_MAX = 2**31 - 1
# the fast kernels whose constant rhs is packed into flash at compile time (read by matrix index)
PACKED_AT_COMPILE_TIME = (
    cols4.COLS4,
    batch_matmul_mve.MVE_DOT,
    batch_matmul_mve.MVE_S16,
    batch_matmul_s16.INT16_COLS4,
)


def _matmul_dims(op, graph):
    """(batch shape, M, K, N) of the product, or None where the shapes do not fit together."""
    lhs, rhs = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
    adj_x, adj_y = bool(op.options.get("adj_x", False)), bool(op.options.get("adj_y", False))
    m, k = (lhs.shape[-1], lhs.shape[-2]) if adj_x else (lhs.shape[-2], lhs.shape[-1])
    k_rhs, n = (rhs.shape[-1], rhs.shape[-2]) if adj_y else (rhs.shape[-2], rhs.shape[-1])
    return m, k, k_rhs, n


def _batch_offsets(shape, batch, matrix_size):
    """Element offset of each output batch's matrix in a tensor of ``shape`` broadcast to ``batch``."""
    own = [1] * (len(batch) - (len(shape) - 2)) + list(shape[:-2])
    index = np.indices(batch).reshape(len(batch), -1) if batch else np.zeros((0, 1), dtype=np.int64)
    strides = np.cumprod([1] + own[::-1][:-1])[::-1] if own else []
    offsets = np.zeros(index.shape[1], dtype=np.int64)
    for axis, dim in enumerate(own):
        if dim != 1:
            offsets += index[axis] * int(strides[axis])
    return offsets * matrix_size


@register
class BatchMatMul(OpKernel):
    kinds = ("BATCH_MATMUL",)
    inputs = (2, 2)
    input_roles = ("lhs", "rhs")
    type_notes = "int16 with zero points 0; inputs and output of one type"
    options = "adj_x, adj_y; batch dimensions broadcast (ranks 2 to 5)"
    fast = {
        "dsp": "int8 (cols4: the rhs columns packed as int16 pairs, per batch into the scratch or at compile "
        "time when constant, 4 columns per SMLAD dot product); int16 (int16-cols4: the rhs columns as int16 "
        "pairs, 4 columns per SMLALD pass, 64-bit sums); portable C of the same loops elsewhere",
        "mve": "int8 (mve-dot: the rhs columns as int8 blocks of 4 columns x 16 k, 2 rows x 4 columns per "
        "VMLADAVA.S8 dot product, the zero points as column and row sums); int16 (mve-s16: int16 blocks of 4 columns x "
        "8 k, VMLALDAVA.S16 into 64-bit sums)",
    }

    def check(self, op, graph):
        lhs, rhs, y = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
        require(
            lhs.dtype in ("int8", "int16", "float32"),
            op,
            f"input type {lhs.dtype} is not supported (int8, int16, float32)",
        )
        require(
            rhs.dtype == lhs.dtype and y.dtype == lhs.dtype,
            op,
            f"inputs and output must have one type; got {lhs.dtype}, {rhs.dtype} -> {y.dtype} "
            "(hybrid models are not supported by TFLM either)",
        )
        require(
            2 <= len(lhs.shape) <= 5 and 2 <= len(rhs.shape) <= 5,
            op,
            f"inputs must have 2 to 5 dimensions; got {list(lhs.shape)} and {list(rhs.shape)}",
        )
        m, k, k_rhs, n = _matmul_dims(op, graph)
        require(
            k == k_rhs,
            op,
            f"the inner dimensions differ: {list(lhs.shape)} x {list(rhs.shape)} "
            f"(adj_x={bool(op.options.get('adj_x', False))}, adj_y={bool(op.options.get('adj_y', False))})",
        )
        batch = self._batch(op, graph)
        require(
            tuple(y.shape) == (*batch, m, n), op, f"output shape {list(y.shape)} is not the product's {[*batch, m, n]}"
        )
        if lhs.dtype == "float32":
            return
        require(all(t.quant is not None for t in (lhs, rhs, y)), op, "quantized tensors need quantization parameters")
        if lhs.dtype == "int16":
            require(
                lhs.quant.zero_point[0] == 0 and rhs.quant.zero_point[0] == 0 and y.quant.zero_point[0] == 0,
                op,
                "int16 zero points must be 0",
            )
            require(
                self._multiplier(lhs, rhs, y)[1] <= 14,
                op,
                "the requantization scale lhs_scale * rhs_scale / output_scale is too large (>= 2^15)",
            )

    def _batch(self, op, graph) -> tuple[int, ...]:
        lhs, rhs = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
        a, b = list(lhs.shape[:-2]), list(rhs.shape[:-2])
        rank = max(len(a), len(b))
        a, b = [1] * (rank - len(a)) + a, [1] * (rank - len(b)) + b
        for da, db in zip(a, b):
            require(
                da == db or da == 1 or db == 1,
                op,
                f"batch dimensions {list(lhs.shape[:-2])} and {list(rhs.shape[:-2])} do not broadcast",
            )
        return tuple(max(da, db) for da, db in zip(a, b))

    @staticmethod
    def _multiplier(lhs, rhs, y) -> tuple[int, int]:
        # TFLM multiplies the two scales in float32 before widening (GetQuantizedConvolutionMultipler).
        product = float(np.float32(lhs.quant.scale[0]) * np.float32(rhs.quant.scale[0]))
        return quantize_multiplier(product / float(np.float32(y.quant.scale[0])))

    def macs(self, op, graph):
        m, k, _, n = _matmul_dims(op, graph)
        return int(np.prod(self._batch(op, graph), dtype=np.int64)) * m * k * n

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None) -> KernelPlan:
        """int8: "cols4" (ops/fast/batch_matmul_cols4.py) while the packed rhs fits its scratch budget;
        otherwise the reference loop nest."""
        lhs, rhs = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
        if lhs.dtype == "int8":
            m, k, _, n = _matmul_dims(op, graph)
            adj_x, adj_y = bool(op.options.get("adj_x", False)), bool(op.options.get("adj_y", False))
            chosen = batch_matmul_mve.plan(m, k, n, adj_x, adj_y, rhs.is_constant, features)
            if chosen:
                return chosen
            chosen = cols4.plan(m, k, n, bool(op.options.get("adj_x", False)), rhs.is_constant, features)
            if chosen:
                return chosen
        if lhs.dtype == "int16":
            m, k, _, n = _matmul_dims(op, graph)
            adj_x, adj_y = bool(op.options.get("adj_x", False)), bool(op.options.get("adj_y", False))
            chosen = batch_matmul_mve.plan_s16(m, k, n, adj_x, adj_y, rhs.is_constant, features)
            chosen = chosen or batch_matmul_s16.plan(k, n, adj_x, rhs.is_constant, features)
            if chosen:
                return chosen
        return REFERENCE_PLAN

    def emit(self, op, graph, ctx):
        plan = REFERENCE_PLAN if ctx.reference_only else self.kernel_plan(op, graph, ctx.features, ctx.tuning)
        ctx.plan = plan
        lhs, rhs, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
        adj_x, adj_y = bool(op.options.get("adj_x", False)), bool(op.options.get("adj_y", False))
        m, k, _, n = _matmul_dims(op, graph)
        batch = self._batch(op, graph)
        batches = int(np.prod(batch, dtype=np.int64))
        values = dict(
            m=m,
            k=k,
            n=n,
            batches=batches,
            lhs=ctx.arg(op.inputs[0]),
            rhs=None if plan.variant in PACKED_AT_COMPILE_TIME and rhs.is_constant else ctx.arg(op.inputs[1]),
            output=ctx.arg(op.outputs[0]),
            lhs_index=f"k * {m} + i" if adj_x else f"i * {k} + k",
            rhs_index=f"j * {k} + k" if adj_y else f"k * {n} + j",
            describe=(
                f"BATCH_MATMUL {list(lhs.shape)}{'^T' if adj_x else ''} x "
                f"{list(rhs.shape)}{'^T' if adj_y else ''} -> {list(y.shape)}"
            ),
        )
        for side, t in (("lhs", lhs), ("rhs", rhs)):
            offsets = _batch_offsets(t.shape, batch, m * k if side == "lhs" else k * n)
            own = t.size // (m * k if side == "lhs" else k * n)
            if side == "rhs" and plan.variant in PACKED_AT_COMPILE_TIME and rhs.is_constant:  # by matrix index
                matrices = offsets // (k * n)
                values["rhs_offset"] = None
                values["rhs_matrix"] = (
                    None
                    if batches == 1 or own == 1
                    else "b"
                    if np.array_equal(matrices, np.arange(batches))
                    else ctx.const("rhs_matrices", matrices.astype(np.int32)) + "[b]"
                )
            elif batches == 1 or own == 1:
                values[f"{side}_offset"] = None
            elif np.array_equal(offsets, np.arange(batches) * (t.size // own)):
                values[f"{side}_offset"] = f"b * {t.size // own}"
            else:
                values[f"{side}_offset"] = ctx.const(f"{side}_offsets", offsets.astype(np.int32)) + "[b]"
        if lhs.dtype == "float32":
            return ctx.render("batch_matmul.c.j2", io_t="float", acc_t="float", **values)
        (_, lhs_zp), (_, rhs_zp), (_, out_zp) = lhs.quant.single(), rhs.quant.single(), y.quant.single()
        lo, hi = INT_RANGES[y.dtype]
        mult, shift = self._multiplier(lhs, rhs, y)
        call = MatmulCall(values, rhs, m, k, n, adj_x, adj_y, (lhs_zp, rhs_zp, out_zp), (mult, shift), y.dtype)
        emitters = {
            batch_matmul_s16.INT16_COLS4: batch_matmul_s16.emit,
            batch_matmul_mve.MVE_S16: batch_matmul_mve.emit_s16,
            batch_matmul_mve.MVE_DOT: batch_matmul_mve.emit,
            cols4.COLS4: cols4.emit_cols4,
        }
        if plan.variant in emitters:
            return emitters[plan.variant](ctx, plan, call)
        if lhs.dtype == "int16":
            acc_t, requant_fn, wrap = "int64_t", "mc_requantize64", False
        else:
            # Beyond int32 TFLM's sum wraps; we sum in int64 and wrap to int32 at the end.
            bound = k * (128 + abs(lhs_zp)) * (128 + abs(rhs_zp))
            acc_t, requant_fn, wrap = (
                ("int32_t", "mc_requantize", False) if bound <= INT32_MAX else ("int64_t", "mc_requantize", True)
            )
        return ctx.render(
            "batch_matmul.c.j2",
            io_t=f"{y.dtype}_t",
            acc_t=acc_t,
            requant_fn=requant_fn,
            wrap=wrap,
            multiplier=mult,
            shift=shift,
            lhs_offset_term=-lhs_zp,
            rhs_offset_term=-rhs_zp,
            output_offset=out_zp,
            act_min=lo,
            act_max=hi,
            **values,
        )
