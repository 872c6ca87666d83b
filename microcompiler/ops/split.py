"""SPLIT and SPLIT_V: int8, int16, int32 and float32 (TFLM's types), constant axis and sizes.

SPLIT cuts the input into ``num_splits`` equal parts along an axis (its inputs are the axis, then
the values); SPLIT_V into parts of the given sizes, one of which may be -1 (the rest). Each output is
a contiguous or strided copy of its part; the values are not requantized.
"""

from __future__ import annotations

from microcompiler.ops.base import register, require
from microcompiler.ops.movement_common import CopyKernel, constant_ints, contiguous_copy, require_shape, row_strides


def split_copies(op, graph, x_index: int, axis: int, sizes: list[int]):
    x = graph.tensors[x_index]
    rank = len(x.shape)
    require(-rank <= axis < rank, op, f"axis {axis} is out of range for rank {rank}")
    axis %= rank
    require(
        len(op.outputs) == len(sizes),
        op,
        f"the operator has {len(op.outputs)} outputs but splits into {len(sizes)} parts",
    )
    strides = row_strides(x.shape)
    copies, start = [], 0
    for k, (o, n) in enumerate(zip(op.outputs, sizes)):
        shape = list(x.shape)
        shape[axis] = n
        require_shape(op, graph.tensors[o], shape, f"output {k}")
        copies.append(
            contiguous_copy(
                f"t{x_index}",
                f"t{o}",
                shape,
                strides,
                start * strides[axis],
                f"output {k}: [{start}, {start + n}) of dimension {axis}",
            )
        )
        start += n
    return copies


@register
class Split(CopyKernel):
    kinds = ("SPLIT", "SPLIT_V")
    inputs = (2, 3)
    outputs = (1, 1 << 16)
    arity = {"SPLIT": ((2, 2), (1, 64)), "SPLIT_V": ((3, 3), (1, 64))}
    types = ("int8", "int16", "int32", "float32")
    options = "num_splits; constant axis (negative allowed); SPLIT_V: constant sizes, one may be -1"

    def describe(self, kind):
        d = super().describe(kind)
        if kind == "SPLIT":
            d["options"] = "num_splits; constant axis (negative allowed)"
        else:
            d["options"] = "num_splits; constant axis (negative allowed) and sizes (one may be -1)"
        return d

    def data_tensors(self, op):
        return [op.inputs[1] if op.kind == "SPLIT" else op.inputs[0], *op.outputs]

    def plan(self, op, graph):
        if op.kind == "SPLIT":
            axis_values = constant_ints(graph, op, 0, "axis")
            x_index = op.inputs[1]
        else:
            axis_values = constant_ints(graph, op, 2, "axis")
            x_index = op.inputs[0]
        require(len(axis_values) == 1, op, f"the axis must be one value, not {axis_values}")
        axis = axis_values[0]
        x = graph.tensors[x_index]
        rank = len(x.shape)
        require(rank >= 1 and -rank <= axis < rank, op, f"axis {axis} is out of range for rank {rank}")
        extent = x.shape[axis % rank]
        n = op.options.get("num_splits", 0) or len(op.outputs)  # 0 (no options table): one part per output
        if op.kind == "SPLIT":
            require(
                n >= 1 and extent % n == 0,
                op,
                f"num_splits {n} does not divide dimension {axis % rank} of extent {extent}",
            )
            sizes = [extent // n] * n
        else:
            sizes = constant_ints(graph, op, 1, "size_splits")
            require(
                sizes.count(-1) <= 1 and all(s >= 0 or s == -1 for s in sizes),
                op,
                f"size_splits {sizes} may hold one -1 and otherwise sizes of at least 0",
            )
            if -1 in sizes:
                rest = extent - sum(s for s in sizes if s != -1)
                require(rest >= 0, op, f"size_splits {sizes} add up to more than the extent {extent}")
                sizes[sizes.index(-1)] = rest
            require(sum(sizes) == extent, op, f"size_splits {sizes} do not add up to the extent {extent}")
            require(n == len(sizes), op, f"num_splits {n} differs from the {len(sizes)} size_splits")
        return split_copies(op, graph, x_index, axis, sizes)
