"""REDUCE_MAX, REDUCE_MIN (int8, float32) and SUM (int8, int16, float32) over a constant set of axes,
with or without keep_dims, as TFLM's reduce_common.cc:

* REDUCE_MAX/REDUCE_MIN start from the type's lowest/highest value and keep ``in > m`` / ``in < m``
  in input order (a NaN never replaces the running value); int8 needs the output to share the
  input's quantization (TFLM refuses anything else) and copies the winning value unchanged;
* SUM float32 adds in input order from 0.0f; SUM int8/int16 adds in int32, subtracts
  zero_point * count and requantizes by in_scale / out_scale (TFLM's QuantizedMeanOrSum with
  compute_sum), clamped to the output type. TFLM sums over at most two distinct axes of a tensor
  of rank at most five; so do we. The loops are MEAN's (``mean.reduce_loops``).
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import register, require
from microcompiler.ops.quant import INT_RANGES, c_float, quantize_multiplier
from microcompiler.ops.reduce_common import (
    ReductionKernel,
    check_reduction,
    element_count,
    reduce_loops,
    reduction_axes,
)
from microcompiler.ops.spatial_common import CTYPES

_SUM_MAX_RANK = 5
_SUM_MAX_AXES = 2


@register
class Reduce(ReductionKernel):
    kinds = ("REDUCE_MAX", "REDUCE_MIN", "SUM")
    types = ("int8", "int16", "float32")
    options = "constant axis (int32), keep_dims"

    def describe(self, kind):
        info = super().describe(kind)
        if kind != "SUM":
            info["types"] = ["int8", "float32"]
            info["type_notes"] = "int8 output quantization must equal the input's"
        else:
            info["type_notes"] = "int8/int16 requantized; at most 2 distinct axes, rank at most 5"
        return info

    def check(self, op, graph):
        require(
            len(op.inputs) == 2 and min(op.inputs) >= 0 and len(op.outputs) == 1,
            op,
            "expects an input, an axis tensor and one output",
        )
        x, axis, y = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
        types = self.describe(op.kind)["types"]
        require(x.dtype in types, op, f"input type {x.dtype} is not supported ({', '.join(types)})")
        require(y.dtype == x.dtype, op, f"output type {y.dtype} differs from input type {x.dtype}")
        require(axis.dtype == "int32", op, f"the axis must be an int32 tensor, not {axis.dtype}")
        require(axis.is_constant, op, "an axis computed at run time is not supported yet (it must be a constant)")
        axes = reduction_axes(op, graph)
        require(
            axes is not None,
            op,
            f"axis {np.asarray(axis.data).reshape(-1).tolist()} is out of range for a {len(x.shape)}D input",
        )
        if op.kind == "SUM":
            require(len(x.shape) <= _SUM_MAX_RANK, op, f"input rank {len(x.shape)} is above {_SUM_MAX_RANK}")
            require(
                len(axes) <= _SUM_MAX_AXES, op, f"summing over {len(axes)} axes; TFLM sums over at most {_SUM_MAX_AXES}"
            )
        check_reduction(op, x, y, axes, "summing" if op.kind == "SUM" else None)
        if x.dtype != "float32" and op.kind != "SUM":
            (si, zi), (so, zo) = x.quant.single(), y.quant.single()
            require(
                float(np.float32(si)) == float(np.float32(so)) and zi == zo,
                op,
                f"input and output quantization must be the same ({(si, zi)} vs {(so, zo)})",
            )

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        axes = reduction_axes(op, graph)
        kept, red, in_idx, out_idx = reduce_loops(x.shape, axes)
        values = dict(
            kept=kept,
            red=red,
            in_idx=in_idx,
            out_idx=out_idx,
            ctype=CTYPES[x.dtype],
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
        )
        if op.kind != "SUM":
            if x.dtype == "float32":
                init = "-FLT_MAX" if op.kind == "REDUCE_MAX" else "FLT_MAX"
            else:
                init = str(INT_RANGES[x.dtype][0 if op.kind == "REDUCE_MAX" else 1])
            return ctx.render(
                "reduce.c.j2",
                mode="extreme",
                acc_t=CTYPES[x.dtype],
                init=init,
                cmp=">" if op.kind == "REDUCE_MAX" else "<",
                **values,
            )
        if x.dtype == "float32":
            return ctx.render("reduce.c.j2", mode="float_sum", acc_t="float", init=c_float(0.0), **values)
        count = element_count(x, axes)
        (in_scale, in_zp), (out_scale, out_zp) = x.quant.single(), y.quant.single()
        lo, hi = INT_RANGES[x.dtype]
        q = quantize_multiplier(float(np.float32(in_scale)) / float(np.float32(out_scale)))
        return ctx.render(
            "reduce.c.j2",
            mode="requantize",
            acc_t="int32_t",
            init="0",
            q=q,
            count=count,
            sum_offset=-in_zp * count,
            output_offset=out_zp,
            out_min=lo,
            out_max=hi,
            **values,
        )
