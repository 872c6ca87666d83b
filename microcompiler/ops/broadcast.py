"""Broadcasting shared by the elementwise operators (ADD, SUB, MUL, DIV, comparisons, SELECT_V2...).

TFLite broadcasts numpy-style: shapes are aligned on their last dimension, and a dimension of
extent 1 is repeated to match the other operand's. The generated code walks the output once in
order, with one loop per run of dimensions that every input reads in the same way, and each input
indexed with its own strides (0 where it is broadcast).
"""

from __future__ import annotations

from microcompiler.ir import Graph, Operator
from microcompiler.ops.base import require
from microcompiler.templating import render

# TFLM's broadcast kernels extend shapes to 6D (kMaxBroadcastDim); we accept what they accept.
MAX_BROADCAST_RANK = 6


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    """numpy broadcasting of the shapes, or None when they are incompatible."""
    rank = max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    out = []
    for extents in zip(*padded):
        wide = {n for n in extents if n != 1}
        if len(wide) > 1:
            return None
        out.append(wide.pop() if wide else 1)
    return tuple(out)


def broadcast_loops(out_shape, in_shapes):
    """Loop nest that walks the output in order, with each input's stride per loop.

    Output dimensions of extent 1 are dropped and neighbouring dimensions that every input either
    reads fully or broadcasts in the same way are merged, so a plain elementwise op is one loop and
    [1,4,4,8] + [8] is two. Returns (loops, input index expressions, output index expression),
    loops being (variable, trip count) pairs; no loops (and index 0) for a one-element output.
    """
    rank = len(out_shape)
    shapes = [(1,) * (rank - len(s)) + tuple(s) for s in in_shapes]
    dims: list[tuple[int, tuple[bool, ...]]] = []  # (extent, per input: is it broadcast here)
    for d, n in enumerate(out_shape):
        if n == 1:
            continue
        flags = tuple(s[d] == 1 for s in shapes)
        if dims and dims[-1][1] == flags:
            dims[-1] = (dims[-1][0] * n, flags)
        else:
            dims.append((n, flags))
    if not dims:  # one element: no loop, every index is 0
        return [], ["0"] * len(shapes), "0"
    names = ["i"] if len(dims) == 1 else [f"i{k}" for k in range(len(dims))]

    def index(strides):
        terms = [v if s == 1 else f"{v} * {s}" for v, s in zip(names, strides) if s]
        return " + ".join(terms) or "0"

    def strides_of(broadcast):
        strides, step = [], 1
        for (n, _), b in zip(reversed(dims), reversed(broadcast)):
            strides.append(0 if b else step)
            step *= 1 if b else n
        return strides[::-1]

    in_index = [index(strides_of([f[j] for _, f in dims])) for j in range(len(shapes))]
    out_index = index(strides_of([False] * len(dims)))
    return list(zip(names, [n for n, _ in dims])), in_index, out_index


def require_broadcast(op: Operator, graph: Graph, inputs: list[int] | None = None) -> tuple[int, ...]:
    """Check that the inputs broadcast (up to MAX_BROADCAST_RANK dimensions) to the output's shape;
    return that shape."""
    inputs = op.inputs if inputs is None else inputs
    shapes = [graph.tensors[i].shape for i in inputs]
    y = graph.tensors[op.outputs[0]]
    shape = broadcast_shape(*shapes)
    require(shape is not None, op, "input shapes " + " and ".join(str(list(s)) for s in shapes) + " do not broadcast")
    require(
        len(shape) <= MAX_BROADCAST_RANK,
        op,
        f"broadcasting is supported up to {MAX_BROADCAST_RANK}D, got {len(shape)}D",
    )
    require(
        tuple(y.shape) == shape,
        op,
        f"output shape {list(y.shape)} is not the broadcast shape {list(shape)} of the inputs",
    )
    return shape


def unbroadcast_inputs(op: Operator, graph: Graph, positions=None) -> tuple[int, ...]:
    """Positions in op.inputs of the inputs that have the output's shape and type: the memory
    planner may give the output their memory when the kernel reads element i of every input
    before writing element i of the output."""
    y = graph.tensors[op.outputs[0]]
    rank = len(y.shape)
    positions = range(len(op.inputs)) if positions is None else positions
    found = []
    for k in positions:
        t = graph.tensors[op.inputs[k]]
        if (1,) * (rank - len(t.shape)) + tuple(t.shape) == tuple(y.shape) and t.dtype == y.dtype:
            found.append(k)
    return tuple(found)


def render_loop_nest(loops, body: str, prologue: str = "") -> str:
    """C code: the loop nest of ``broadcast_loops`` around ``body`` (statements indented by two
    spaces, as at the top of a function), after the optional ``prologue`` statements."""
    return render("broadcast_loop.c.j2", loops=loops, body=body.rstrip("\n"), prologue=prologue.rstrip("\n"))
