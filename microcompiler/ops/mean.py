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

from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.quant import INT_RANGES, c_float, quantize_multiplier

_MAX_RANK = 5
_MAX_AXES = 2


def resolve_axes(axes, rank: int) -> list[int] | None:
    """Axes made non-negative with duplicates removed, in first-seen order; None if out of range."""
    out: list[int] = []
    for a in axes:
        a = int(a)
        a = a + rank if a < 0 else a
        if not 0 <= a < rank:
            return None
        if a not in out:
            out.append(a)
    return out


def mean_multiplier(in_scale: float, out_scale: float, count: int) -> tuple[int, int]:
    """(multiplier, shift) of QuantizedMeanOrSum: in_scale / out_scale with 1/count folded in."""
    multiplier, shift = quantize_multiplier(float(np.float32(in_scale)) / float(np.float32(out_scale)))
    extra = min(count.bit_length() - 1, 32, 31 + shift)  # floor(log2(count)), clamped as TFLM does
    return (multiplier << extra) // count, shift - extra


def reduce_loops(shape, axes):
    """Loops over the kept and the reduced dimensions, and the input/output index expressions.

    Extent-1 dimensions are dropped and neighbouring dimensions of the same kind merged; loops keep
    the input's order, so each output sums its elements in the order TFLM does.
    """
    dims: list[list] = []  # [extent, reduced?]
    for d, n in enumerate(shape):
        if n == 1:
            continue
        reduced = d in axes
        if dims and dims[-1][1] == reduced:
            dims[-1][0] *= n
        else:
            dims.append([n, reduced])
    names, kept, red = [], [], []
    for n, reduced in dims:
        group = red if reduced else kept
        name = ("r" if reduced else "k") + str(len(group))
        group.append((name, n))
        names.append(name)
    in_terms, step = [], 1
    for name, (n, _) in zip(reversed(names), reversed(dims)):
        in_terms.append(name if step == 1 else f"{name} * {step}")
        step *= n
    out_terms, step = [], 1
    for name, n in reversed(kept):
        out_terms.append(name if step == 1 else f"{name} * {step}")
        step *= n
    return kept, red, " + ".join(reversed(in_terms)) or "0", " + ".join(reversed(out_terms)) or "0"


@register
class Mean(OpKernel):
    kinds = ("MEAN",)
    input_roles = ("input", "axis")
    inputs = (2, 2)
    options = "constant axis, keep_dims"

    def _axes(self, op, graph):
        x = graph.tensors[op.inputs[0]]
        return resolve_axes(graph.tensors[op.inputs[1]].data.reshape(-1), len(x.shape))

    def check(self, op, graph):
        require(len(op.inputs) == 2 and len(op.outputs) == 1, op, "expects an input, an axis tensor and one output")
        x, axis, y = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
        require(axis.is_constant and axis.dtype == "int32", op, "the axis must be a constant int32 tensor")
        require(x.dtype == y.dtype and x.dtype in ("int8", "int16", "float32"), op,
                f"type combination input/output ({x.dtype}, {y.dtype}) is not supported "
                "(int8, int16 or float32, the same for both)")
        require(len(x.shape) <= _MAX_RANK, op, f"input rank {len(x.shape)} is above {_MAX_RANK}")
        require(axis.size <= 4, op, f"{axis.size} axis entries given; at most 4 are supported")
        axes = self._axes(op, graph)
        require(axes is not None, op, f"axis {axis.data.reshape(-1).tolist()} is out of range for a "
                f"{len(x.shape)}D input")
        require(len(axes) <= _MAX_AXES, op, f"reducing over {len(axes)} axes; at most {_MAX_AXES} are supported")
        kept = [n for d, n in enumerate(x.shape) if d not in axes]
        want = [1 if d in axes else n for d, n in enumerate(x.shape)] if op.options.get("keep_dims") else kept
        require(list(y.shape) == want, op, f"output shape {list(y.shape)} should be {want}")
        if x.dtype != "float32":
            require(x.quant is not None and y.quant is not None and not x.quant.per_channel
                    and not y.quant.per_channel, op, "input and output need per-tensor quantization")
            count = self._count(x, axes)
            worst = count * (abs(INT_RANGES[x.dtype][0]) + abs(x.quant.zero_point[0]))
            require(worst < 2**31, op, f"reducing {count} elements could overflow the int32 sum")

    @staticmethod
    def _count(x, axes) -> int:
        return int(np.prod([x.shape[a] for a in axes], dtype=np.int64))

    def macs(self, op, graph):
        return graph.tensors[op.inputs[0]].size

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        axes = self._axes(op, graph)
        count = self._count(x, axes)
        kept, red, in_idx, out_idx = reduce_loops(x.shape, axes)
        values = dict(kept=kept, red=red, in_idx=in_idx, out_idx=out_idx, count=count,
                      input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]))
        if x.dtype == "float32":
            return ctx.render("mean.c.j2", mode="float", acc_t="float", divisor=c_float(count), **values)
        ctype = "int16_t" if x.dtype == "int16" else "int8_t"
        (in_scale, in_zp), (out_scale, out_zp) = x.quant.single(), y.quant.single()
        lo, hi = INT_RANGES[x.dtype]
        return ctx.render("mean.c.j2", mode="requantize", acc_t="int32_t", ctype=ctype,
                          q=mean_multiplier(in_scale, out_scale, count), sum_offset=-in_zp * count,
                          output_offset=out_zp, out_min=lo, out_max=hi, **values)
