"""MEAN: int8, int16 and float32 over a constant set of axes, with or without keep_dims.

Follows TFLite Micro's reduce_common.cc / reference reduce.h:

* float32: sum in float in input order, divide by the element count;
* int8/int16: int32 sum, minus zero_point * count, requantized by in_scale / out_scale with the
  1/count folded into the multiplier (QuantizedMeanOrSum), then clamped to the output type. The
  TFLM build we are checked against takes this path even when input and output quantization are
  identical (some TFLM versions instead divide the raw sum, truncating; that differs in rounding).

TFLM reduces over at most two distinct axes of an input of rank at most five; so do we.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import register, require
from microcompiler.ops.quant import INT_RANGES, MAX_REQUANTIZE_SCALE, c_float, quantize_multiplier
from microcompiler.ops.reduce_common import (
    ReductionKernel,
    check_reduction,
    element_count,
    reduce_loops,
    reduction_axes,
)
from microcompiler.ops.reduce_common import resolve_axes as resolve_axes  # re-exported (tests import it here)

_MAX_RANK = 5
_MAX_AXES = 2


ORT_LANES = "ort_lanes"  # float MEAN option: MLAS's global pool order (4 lanes), set by the ONNX importer


def mean_multiplier(in_scale: float, out_scale: float, count: int) -> tuple[int, int]:
    """(multiplier, shift) of QuantizedMeanOrSum: in_scale / out_scale with 1/count folded in."""
    multiplier, shift = quantize_multiplier(float(np.float32(in_scale)) / float(np.float32(out_scale)))
    extra = min(count.bit_length() - 1, 32, 31 + shift)  # floor(log2(count)), clamped as TFLM does
    return (multiplier << extra) // count, shift - extra


@register
class Mean(ReductionKernel):
    kinds = ("MEAN",)
    options = "constant axis, keep_dims"

    def check(self, op, graph):
        require(len(op.inputs) == 2 and len(op.outputs) == 1, op, "expects an input, an axis tensor and one output")
        x, axis, y = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
        require(axis.is_constant and axis.dtype == "int32", op, "the axis must be a constant int32 tensor")
        require(
            x.dtype == y.dtype and x.dtype in ("int8", "int16", "float32"),
            op,
            f"type combination input/output ({x.dtype}, {y.dtype}) is not supported "
            "(int8, int16 or float32, the same for both)",
        )
        require(len(x.shape) <= _MAX_RANK, op, f"input rank {len(x.shape)} is above {_MAX_RANK}")
        require(axis.size <= 4, op, f"{axis.size} axis entries given; at most 4 are supported")
        axes = reduction_axes(op, graph)
        require(
            axes is not None, op, f"axis {axis.data.reshape(-1).tolist()} is out of range for a {len(x.shape)}D input"
        )
        require(len(axes) <= _MAX_AXES, op, f"reducing over {len(axes)} axes; at most {_MAX_AXES} are supported")
        check_reduction(op, x, y, axes, "reducing")
        if x.dtype != "float32" and x.quant is not None and y.quant is not None:
            ratio = float(np.float32(x.quant.scale[0])) / float(np.float32(y.quant.scale[0]))
            require(
                ratio < MAX_REQUANTIZE_SCALE,
                op,
                f"the requantization scale input_scale / output_scale is "
                f"{ratio:.3g}, beyond any int32 multiplier (2^30); TFLM would overflow: the file's scales "
                "are damaged",
            )

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        axes = reduction_axes(op, graph)
        count = element_count(x, axes)
        kept, red, in_idx, out_idx = reduce_loops(x.shape, axes)
        values = dict(
            kept=kept,
            red=red,
            in_idx=in_idx,
            out_idx=out_idx,
            count=count,
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
        )
        reduce = op.options.get("ort_reduce")
        if x.dtype == "float32" and reduce and reduce[1] * reduce[2] == x.size and reduce[2] == count:
            mode, outputs, count_, js, rs = reduce  # ONNX Runtime's ReduceMean order (the importer sets it)
            return ctx.render(
                "mean_ort_reduce.c.j2",
                mode=mode,
                outputs=outputs,
                values=count_,
                js=js,
                rs=rs,
                divisor=c_float(count),
                input=values["input"],
                output=values["output"],
            )
        if x.dtype == "float32" and op.options.get(ORT_LANES) and len(x.shape) == 4 and sorted(axes) == [1, 2]:
            # ONNX Runtime's GlobalAveragePool over a plane (the importer sets it, docs/onnx.md)
            n, h, w, c = x.shape
            return ctx.render(
                "mean_ort_lanes.c.j2",
                batch=n,
                channels=c,
                pixels=h * w,
                divisor=c_float(count),
                clamp=None,
                input=values["input"],
                output=values["output"],
            )
        if x.dtype == "float32":
            return ctx.render("mean.c.j2", mode="float", acc_t="float", divisor=c_float(count), **values)
        ctype = "int16_t" if x.dtype == "int16" else "int8_t"
        (in_scale, in_zp), (out_scale, out_zp) = x.quant.single(), y.quant.single()
        lo, hi = INT_RANGES[x.dtype]
        return ctx.render(
            "mean.c.j2",
            mode="requantize",
            acc_t="int32_t",
            ctype=ctype,
            q=mean_multiplier(in_scale, out_scale, count),
            sum_offset=-in_zp * count,
            output_offset=out_zp,
            out_min=lo,
            out_max=hi,
            **values,
        )
