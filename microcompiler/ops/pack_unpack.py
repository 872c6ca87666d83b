"""PACK (int8, int16, int32, int64, float32) and UNPACK (int8, int16, int32, float32): TFLM's types.

PACK stacks N same-shaped inputs along a new axis; UNPACK is its inverse (one output per index of
the axis, the axis removed). Each input (PACK) or output (UNPACK) is one strided copy; the values are
copied unchanged.
"""

from __future__ import annotations

from microcompiler.ops.base import register, require, require_consistent
from microcompiler.ops.movement_common import (
    CopyKernel,
    StridedCopy,
    contiguous_copy,
    require_shape,
    require_types,
    row_strides,
)


@register
class Pack(CopyKernel):
    kinds = ("PACK",)
    inputs = (1, 1 << 16)
    types = ("int8", "int16", "int32", "int64", "float32")
    options = "values_count, axis (negative allowed)"

    def data_tensors(self, op):
        return [*op.inputs, *op.outputs]

    def check(self, op, graph):
        require(all(i >= 0 for i in op.inputs), op, "an input is missing")
        require_types(op, graph, self.types, self.data_tensors(op))
        self.plan(op, graph)

    def plan(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        n = len(op.inputs)
        require_consistent(  # TFLM packs values_count inputs: 0 (or no options) writes nothing
            op.options.get("values_count", 0) == n,
            op,
            f"values_count {op.options.get('values_count', 0)} differs from the {n} inputs (TFLM packs only "
            "values_count inputs)",
        )
        rank = len(x.shape) + 1
        axis = op.options.get("axis", 0)
        require(-rank <= axis < rank, op, f"axis {axis} is out of range for the output rank {rank}")
        axis %= rank
        for i in op.inputs:
            require_shape(op, graph.tensors[i], x.shape, f"input '{graph.tensors[i].name}'")
        out_shape = list(x.shape)
        out_shape.insert(axis, n)
        require_shape(op, y, out_shape)
        out_strides = row_strides(out_shape)
        dst_strides = out_strides[:axis] + out_strides[axis + 1 :]
        return [
            StridedCopy(
                f"t{i}",
                f"t{op.outputs[0]}",
                list(x.shape),
                row_strides(x.shape),
                dst_strides,
                0,
                k * out_strides[axis],
                f"input {k}",
            )
            for k, i in enumerate(op.inputs)
        ]


@register
class Unpack(CopyKernel):
    kinds = ("UNPACK",)
    inputs = (1, 1)
    outputs = (1, 1 << 16)
    types = ("int8", "int16", "int32", "float32")
    options = "num, axis (negative allowed)"

    def plan(self, op, graph):
        x = graph.tensors[op.inputs[0]]
        rank = len(x.shape)
        axis = op.options.get("axis", 0)
        require(rank >= 1 and -rank <= axis < rank, op, f"axis {axis} is out of range for rank {rank}")
        axis %= rank
        num = x.shape[axis]
        require_consistent(  # TFLM writes num outputs: 0 (or no options) writes nothing
            op.options.get("num", 0) == num and len(op.outputs) == num,
            op,
            f"unpacking dimension {axis} of extent {num} needs {num} outputs and num {num} "
            f"(num {op.options.get('num', 0)}, {len(op.outputs)} outputs; TFLM writes only num outputs)",
        )
        strides = row_strides(x.shape)
        shape = list(x.shape[:axis]) + list(x.shape[axis + 1 :])
        copies = []
        for k, o in enumerate(op.outputs):
            require_shape(op, graph.tensors[o], shape, f"output {k}")
            copies.append(
                contiguous_copy(
                    f"t{op.inputs[0]}",
                    f"t{o}",
                    shape,
                    strides[:axis] + strides[axis + 1 :],
                    k * strides[axis],
                    f"output {k}",
                )
            )
        return copies
