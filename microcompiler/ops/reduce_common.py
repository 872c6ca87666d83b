"""What MEAN and REDUCE_MAX/REDUCE_MIN/SUM share, as TFLM's reduce_common.cc: the constant axes,
the output shape with or without keep_dims, the checks of the integer sum, and the loop nest over
the kept and the reduced dimensions.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ir import Graph, Operator, Tensor
from microcompiler.ops.base import OpKernel, require
from microcompiler.ops.quant import INT_RANGES


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


def reduction_axes(op: Operator, graph: Graph) -> list[int] | None:
    """The operator's constant axes (input 1), resolved against the input's rank."""
    x, axis = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
    return resolve_axes(np.asarray(axis.data).reshape(-1), len(x.shape))


def element_count(x: Tensor, axes: list[int]) -> int:
    """How many input elements each output element reduces."""
    return int(np.prod([x.shape[a] for a in axes], dtype=np.int64))


def check_reduction(op: Operator, x: Tensor, y: Tensor, axes: list[int], sum_verb: str | None) -> None:
    """The output shape (with or without keep_dims) and, for integer types, per-tensor quantization
    and, when the operator sums (``sum_verb``: how the message names it), an int32 sum that cannot
    overflow."""
    kept = [n for d, n in enumerate(x.shape) if d not in axes]
    want = [1 if d in axes else n for d, n in enumerate(x.shape)] if op.options.get("keep_dims") else kept
    require(list(y.shape) == want, op, f"output shape {list(y.shape)} should be {want}")
    if x.dtype == "float32":
        return
    require(
        x.quant is not None and y.quant is not None and not x.quant.per_channel and not y.quant.per_channel,
        op,
        "input and output need per-tensor quantization",
    )
    if sum_verb:
        count = element_count(x, axes)
        worst = count * (abs(INT_RANGES[x.dtype][0]) + abs(x.quant.zero_point[0]))
        require(worst < 2**31, op, f"{sum_verb} {count} elements could overflow the int32 sum")


class ReductionKernel(OpKernel):
    """A reduction over constant axes: one operation per input element."""

    input_roles = ("input", "axis")
    inputs = (2, 2)

    def macs(self, op: Operator, graph: Graph) -> int:
        return graph.tensors[op.inputs[0]].size


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
