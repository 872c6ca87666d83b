"""GATHER: int8 and float32 values (TFLM's types), int32 indices (as TFLM), axis and batch_dims.

The indices may be computed at run time. TFLM fails the whole inference on an index outside
[0, axis extent); the generated code cannot fail, so it clamps each index into that range: it never
reads outside the input, and a valid index gives TFLM's result. Constant indices are checked at
compile time instead (an out-of-range one is refused), and a gather of constants is folded.
Each gathered slice is one memcpy (a single store for slices of one element).
"""

from __future__ import annotations

import numpy as np

from microcompiler.ir import c_type, np_dtype
from microcompiler.ops.base import OpKernel, register, require


def gather_geometry(op, graph):
    """(batch, outer, coords, axis extent, inner) sizes of a GATHER, after checking it."""
    x, idx, y = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
    rank, irank = len(x.shape), len(idx.shape)
    axis = op.options.get("axis", 0)
    require(rank >= 1 and -rank <= axis < rank, op, f"axis {axis} is out of range for rank {rank}")
    axis %= rank
    batch_dims = op.options.get("batch_dims", 0)
    batch_dims = batch_dims + irank if batch_dims < 0 else batch_dims
    require(
        0 <= batch_dims <= min(axis, irank) and batch_dims < rank,
        op,
        f"batch_dims {op.options.get('batch_dims', 0)} must lie in [0, min(axis {axis}, indices rank {irank})]",
    )
    require(
        list(x.shape[:batch_dims]) == list(idx.shape[:batch_dims]),
        op,
        f"the first {batch_dims} dimensions of the input {list(x.shape)} and the indices {list(idx.shape)} differ",
    )
    out_shape = list(x.shape[:axis]) + list(idx.shape[batch_dims:]) + list(x.shape[axis + 1 :])
    require(list(y.shape) == out_shape, op, f"output shape {list(y.shape)} does not match the expected {out_shape}")
    size = lambda dims: int(np.prod(dims, dtype=np.int64))  # noqa: E731
    return (
        size(x.shape[:batch_dims]),
        size(x.shape[batch_dims:axis]),
        size(idx.shape[batch_dims:]),
        int(x.shape[axis]),
        size(x.shape[axis + 1 :]),
    )


def check_gather_types(op, graph, types: tuple[str, ...]):
    """GATHER and GATHER_ND: params of one of ``types``, the output of the same type, int32 indices
    (TFLM's prepare steps refuse any other: "Positions of type 'int64' are not supported by gather").
    Returns (params, indices, output)."""
    x, idx, y = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
    require(x.dtype in types, op, f"type {x.dtype} is not supported ({', '.join(types)})")
    require(y.dtype == x.dtype, op, f"output type {y.dtype} differs from params type {x.dtype}")
    require(idx.dtype == "int32", op, f"indices of type {idx.dtype} are not supported (int32, as TFLM)")
    return x, idx, y


@register
class Gather(OpKernel):
    kinds = ("GATHER",)
    input_roles = ("params", "indices")
    inputs = (2, 2)
    types = ("int8", "float32")
    type_notes = "indices int32 (as TFLM); out-of-range run-time indices are clamped, where TFLM fails"
    options = "axis (negative allowed), batch_dims (negative allowed)"
    tflm_refusals = ("indices of another type than int32",)
    quantized_io = False

    def check(self, op, graph):
        x, idx, y = check_gather_types(op, graph, self.types)
        _, _, _, extent, _ = gather_geometry(op, graph)
        if idx.is_constant:
            bad = idx.data[(idx.data < 0) | (idx.data >= extent)]
            require(bad.size == 0, op, f"index {bad.reshape(-1)[:1].tolist()} is out of range [0, {extent})")

    def fold(self, op, graph):
        x, idx, y = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
        if not (x.is_constant and idx.is_constant):
            return None
        self.check(op, graph)
        batch, outer, coords, extent, inner = gather_geometry(op, graph)
        src = x.data.reshape(batch, outer, extent, inner)
        rows = idx.data.reshape(batch, coords).astype(np.int64)
        out = np.stack([src[b][:, rows[b], :] for b in range(batch)])
        return [out.reshape(y.shape).astype(np_dtype(y.dtype))]

    def emit(self, op, graph, ctx):
        x, idx = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1])
        batch, outer, coords, extent, inner = gather_geometry(op, graph)
        return ctx.render(
            "gather.c.j2",
            ctype=c_type(x.dtype),
            itype=c_type(idx.dtype),
            input=ctx.arg(op.inputs[0]),
            indices=ctx.arg(op.inputs[1]),
            output=ctx.arg(op.outputs[0]),
            batch=batch,
            outer=outer,
            coords=coords,
            extent=extent,
            inner=inner,
            clamp=not idx.is_constant,
        )
