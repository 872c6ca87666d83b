"""REVERSE_V2: every type TFLM runs (int8, int16, int32, int64, float32, bool), constant axes.

The values are copied unchanged; a reversed dimension is walked with a negative stride, and the
dimensions inside the innermost reversed one are copied as contiguous runs (memcpy).
"""

from __future__ import annotations

from microcompiler.ops.base import register, require, require_consistent
from microcompiler.ops.movement_common import CopyKernel, constant_ints, contiguous_copy, require_shape, row_strides


@register
class ReverseV2(CopyKernel):
    kinds = ("REVERSE_V2",)
    input_roles = ("input", "axis")
    inputs = (2, 2)
    tflm_refusals = (
        "an axis tensor that is not one-dimensional int32, or with more values than input dimensions",
        "an input of more than 6 dimensions",
        'axes that are not adjacent (its Eval: "Non-contiguous `axes` not supported")',
    )
    options = "constant one-dimensional int32 axes (negative counts from the end), contiguous (as TFLM)"

    def plan(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        rank = len(x.shape)
        axes = constant_ints(graph, op, 1, "axis", vector=True, dtypes=("int32",))
        require(rank >= 1, op, "the input must have at least one dimension")
        require(rank <= 6, op, f"a {rank}-D input is not supported (TFLM's REVERSE_V2 takes up to 6-D inputs)")
        require_consistent(
            len(axes) <= rank, op, f"{len(axes)} axes for a {rank}-D input (TFLM requires at most one per dimension)"
        )
        require(all(-rank <= a < rank for a in axes), op, f"axis {axes} is out of range for rank {rank}")
        axes = [a % rank for a in axes]
        require(len(set(axes)) == len(axes), op, f"axis {axes} names a dimension twice")
        require(
            sorted(axes) == list(range(min(axes, default=0), min(axes, default=0) + len(axes))),
            op,
            f"axes {sorted(axes)} are not contiguous (TFLM reverses contiguous axes only)",
        )
        require_shape(op, y, x.shape)
        strides = row_strides(x.shape)
        src_strides = [-s if k in axes else s for k, s in enumerate(strides)]
        base = sum((x.shape[k] - 1) * strides[k] for k in axes)
        return [contiguous_copy(f"t{op.inputs[0]}", f"t{op.outputs[0]}", x.shape, src_strides, base)]
