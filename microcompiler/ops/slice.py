"""SLICE: int8, int16, int32, float32 and bool (TFLM's types), constant begin and size.

A size of -1 takes everything from begin to the end of the dimension. The values are copied
unchanged, contiguous runs with memcpy.
"""

from __future__ import annotations

from microcompiler.ops.base import register, require
from microcompiler.ops.movement_common import CopyKernel, constant_ints, contiguous_copy, require_shape, row_strides


@register
class Slice(CopyKernel):
    kinds = ("SLICE",)
    input_roles = ("input", "begin", "size")
    inputs = (3, 3)
    types = ("int8", "int16", "int32", "float32", "bool")
    tflm_refusals = ("an input of more than 5 dimensions (TFLM aborts running it)",)
    options = "constant begin and size (int32 or int64; size -1: to the end)"

    def plan(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        rank = len(x.shape)
        begin = constant_ints(graph, op, 1, "begin")
        size = constant_ints(graph, op, 2, "size")
        require(rank <= 5, op, f"a {rank}-D input is not supported (TFLM's SLICE takes up to 5-D inputs)")
        require(
            len(begin) == rank and len(size) == rank,
            op,
            f"begin {begin} and size {size} must give one value for each of the {rank} input dimensions",
        )
        out_shape = []
        for k, (b, n, d) in enumerate(zip(begin, size, x.shape)):
            n = d - b if n == -1 else n
            require(
                0 <= b and 0 <= n and b + n <= d,
                op,
                f"begin {b} and size {size[k]} are out of range for dimension {k} of extent {d}",
            )
            out_shape.append(n)
        require_shape(op, y, out_shape)
        strides = row_strides(x.shape)
        base = sum(b * s for b, s in zip(begin, strides))
        return [contiguous_copy(f"t{op.inputs[0]}", f"t{op.outputs[0]}", out_shape, strides, base)]
