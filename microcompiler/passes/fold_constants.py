"""Evaluate at compile time the operators whose inputs are all constants.

Only operators whose result is exactly defined by a simple formula are folded (reshapes, QUANTIZE and
DEQUANTIZE of constants, CONCATENATION, and whatever a kernel's ``fold`` computes exactly, such as
SHAPE of a static shape); the folded result becomes a constant tensor in flash. Folding repeats
through chains of such operators, so a constant-only subgraph costs no code.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ir import Graph, np_dtype
from microcompiler.ops.quant import INT_RANGES


def _dequantize(t, x):
    q = t.quant
    return ((x.astype(np.int32) - q.zero_point[0]) * np.float32(q.scale[0])).astype(np.float32)


def _evaluate(g: Graph, op) -> np.ndarray | None:
    ins = [g.tensors[i] for i in op.inputs if i >= 0]
    out = g.tensors[op.outputs[0]]
    if op.kind == "RESHAPE":
        return ins[0].data.reshape(out.shape)
    if op.kind == "DEQUANTIZE" and ins[0].quant and not ins[0].quant.per_channel and out.dtype == "float32":
        return _dequantize(ins[0], ins[0].data).reshape(out.shape)
    if (
        op.kind == "CONCATENATION"
        and op.options.get("activation", "NONE") == "NONE"
        and all(t.dtype == out.dtype and t.quant == out.quant for t in ins)
    ):
        return np.concatenate([t.data for t in ins], axis=op.options["axis"] % len(out.shape))
    if op.kind == "QUANTIZE" and ins[0].dtype == "float32" and out.quant and out.dtype in INT_RANGES:
        scale, zp = out.quant.single()
        lo, hi = INT_RANGES[out.dtype]
        # As the QUANTIZE kernel: float32 division, ties away from zero (std::round), NaN and
        # quotients beyond int32 become INT32_MIN, and the zero point is added with int32 wrap-around.
        with np.errstate(invalid="ignore", over="ignore"):
            v = (ins[0].data.astype(np.float32) / np.float32(scale)).astype(np.float64)
            r = np.copysign(np.floor(np.abs(v) + 0.5), v)
            r = np.where((r >= -(2.0**31)) & (r < 2.0**31), r, -(2.0**31)).astype(np.int64)
        q = (r + zp + 2**31) % 2**32 - 2**31
        return np.clip(q, lo, hi).astype(np_dtype(out.dtype))
    return None


def _fold(g: Graph, op) -> list[np.ndarray] | None:
    """The operator's outputs as constants, or None."""
    if any(o in g.outputs for o in op.outputs):
        return None  # a model output is written by the model at run time
    all_constant = all(i < 0 or g.tensors[i].is_constant for i in op.inputs)
    if all_constant and len(op.outputs) == 1:
        value = _evaluate(g, op)
        if value is not None:
            return [value]
    from microcompiler.ops import supported_operators
    from microcompiler.ops.base import operator_context

    kernel = supported_operators().get(op.kind)
    with operator_context(op):
        values = kernel.fold(op, g) if kernel is not None else None
    if values is None:
        return None
    for o, v in zip(op.outputs, values):
        t = g.tensors[o]
        if tuple(np.shape(v)) != tuple(t.shape) or np.asarray(v).dtype != np_dtype(t.dtype):
            raise AssertionError(
                f"{op.kind} folded to {np.shape(v)} {np.asarray(v).dtype}, expected {list(t.shape)} {t.dtype}"
            )
    return values


def fold_constants(graph: Graph) -> Graph:
    g = graph.copy()
    kept = []
    for op in g.operators:
        values = _fold(g, op)
        if values is None:
            kept.append(op)
        else:
            for o, v in zip(op.outputs, values):
                g.tensors[o].data = np.ascontiguousarray(v)
    g.operators = kept
    return g
