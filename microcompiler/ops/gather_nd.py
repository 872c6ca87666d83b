"""GATHER_ND: int8 and float32 values (TFLM's types), int32 indices (as TFLM).

The last dimension of the indices (nd) addresses the first nd dimensions of the params; each index
tuple copies one slice of the remaining dimensions (one memcpy). Run-time indices are clamped into
range, so the code never reads outside the params (TFLM fails the inference on an out-of-range
index); constant indices are checked at compile time, and a GATHER_ND of constants is folded.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ir import c_type, np_dtype
from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.gather import check_gather_types
from microcompiler.ops.movement_common import row_strides


def _geometry(op, graph):
    """(number of index tuples, nd, slice size) after checking the shapes."""
    x, idx, y = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
    require(len(idx.shape) >= 1 and len(x.shape) >= 1, op, "params and indices need at least one dimension")
    nd = int(idx.shape[-1])
    require(
        1 <= nd <= len(x.shape),
        op,
        f"index depth {nd} (the indices' last dimension) exceeds the params rank {len(x.shape)}",
    )
    require(
        nd <= 5, op, f'index depth {nd} is not supported (TFLM: "Index innermost dimension length must not exceed 5")'
    )
    out_shape = list(idx.shape[:-1]) + list(x.shape[nd:])
    require(list(y.shape) == out_shape, op, f"output shape {list(y.shape)} does not match the expected {out_shape}")
    return int(np.prod(idx.shape[:-1], dtype=np.int64)), nd, int(np.prod(x.shape[nd:], dtype=np.int64))


@register
class GatherNd(OpKernel):
    kinds = ("GATHER_ND",)
    input_roles = ("params", "indices")
    inputs = (2, 2)
    types = ("int8", "float32")
    type_notes = "indices int32 (as TFLM); out-of-range run-time indices are clamped, where TFLM fails"
    tflm_refusals = ("indices of another type than int32, or an index depth (their last dimension) over 5",)
    quantized_io = False

    def check(self, op, graph):
        x, idx, y = check_gather_types(op, graph, self.types)
        _, nd, _ = _geometry(op, graph)
        if idx.is_constant:
            tuples = idx.data.reshape(-1, nd)
            bad = (tuples < 0) | (tuples >= np.array(x.shape[:nd]))
            require(
                not bad.any(),
                op,
                f"index {tuples[bad.any(axis=1)][:1].tolist()} is out of range for params of shape {list(x.shape)}",
            )

    def fold(self, op, graph):
        x, idx, y = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
        if not (x.is_constant and idx.is_constant):
            return None
        self.check(op, graph)
        _, nd, _ = _geometry(op, graph)
        tuples = idx.data.reshape(-1, nd).astype(np.int64)
        out = np.stack([x.data[tuple(t)] for t in tuples])
        return [out.reshape(y.shape).astype(np_dtype(y.dtype))]

    def emit(self, op, graph, ctx):
        x, idx = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1])
        count, nd, inner = _geometry(op, graph)
        strides = row_strides(x.shape)[:nd]
        clamp = not idx.is_constant
        terms = []
        for j in range(nd):
            value = f"MC_CLAMP(index[{j}], 0, {x.shape[j] - 1})" if clamp else f"index[{j}]"
            terms.append(value if strides[j] == 1 else f"{value} * {strides[j]}")
        return ctx.render(
            "gather_nd.c.j2",
            ctype=c_type(x.dtype),
            itype=c_type(idx.dtype),
            input=ctx.arg(op.inputs[0]),
            indices=ctx.arg(op.inputs[1]),
            output=ctx.arg(op.outputs[0]),
            count=count,
            nd=nd,
            inner=inner,
            offset=" + ".join(terms),
            clamp=clamp,
        )
