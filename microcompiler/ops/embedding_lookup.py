"""EMBEDDING_LOOKUP: rows of a table picked by int32 ids, as TFLM's embedding_lookup.cc.

Input 0 holds the ids (int32, rank 1), input 1 the table (float32 or int8, rank >= 2, one row
per id); each output row is a copy of the table row, or for an int8 table with a float32 output
(the hybrid case) the row dequantized with the table's scale (its zero point must be 0, as in
TFLM). TFLM fails the inference on an id outside [0, rows); the generated code cannot fail, so it
clamps run-time ids into that range. Constant ids are checked at compile time and folded.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ir import c_type
from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.quant import c_float


def _geometry(op, graph):
    """(number of ids, rows, elements per row) after checking the shapes."""
    ids, table, y = (graph.tensors[i] for i in (op.inputs[0], op.inputs[1], op.outputs[0]))
    require(len(ids.shape) == 1, op, f"ids of shape {list(ids.shape)} must have rank 1")
    require(len(table.shape) >= 2, op, f"table of shape {list(table.shape)} must have rank 2 or more")
    want = [ids.shape[0]] + list(table.shape[1:])
    require(list(y.shape) == want, op, f"output shape {list(y.shape)} does not match the expected {want}")
    rows = int(table.shape[0])
    return int(ids.shape[0]), rows, table.size // max(rows, 1)


@register
class EmbeddingLookup(OpKernel):
    kinds = ("EMBEDDING_LOOKUP",)
    input_roles = ("ids", "table")
    inputs = (2, 2)
    types = ("int8", "float32")
    type_notes = (
        "ids int32; an int8 table gives int8 rows, or float32 rows dequantized with the table's "
        "scale (zero point 0); out-of-range run-time ids are clamped, where TFLM fails"
    )
    quantized_io = False

    def check(self, op, graph):
        ids, table, y = (graph.tensors[i] for i in (op.inputs[0], op.inputs[1], op.outputs[0]))
        require(ids.dtype == "int32", op, f"ids of type {ids.dtype} are not supported (int32)")
        require(table.dtype in self.types, op, f"table type {table.dtype} is not supported (int8, float32)")
        allowed = ("float32",) if table.dtype == "float32" else ("int8", "float32")
        require(y.dtype in allowed, op, f"output type {y.dtype} does not go with a {table.dtype} table")
        if self._hybrid(op, graph):
            require(
                table.quant is not None and not table.quant.per_channel and table.quant.zero_point[0] == 0,
                op,
                "an int8 table read as float32 needs one scale and zero point 0 (as TFLM)",
            )
        _, rows, _ = _geometry(op, graph)
        if ids.is_constant:
            bad = ids.data[(ids.data < 0) | (ids.data >= rows)]
            require(bad.size == 0, op, f"id {bad[:1].tolist()} is out of range [0, {rows})")

    @staticmethod
    def _hybrid(op, graph):
        return graph.tensors[op.inputs[1]].dtype == "int8" and graph.tensors[op.outputs[0]].dtype == "float32"

    def fold(self, op, graph):
        ids, table, y = (graph.tensors[i] for i in (op.inputs[0], op.inputs[1], op.outputs[0]))
        if not (ids.is_constant and table.is_constant):
            return None
        self.check(op, graph)
        rows = table.data[ids.data.astype(np.int64)]
        if self._hybrid(op, graph):
            rows = rows.astype(np.int32).astype(np.float32) * np.float32(table.quant.scale[0])
        return [rows.reshape(y.shape).astype(np.float32 if y.dtype == "float32" else np.int8)]

    def emit(self, op, graph, ctx):
        ids, table, y = (graph.tensors[i] for i in (op.inputs[0], op.inputs[1], op.outputs[0]))
        count, rows, row = _geometry(op, graph)
        return ctx.render(
            "embedding_lookup.c.j2",
            ctype=c_type(table.dtype),
            otype=c_type(y.dtype),
            ids=ctx.arg(op.inputs[0]),
            table=ctx.arg(op.inputs[1]),
            output=ctx.arg(op.outputs[0]),
            count=count,
            rows=rows,
            row=row,
            clamp=not ids.is_constant,
            scale=c_float(table.quant.scale[0]) if self._hybrid(op, graph) else None,
        )
