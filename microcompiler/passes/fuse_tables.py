"""Fuse chains of int8 elementwise functions of one tensor into one table lookup (MC_TABLE_INT8,
ops/table_lookup.py), bit-exact with TFLM by construction: an int8 tensor has 256 values, so the
whole chain's integer result for each of them, computed at compile time with the kernels' own
arithmetic, is the table.

Fused, repeatedly until nothing changes:

* ``MUL(x, f(x))`` (either input order) where ``f`` is an operator with an int8 table
  (``OpKernel.int8_table``: LOGISTIC, TANH, HARD_SWISH, ELU, ... or an earlier fused table) and
  both MUL inputs have the output's shape: SiLU / swish, ``x * sigmoid(x)``, as the TFLite converter
  writes Keras' ``swish``. table[x] = MUL's int8 arithmetic (offset product, requantization, output
  zero point, fused activation clamp) on x and f's table entry for x.
* ``g(f(x))`` for two operators with int8 tables: table[x] = g's table at f's table entry.

Only where ``f(x)`` feeds nothing else and is not a model output, so the intermediate tensor
disappears.

* ``MUL(x, f(s))`` with ``s`` one value per channel broadcast over x's pixels (squeeze-and-excite's
  gate, ``x * sigmoid(s)``): MC_SCALE_CHANNELS_INT8 (ops/table_lookup.py) looks f up once per
  channel and multiplies with the MUL's own int8 arithmetic, without the broadcast loop.

Runs after ``remove_reshapes`` (which may join a chain split by a RESHAPE) and before
``remove_dead_code`` and ``plan_memory``.
"""

from __future__ import annotations

import re

import numpy as np

from microcompiler.ir import Graph, Operator, Tensor
from microcompiler.ops import kernel_for, load_kernels
from microcompiler.ops.fixedpoint import clamp, requantize
from microcompiler.ops.lut import int8_table_from_integer
from microcompiler.ops.quant import activation_range, mul_multiplier
from microcompiler.ops.table_lookup import SCALE_CHANNELS_INT8, TABLE_INT8

_ALL_INT8 = np.arange(-128, 128)


def _table(op: Operator, graph: Graph) -> np.ndarray | None:
    """The op's int8 table when it is an int8 -> int8 function of one non-constant input."""
    if len(op.inputs) < 1 or len(op.outputs) != 1:
        return None
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if x.dtype != "int8" or y.dtype != "int8" or x.is_constant or tuple(x.shape) != tuple(y.shape):
        return None
    try:
        kernel = kernel_for(op)
    except Exception:  # an operator no kernel compiles: the importer reports it, not this pass
        return None
    try:
        return kernel.int8_table(op, graph)
    except Exception:  # the kernel's check() names what is wrong with this operator
        return None


def _intermediate(graph: Graph, tensor: int, readers: dict[int, int]) -> bool:
    """True when tensor is read by exactly one operator and is not a model output."""
    return tensor not in graph.outputs and readers.get(tensor, 0) == 1


def _mul_table(mul: Operator, graph: Graph, x_position: int, f_table: np.ndarray) -> np.ndarray | None:
    """table[x] = MUL(x, f(x)) in TFLM's int8 MUL arithmetic."""
    a, b, y = (graph.tensors[i] for i in (*mul.inputs, mul.outputs[0]))
    if not (a.dtype == b.dtype == y.dtype == "int8") or not (tuple(a.shape) == tuple(b.shape) == tuple(y.shape)):
        return None
    if any(t.quant is None or t.quant.per_channel for t in (a, b, y)):
        return None
    multiplier, shift = mul_multiplier(a, b, y)
    lo, hi = activation_range(mul.options.get("activation", "NONE"), y)
    x_zp = graph.tensors[mul.inputs[x_position]].quant.zero_point[0]
    f_zp = graph.tensors[mul.inputs[1 - x_position]].quant.zero_point[0]
    y_zp = y.quant.zero_point[0]

    def product(x: int) -> int:
        fx = int(f_table[x & 0xFF])
        return clamp(requantize((x - x_zp) * (fx - f_zp), multiplier, shift) + y_zp, lo, hi)

    return int8_table_from_integer(product)


def _expression(op: Operator) -> str:
    """What the operator computes, as an expression in x: ``logistic(x)``, or a fused table's."""
    return op.options["functions"] if op.kind == TABLE_INT8 else f"{op.kind.lower()}(x)"


def _compose(outer: str, inner: str) -> str:
    """outer with x replaced by inner: the expression of outer(inner(x))."""
    return re.sub(r"\bx\b", inner, outer)


def _fuse_one(g: Graph) -> bool:
    """Fuse one pattern; True when something changed."""
    producer_of, readers = g.producers_and_readers()  # once per scan: a lookup per operator, not a scan
    for op in g.operators:
        if op.kind == "MUL" and len(op.inputs) == 2:
            for x_position in (0, 1):
                x, fx = op.inputs[x_position], op.inputs[1 - x_position]
                f = producer_of.get(fx)
                if f is None or f.inputs[0] != x or not _intermediate(g, fx, readers):
                    continue
                f_table = _table(f, g)
                table = None if f_table is None else _mul_table(op, g, x_position, f_table)
                if table is not None:
                    _replace(g, op, f, x, table, f"x * {_expression(f)}")
                    return True
            if _fuse_gate(g, op, producer_of, readers):
                return True
            continue
        if not op.inputs or g.tensors[op.inputs[0]].is_constant:
            continue
        f = producer_of.get(op.inputs[0])
        if f is None or not _intermediate(g, op.inputs[0], readers):
            continue
        g_table, f_table = _table(op, g), _table(f, g)
        if g_table is not None and f_table is not None:
            _replace(g, op, f, f.inputs[0], g_table[f_table.view(np.uint8)], _compose(_expression(op), _expression(f)))
            return True
    return False


def _fuse_gate(g: Graph, mul: Operator, producer_of: dict[int, Operator], readers: dict[int, int]) -> bool:
    """MUL(x, f(s)) with s one value per channel (squeeze-and-excite) -> MC_SCALE_CHANNELS_INT8."""
    y = g.tensors[mul.outputs[0]]
    for x_position in (0, 1):
        x, gate = mul.inputs[x_position], mul.inputs[1 - x_position]
        xt, gt = g.tensors[x], g.tensors[gate]
        if not (xt.dtype == gt.dtype == y.dtype == "int8") or tuple(xt.shape) != tuple(y.shape) or not xt.shape:
            continue
        channels = int(xt.shape[-1])
        if gt.size != channels or len(gt.shape) > len(xt.shape) or (gt.shape and int(gt.shape[-1]) != channels):
            continue
        if any(t.quant is None or t.quant.per_channel for t in (xt, gt, y)) or xt.is_constant:
            continue
        f = producer_of.get(gate)
        if f is None or not _intermediate(g, gate, readers):
            continue
        f_table = _table(f, g)
        if f_table is None:
            continue
        a, b = (g.tensors[i] for i in mul.inputs)
        multiplier, shift = mul_multiplier(a, b, y)
        lo, hi = activation_range(mul.options.get("activation", "NONE"), y)
        gate_values = f_table.astype(np.int16) - np.int16(gt.quant.zero_point[0])
        g.tensors.append(Tensor(f"{y.name};gate", (256,), "int16", None, gate_values))
        fused = Operator(
            SCALE_CHANNELS_INT8,
            [x, f.inputs[0], len(g.tensors) - 1],
            list(mul.outputs),
            {
                "gate": _expression(f).replace("(x)", ""),
                "multiplier": multiplier,
                "shift": shift,
                "act_min": lo,
                "act_max": hi,
            },
            mul.index,
        )
        g.operators = [fused if o is mul else o for o in g.operators if o is not f]
        return True
    return False


def _replace(g: Graph, op: Operator, inner: Operator, x: int, table: np.ndarray, functions: str) -> None:
    """op (reading inner's output) becomes one table lookup of x; inner goes."""
    y = g.tensors[op.outputs[0]]
    g.tensors.append(Tensor(f"{y.name};lut", (256,), "int8", None, np.asarray(table, dtype=np.int8)))
    fused = Operator(TABLE_INT8, [x, len(g.tensors) - 1], list(op.outputs), {"functions": functions}, op.index)
    g.operators = [fused if o is op else o for o in g.operators if o is not inner]


def fuse_tables(graph: Graph) -> Graph:
    load_kernels()
    g = graph.copy()
    while _fuse_one(g):
        pass
    return g
