"""TRANSPOSE: int8, int16 and float32 (TFLM's types), any rank, constant permutation.

TFLM copies the raw values (no requantization, the quantization parameters are not read). Output
dimension k walks input dimension perm[k]; dimensions that stay adjacent and in order are merged,
so a permutation that keeps the innermost dimension copies whole rows with memcpy.
"""

from __future__ import annotations

from microcompiler.ops.base import register, require
from microcompiler.ops.movement_common import CopyKernel, constant_ints, contiguous_copy, require_shape, row_strides


@register
class Transpose(CopyKernel):
    kinds = ("TRANSPOSE",)
    input_roles = ("input", "perm")
    inputs = (2, 2)
    types = ("int8", "int16", "float32")
    tflm_refusals = (
        "a permutation tensor that is not one-dimensional (NumDimensions(perm) != 1)",
        'an input of more than 5 dimensions ("Transpose op only supports 1D-5D input arrays")',
    )
    options = "constant one-dimensional permutation (int32 or int64), 1-D to 5-D inputs (as TFLM)"

    def plan(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        perm = constant_ints(graph, op, 1, "permutation", vector=True)
        rank = len(x.shape)
        require(rank <= 5, op, f"a {rank}-D input is not supported (TFLM's TRANSPOSE takes 1-D to 5-D inputs)")
        require(
            sorted(perm) == list(range(rank)),
            op,
            f"permutation {perm} is not a permutation of the {rank} input dimensions",
        )
        out_shape = [x.shape[p] for p in perm]
        require_shape(op, y, out_shape)
        strides = row_strides(x.shape)
        return [contiguous_copy(f"t{op.inputs[0]}", f"t{op.outputs[0]}", out_shape, [strides[p] for p in perm])]
