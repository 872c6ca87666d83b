"""Helpers shared by the spatial rearrangement kernels (MIRROR_PAD, DEPTH_TO_SPACE, SPACE_TO_DEPTH,
BATCH_TO_SPACE_ND, RESIZE_NEAREST_NEIGHBOR): constant parameter tensors read at compile time, and
one copy loop nest that walks the output in order while each output axis moves the input pointer
either by a fixed stride or by a per-index offset table held in flash.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from microcompiler.ir import Graph, Operator
from microcompiler.ops.base import require

CTYPES = {"int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t", "float32": "float"}


def constant_ints(op: Operator, graph: Graph, position: int, what: str, dtypes=("int32",)) -> np.ndarray:
    """The values of the constant integer input at ``position`` (refused when computed at run time)."""
    require(len(op.inputs) > position and op.inputs[position] >= 0, op, f"the {what} input is missing")
    t = graph.tensors[op.inputs[position]]
    require(t.is_constant, op, f"a {what} computed at run time is not supported yet (it must be a constant)")
    require(t.dtype in dtypes, op, f"{what} of type {t.dtype} are not supported ({', '.join(dtypes)})")
    return np.asarray(t.data).astype(np.int64).reshape(t.shape)


def single_axis(op: Operator, graph: Graph, position: int = 1) -> int:
    """The one constant axis at input ``position``, made non-negative against the input's rank."""
    x = graph.tensors[op.inputs[0]]
    axis = constant_ints(op, graph, position, "axis").reshape(-1)
    require(axis.size == 1, op, f"the axis tensor holds {axis.size} values; it needs exactly one")
    a = int(axis[0])
    require(-len(x.shape) <= a < len(x.shape), op, f"axis {a} is out of range for a {len(x.shape)}D input")
    return a % len(x.shape)


def require_same_type(op: Operator, graph: Graph, types: tuple[str, ...]):
    """The input and output tensors, checked to share one of ``types``."""
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    require(x.dtype in types, op, f"input type {x.dtype} is not supported ({', '.join(types)})")
    require(y.dtype == x.dtype, op, f"output type {y.dtype} differs from input type {x.dtype}")
    return x, y


@dataclass
class Axis:
    """One output axis of a copy: ``extent`` indices, each moving the input pointer by
    ``index * stride`` or, when ``offsets`` is given, by ``offsets[index]``."""

    extent: int
    stride: int = 0
    offsets: list[int] | None = None


def plan_copy(axes: list[Axis]) -> tuple[list[Axis], int, int]:
    """(loop axes, contiguous block copied per innermost step, constant input offset).

    Extent-1 axes are dropped (a table's single offset becomes a constant offset), neighbouring
    strided axes that walk the input contiguously are merged, and the innermost run that is
    contiguous in the input becomes one block copy."""
    base, kept = 0, []
    for a in axes:
        if a.extent == 1:
            base += a.offsets[0] if a.offsets is not None else 0
            continue
        if a.offsets is not None and all(
            o == a.offsets[0] + i * (a.offsets[1] - a.offsets[0]) for i, o in enumerate(a.offsets)
        ):
            base += a.offsets[0]
            a = Axis(a.extent, a.offsets[1] - a.offsets[0])
        kept.append(Axis(a.extent, a.stride, a.offsets))
    merged: list[Axis] = []
    for a in kept:
        prev = merged[-1] if merged else None
        if prev is not None and prev.offsets is None and a.offsets is None and prev.stride == a.stride * a.extent:
            merged[-1] = Axis(prev.extent * a.extent, a.stride)
        else:
            merged.append(a)
    block = 1
    while merged and merged[-1].offsets is None and merged[-1].stride == block:
        block *= merged.pop().extent
    return merged, block, base


def render_copy(ctx, dtype: str, input_expr: str, output_expr: str, axes: list[Axis], name: str = "offsets") -> str:
    """C code copying the input into the output through the given output axes."""
    loops, block, base = plan_copy(axes)
    levels = []
    for k, a in enumerate(loops):
        if a.offsets is not None:
            table = ctx.const(f"{name}{k}", np.array(a.offsets, dtype=np.int32))
            step = f"{table}[i{k}]"
        else:
            step = f"i{k}" if a.stride == 1 else f"i{k} * {a.stride}"
        levels.append((a.extent, step))
    return ctx.render(
        "spatial_copy.c.j2",
        ctype=CTYPES[dtype],
        input=input_expr,
        output=output_expr,
        levels=levels,
        block=block,
        base=base,
    )
