"""CONCATENATION along any axis (negative counts from the end): int8, int16, int32, int64, float32, bool.

TFLM copies the values unchanged (no requantization): int8 inputs must share the output's scale and
zero point, and int16 zero points must be 0. TFLM itself rejects fused activations, and so does the
importer for one the model carries; the ``fuse_activations`` pass may fold a following RELU/RELU6
into this operator (``notes.activation_fused``), so a fused activation is applied here exactly as
the standalone activation would (a clamp, since the pass only fuses when the quantization is
unchanged).
"""

from __future__ import annotations

import numpy as np

from microcompiler.ir import c_type
from microcompiler.ops.activation import float_activation_expr
from microcompiler.ops.base import OpKernel, register, require, require_consistent
from microcompiler.ops.quant import activation_range


@register
class Concatenation(OpKernel):
    kinds = ("CONCATENATION",)
    inputs = (1, 1 << 16)
    types = ("int8", "int16", "int32", "int64", "float32", "bool")
    tflm_refusals = ("a fused activation in the model (params->activation != kTfLiteActNone)",)
    options = (
        "axis (negative allowed), fused activation (int8, int16, float32); any number of inputs (TFLM's "
        "prepare refuses more than 10; a copy, checked against numpy)"
    )

    def check(self, op, graph):
        require(
            len(op.inputs) >= 1 and min(op.inputs) >= 0 and len(op.outputs) == 1,
            op,
            "expects one or more inputs and one output",
        )
        y = graph.tensors[op.outputs[0]]
        ins = [graph.tensors[i] for i in op.inputs]
        require(y.dtype in self.types, op, f"type {y.dtype} is not supported ({', '.join(self.types)})")
        require(
            all(t.dtype == y.dtype for t in ins),
            op,
            f"input types {[t.dtype for t in ins]} must all equal the output type {y.dtype}",
        )
        activation = op.options.get("activation", "NONE")
        require_consistent(
            activation == "NONE" or op.notes.activation_fused,
            op,
            f"the model fuses a {activation} activation into it (TFLM's CONCATENATION allows none: "
            "params->activation != kTfLiteActNone)",
        )
        require(
            activation in ("NONE", "RELU", "RELU6", "RELU_N1_TO_1"),
            op,
            f"fused activation {activation} is not supported",
        )
        require(
            activation == "NONE" or y.dtype in ("int8", "int16", "float32"),
            op,
            f"a fused activation on {y.dtype} values is not supported",
        )
        rank = len(y.shape)
        axis = op.options.get("axis", 0)
        require(rank >= 1 and -rank <= axis < rank, op, f"axis {axis} is out of range for rank {rank}")
        axis %= rank
        for t in ins:
            require(
                len(t.shape) == rank and all(a == b for k, (a, b) in enumerate(zip(t.shape, y.shape)) if k != axis),
                op,
                f"input shape {list(t.shape)} does not fit output shape {list(y.shape)} on axis {axis}",
            )
        require(
            sum(t.shape[axis] for t in ins) == y.shape[axis],
            op,
            f"input extents along axis {axis} do not add up to the output's {y.shape[axis]}",
        )
        if y.dtype == "int8":
            require(
                y.quant is not None and not y.quant.per_channel,
                op,
                "the output needs per-tensor quantization parameters",
            )
            want = (float(np.float32(y.quant.scale[0])), y.quant.zero_point[0])
            require(
                all(
                    t.quant is not None
                    and not t.quant.per_channel
                    and (float(np.float32(t.quant.scale[0])), t.quant.zero_point[0]) == want
                    for t in ins
                ),
                op,
                "int8 inputs must have the output's scale and zero point (TFLM does not requantize)",
            )
        elif y.dtype == "int16":
            require(
                all(t.quant is None or t.quant.zero_point[0] == 0 for t in ins + [y]), op, "int16 zero points must be 0"
            )
            if activation != "NONE":
                require(y.quant is not None, op, "a fused activation needs the output's quantization parameters")

    def emit(self, op, graph, ctx):
        y = ctx.tensor(op.outputs[0])
        axis = op.options.get("axis", 0) % len(y.shape)
        outer = int(np.prod(y.shape[:axis], dtype=np.int64))
        inner = int(np.prod(y.shape[axis + 1 :], dtype=np.int64))
        parts = [dict(src=ctx.arg(i), n=ctx.tensor(i).shape[axis] * inner) for i in op.inputs]
        parts = [p for p in parts if p["n"] > 0]
        activation = op.options.get("activation", "NONE")
        ctype = c_type(y.dtype)
        clamp = None
        if activation != "NONE":
            if y.dtype == "float32":
                clamp = float_activation_expr("x", activation)
            else:
                lo, hi = activation_range(activation, y)
                clamp = f"({ctype})MC_CLAMP(x, {lo}, {hi})"
        return ctx.render(
            "concatenation.c.j2", ctype=ctype, output=ctx.arg(op.outputs[0]), outer=outer, parts=parts, clamp=clamp
        )
