"""What the broadcasting elementwise kernels share (DIV, MAXIMUM/MINIMUM, SQUARED_DIFFERENCE,
FLOOR_DIV/FLOOR_MOD, the comparisons, LOGICAL_AND/OR, SELECT_V2).

A kernel names the tensor types TFLM's kernel runs for each operator kind and writes the C
statements for one output element (``element``), given the C expressions that read its inputs; the
loop nest that walks the output with each input's broadcast strides is generated around them.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ir import np_dtype
from microcompiler.ops.base import OpKernel, require
from microcompiler.ops.broadcast import (
    broadcast_loops,
    broadcast_shape,
    render_loop_nest,
    require_broadcast,
    unbroadcast_inputs,
)
from microcompiler.ops.quant import c_float, float_activation_range

FUSED_ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")


class BroadcastKernel(OpKernel):
    """An operator whose output element i combines the broadcast elements i of its inputs."""

    inputs = (2, 2)
    # The input types TFLM's kernel runs, per operator kind (default: ``types`` for every kind).
    kind_types: dict[str, tuple[str, ...]] = {}
    output_bool = False  # comparisons and logical operators write bool

    def input_types(self, kind: str) -> tuple[str, ...]:
        return self.kind_types.get(kind, self.types)

    def describe(self, kind):
        return {**super().describe(kind), "types": list(self.input_types(kind))}

    def value_inputs(self, op) -> list[int]:
        """Positions in op.inputs that hold the operator's values (all of them but SELECT_V2's condition)."""
        return list(range(len(op.inputs)))

    def check(self, op, graph):
        lo, hi = self.io_counts(op.kind)[0]
        require(
            lo <= len(op.inputs) <= hi and len(op.outputs) == 1 and min(op.inputs) >= 0,
            op,
            f"expects {lo if lo == hi else f'{lo} to {hi}'} inputs and one output",
        )
        values = [graph.tensors[op.inputs[k]] for k in self.value_inputs(op)]
        y = graph.tensors[op.outputs[0]]
        dtypes = [t.dtype for t in values]
        allowed = self.input_types(op.kind)
        require(
            len(set(dtypes)) == 1 and dtypes[0] in allowed,
            op,
            f"input types {dtypes} are not supported (all of one type among {', '.join(allowed)})",
        )
        want = "bool" if self.output_bool else dtypes[0]
        require(y.dtype == want, op, f"output type {y.dtype} does not match: expected {want}")
        require_broadcast(op, graph)
        activation = op.options.get("activation", "NONE")
        require(activation in FUSED_ACTIVATIONS, op, f"fused activation {activation} is not supported")

    def require_quantized(self, op, graph, positions) -> None:
        for k in positions:
            t = graph.tensors[op.inputs[k] if k >= 0 else op.outputs[0]]
            what = f"input{k + 1}" if k >= 0 else "output"
            require(t.quant is not None and not t.quant.per_channel, op, f"{what} needs per-tensor quantization")

    def macs(self, op, graph):
        return graph.tensors[op.outputs[0]].size

    def inplace_inputs(self, op, graph):
        """An input with the output's shape and type: each ``element`` body reads its inputs'
        elements before it stores the output element."""
        return unbroadcast_inputs(op, graph, self.value_inputs(op))

    def emit(self, op, graph, ctx):
        y = ctx.tensor(op.outputs[0])
        loops, in_idx, out_idx = broadcast_loops(y.shape, [ctx.tensor(i).shape for i in op.inputs])
        reads = [f"{ctx.arg(i)}[{idx}]" for i, idx in zip(op.inputs, in_idx)]
        write = f"{ctx.arg(op.outputs[0])}[{out_idx}]"
        return render_loop_nest(loops, self.element(op, graph, ctx, reads, write), self.prologue(op, graph, ctx))

    def fold(self, op, graph):
        """The output when every input is a constant and ``compute`` evaluates the operator exactly
        as the generated C does (the unquantized types)."""
        tensors = [graph.tensors[i] for i in op.inputs]
        y = graph.tensors[op.outputs[0]]
        if not all(t.is_constant for t in tensors) or broadcast_shape(*(t.shape for t in tensors)) != tuple(y.shape):
            return None
        with np.errstate(all="ignore"):
            value = self.compute(op, [np.asarray(t.data) for t in tensors], y.dtype)
        if value is None:
            return None
        return [np.ascontiguousarray(np.broadcast_to(value, y.shape)).astype(np_dtype(y.dtype))]

    def compute(self, op, arrays: list[np.ndarray], out_dtype: str) -> np.ndarray | None:
        """The operator on constant arrays (numpy broadcasting), or None where it is not folded."""
        return None

    def prologue(self, op, graph, ctx) -> str:
        """C statements before the loop nest."""
        return ""

    def element(self, op, graph, ctx, reads: list[str], write: str) -> str:
        """C statements (two-space indented) computing one output element ``write`` from ``reads``."""
        raise NotImplementedError


def float_clamp(value: str, lo: float, hi: float) -> str:
    """min(max(value, lo), hi) as TFLM's std::min/std::max evaluate it: NaN stays NaN."""
    lo_c, hi_c = c_float(lo), c_float(hi)
    return f"{value} < {lo_c} ? {lo_c} : ({hi_c} < {value} ? {hi_c} : {value})"


def float_activation(op, value: np.ndarray) -> np.ndarray:
    """The fused activation clamp of float32 results, as float_clamp (NaN stays NaN)."""
    lo, hi = (np.float32(v) for v in float_activation_range(op.options.get("activation", "NONE")))
    return np.where(value < lo, lo, np.where(hi < value, hi, value)).astype(np.float32)


def wrapping(a: np.ndarray, b: np.ndarray, fn) -> np.ndarray:
    """fn on int32 values with wrap-around, as the generated code's unsigned arithmetic."""
    return fn(a.astype(np.uint32), b.astype(np.uint32)).astype(np.uint32).view(np.int32)
