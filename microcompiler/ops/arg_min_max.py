"""ARG_MAX and ARG_MIN: float32 and int8 inputs, int32 indices, a constant int32 axis (the TFLM build
we match refuses int64 outputs and axes, and uint8 inputs).

Each output is the index of the first largest (smallest) value along the axis: a later value wins
only when strictly greater (smaller), as TFLM's ArgMinMax; a leading NaN therefore stays. Raw
values are compared, so no quantization parameters are needed.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.spatial_common import CTYPES, single_axis


@register
class ArgMinMax(OpKernel):
    kinds = ("ARG_MAX", "ARG_MIN")
    input_roles = ("input", "axis")
    inputs = (2, 2)
    types = ("int8", "float32")
    type_notes = "int32 output"
    options = "constant axis, output_type (int32)"
    quantized_io = False

    def _axis(self, op, graph) -> int:
        return single_axis(op, graph)

    def check(self, op, graph):
        require(
            len(op.inputs) == 2 and min(op.inputs) >= 0 and len(op.outputs) == 1,
            op,
            "expects an input, an axis tensor and one output",
        )
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        require(x.dtype in self.types, op, f"input type {x.dtype} is not supported ({', '.join(self.types)})")
        require(y.dtype == "int32", op, f"output type {y.dtype} is not supported (int32, as TFLM)")
        require(len(x.shape) >= 1, op, "the input must have at least one dimension")
        a = self._axis(op, graph)
        want = [n for d, n in enumerate(x.shape) if d != a]
        require(list(y.shape) == want, op, f"output shape {list(y.shape)} should be {want}")

    def emit(self, op, graph, ctx):
        x = ctx.tensor(op.inputs[0])
        a = self._axis(op, graph)
        outer = int(np.prod(x.shape[:a], dtype=np.int64))
        inner = int(np.prod(x.shape[a + 1 :], dtype=np.int64))
        return ctx.render(
            "arg_min_max.c.j2",
            ctype=CTYPES[x.dtype],
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            outer=outer,
            n=x.shape[a],
            inner=inner,
            cmp=">" if op.kind == "ARG_MAX" else "<",
            what="largest" if op.kind == "ARG_MAX" else "smallest",
        )
