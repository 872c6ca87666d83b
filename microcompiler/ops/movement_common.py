"""What the data-movement kernels share: strided copies planned at compile time.

STRIDED_SLICE, SLICE, TRANSPOSE, REVERSE_V2, BROADCAST_TO, SPLIT, SPLIT_V, PACK and UNPACK all move
values without changing them: every output element is one input element. Each is described as a
few :class:`StridedCopy` plans (``dst[dst_base + sum(i_k * dst_strides[k])] = src[src_base +
sum(i_k * src_strides[k])]`` over the index space ``shape``), simplified (extent-1 dimensions
dropped, dimensions that stay contiguous on both sides merged) and rendered by one template: a loop
nest whose innermost contiguous runs are memcpy calls, with no loop of trip count 1. The same plan
folds constants at compile time (:func:`run_copy`), so folded values and generated code cannot
disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from microcompiler.ir import Graph, Operator, Tensor, c_type, np_dtype
from microcompiler.ops.base import OpKernel, require, require_consistent

# Tensor types whose values the movement kernels copy unchanged.
RAW_TYPES = ("int8", "int16", "int32", "int64", "float32", "bool")


def row_strides(shape) -> list[int]:
    """Row-major element strides of ``shape``."""
    strides, step = [], 1
    for d in reversed(list(shape)):
        strides.append(step)
        step *= int(d)
    return strides[::-1]


@dataclass
class StridedCopy:
    """Copy ``prod(shape)`` elements from array ``src`` to array ``dst`` (C expressions)."""

    src: str
    dst: str
    shape: list[int]
    src_strides: list[int]
    dst_strides: list[int]
    src_base: int = 0
    dst_base: int = 0
    comment: str = ""

    def simplified(self) -> StridedCopy:
        dims = [(n, s, d) for n, s, d in zip(self.shape, self.src_strides, self.dst_strides) if n != 1]
        merged: list[list[int]] = []
        for n, s, d in dims:
            if merged and merged[-1][1] == s * n and merged[-1][2] == d * n:
                merged[-1] = [merged[-1][0] * n, s, d]
            else:
                merged.append([n, s, d])
        return StridedCopy(
            self.src,
            self.dst,
            [m[0] for m in merged],
            [m[1] for m in merged],
            [m[2] for m in merged],
            self.src_base,
            self.dst_base,
            self.comment,
        )

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


def contiguous_copy(src: str, dst: str, shape, src_strides, src_base: int = 0, comment: str = "") -> StridedCopy:
    """A copy that writes ``dst`` densely (row-major ``shape``) from strided ``src``."""
    return StridedCopy(
        src, dst, [int(n) for n in shape], [int(s) for s in src_strides], row_strides(shape), int(src_base), 0, comment
    )


def _index(base: int, terms: list[tuple[str, int]]) -> str:
    """A C index expression ``base + v0 * s0 + ...`` without ``+ 0`` or ``* 1``."""
    parts = []
    for var, stride in terms:
        if stride == 0:
            continue
        mag = abs(stride)
        term = var if mag == 1 else f"{var} * {mag}"
        parts.append(("- " if stride < 0 else "+ ") + term)
    text = " ".join(parts)
    if base:
        return f"{base} {text}".strip()
    if not text:
        return "0"
    return text[2:] if text.startswith("+ ") else "-" + text[2:]


@dataclass
class _Rendered:
    comment: str
    loops: list[tuple[str, int]]  # (variable, trip count), outermost first
    memcpy: bool
    count: int  # elements per memcpy
    src_index: str
    dst_index: str
    src: str
    dst: str

    @property
    def src_ptr(self) -> str:
        return self.src if self.src_index == "0" else f"{self.src} + {self.src_index}"

    @property
    def dst_ptr(self) -> str:
        return self.dst if self.dst_index == "0" else f"{self.dst} + {self.dst_index}"


def _render_plan(copy: StridedCopy) -> _Rendered:
    c = copy.simplified()
    shape, ss, ds = c.shape, c.src_strides, c.dst_strides
    memcpy = bool(shape) and ss[-1] == 1 and ds[-1] == 1
    count = shape[-1] if memcpy else 1
    outer = len(shape) - 1 if memcpy else len(shape)
    names = [f"i{k}" for k in range(outer)]
    loops = list(zip(names, shape[:outer]))
    src_index = _index(c.src_base, list(zip(names, ss[:outer])))
    dst_index = _index(c.dst_base, list(zip(names, ds[:outer])))
    return _Rendered(c.comment, loops, memcpy, count, src_index, dst_index, c.src, c.dst)


def render_copies(ctx, copies: list[StridedCopy], dtype: str) -> str:
    """The body of a C function performing ``copies`` one after the other."""
    plans = [_render_plan(c) for c in copies if c.size > 0]
    depth = max((len(p.loops) for p in plans), default=0)
    return ctx.render("movement_copy.c.j2", ctype=c_type(dtype), plans=plans, variables=[f"i{k}" for k in range(depth)])


def run_copy(copy: StridedCopy, src: np.ndarray, dst: np.ndarray) -> None:
    """Perform ``copy`` on flat numpy arrays (constant folding; mirrors the generated C)."""
    if copy.size == 0:
        return
    grids = np.indices(copy.shape, dtype=np.int64) if copy.shape else np.zeros((0,), dtype=np.int64)
    s = copy.src_base + sum((g * st for g, st in zip(grids, copy.src_strides)), np.int64(0))
    d = copy.dst_base + sum((g * st for g, st in zip(grids, copy.dst_strides)), np.int64(0))
    dst[np.ravel(d)] = src[np.ravel(s)]


def fold_copies(graph: Graph, op: Operator, copies: list[StridedCopy]) -> list[np.ndarray] | None:
    """The outputs of an operator made of ``copies`` when every source is constant; None otherwise.
    Plans name tensor i ``t<i>`` until :func:`bind` maps the names to C expressions."""
    sources = {f"t{i}": graph.tensors[i] for i in op.inputs if i >= 0}
    if not all(sources[c.src].is_constant for c in copies):
        return None
    outs = {f"t{o}": np.zeros(graph.tensors[o].size, dtype=np_dtype(graph.tensors[o].dtype)) for o in op.outputs}
    for c in copies:
        run_copy(c, sources[c.src].data.reshape(-1), outs[c.dst])
    return [outs[f"t{o}"].reshape(graph.tensors[o].shape) for o in op.outputs]


def bind(copies: list[StridedCopy], ctx) -> list[StridedCopy]:
    """The plans with tensor names replaced by the C expressions of ``ctx``."""
    out = []
    for c in copies:
        out.append(
            StridedCopy(
                ctx.arg(int(c.src[1:])),
                ctx.arg(int(c.dst[1:])),
                c.shape,
                c.src_strides,
                c.dst_strides,
                c.src_base,
                c.dst_base,
                c.comment,
            )
        )
    return out


def constant_ints(
    graph: Graph, op: Operator, position: int, what: str, vector: bool = False, dtypes=("int32", "int64")
) -> list[int]:
    """The values of the constant integer input ``position`` (refusing activations). ``vector``: the
    tensor must be one-dimensional, as TFLM's prepare step checks (NumDimensions(...) == 1) for a
    TRANSPOSE permutation, a REVERSE_V2 axis list and SLICE's begin and size."""
    require(position < len(op.inputs) and op.inputs[position] >= 0, op, f"the {what} input is missing")
    t = graph.tensors[op.inputs[position]]
    require(t.dtype in dtypes, op, f"the {what} must be {' or '.join(dtypes)}, not {t.dtype} (as in TFLM)")
    require(t.is_constant, op, f"a {what} computed at run time is not supported yet (it must be a constant tensor)")
    if vector:
        require_consistent(
            len(t.shape) == 1,
            op,
            f"the {what} tensor has shape {list(t.shape)}; TFLM requires a one-dimensional tensor",
        )
    return [int(v) for v in np.asarray(t.data).reshape(-1)]


def require_types(op: Operator, graph: Graph, types: tuple[str, ...], tensors: list[int]) -> str:
    """Every tensor in ``tensors`` has one type, listed in ``types``; returns it."""
    dtype = graph.tensors[tensors[0]].dtype
    require(dtype in types, op, f"type {dtype} is not supported ({', '.join(types)})")
    for i in tensors[1:]:
        t = graph.tensors[i]
        require(t.dtype == dtype, op, f"tensor '{t.name}' is {t.dtype}, expected {dtype} like the others")
    return dtype


def require_shape(op: Operator, t: Tensor, expected, what: str = "output") -> None:
    require(
        list(t.shape) == [int(d) for d in expected],
        op,
        f"{what} shape {list(t.shape)} does not match the expected {[int(d) for d in expected]}",
    )


class CopyKernel(OpKernel):
    """A kernel whose operator is a list of strided copies: subclasses implement ``plan`` (which
    also validates the operator, with ``require``) and get ``check``, ``fold`` and ``emit``."""

    types: tuple[str, ...] = RAW_TYPES
    quantized_io = False  # TFLM copies the raw values; quantization parameters are not read

    def plan(self, op: Operator, graph: Graph) -> list[StridedCopy]:
        raise NotImplementedError

    def data_tensors(self, op: Operator) -> list[int]:
        """The tensors holding the values moved (the others are indices or shapes)."""
        return [op.inputs[0], *op.outputs]

    def check(self, op, graph):
        require(all(o >= 0 for o in op.outputs), op, "an output is missing")
        require_types(op, graph, self.types, self.data_tensors(op))
        self.plan(op, graph)

    def fold(self, op, graph):
        if not all(i < 0 or graph.tensors[i].is_constant for i in op.inputs):
            return None
        self.check(op, graph)
        return fold_copies(graph, op, self.plan(op, graph))

    def emit(self, op, graph, ctx):
        dtype = graph.tensors[op.outputs[0]].dtype
        return render_copies(ctx, bind(self.plan(op, graph), ctx), dtype)
