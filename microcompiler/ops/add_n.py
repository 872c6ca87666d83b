"""ADD_N: the elementwise sum of two or more tensors of one shape (no broadcasting), float32 or
int8, as TFLite Micro's add_n.cc.

int8 inputs share one scale and zero point (TFLM requires it). Each input is offset, shifted left
by 20 bits and halved (the multiplier of scale / (2 * scale)); the sum is rescaled by
2 * scale / (2^20 * output scale). TFLM's reference starts the sum from the rescaled input offset
(-zero point) instead of 0, and the generated code does the same to match it bit for bit.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.broadcast import unbroadcast_inputs
from microcompiler.ops.quant import quantize_multiplier

LEFT_SHIFT = 20  # TFLM's kAddNIntegerShift
_TERM_BOUND = 255 << (LEFT_SHIFT - 1)  # |(x - zero point) << 20| / 2 for int8


@register
class AddN(OpKernel):
    kinds = ("ADD_N",)
    inputs = (2, 1 << 16)
    types = ("int8", "float32")
    type_notes = "int8 inputs share one scale and zero point"
    options = "2 or more inputs of one shape"

    def check(self, op, graph):
        require(
            len(op.inputs) >= 2 and len(op.outputs) == 1 and min(op.inputs) >= 0,
            op,
            "expects two or more inputs and one output",
        )
        xs = [graph.tensors[i] for i in op.inputs]
        y = graph.tensors[op.outputs[0]]
        require(
            all(x.dtype == y.dtype for x in xs) and y.dtype in self.types,
            op,
            f"input types {[x.dtype for x in xs]} and output type {y.dtype} are not supported "
            "(all int8 or all float32)",
        )
        require(
            all(tuple(x.shape) == tuple(y.shape) for x in xs),
            op,
            f"input shapes {[list(x.shape) for x in xs]} and output shape {list(y.shape)} differ "
            "(ADD_N does not broadcast)",
        )
        if y.dtype == "int8":
            for t in xs + [y]:
                require(t.quant is not None and not t.quant.per_channel, op, "needs per-tensor quantization")
            first = xs[0].quant.single()
            require(all(x.quant.single() == first for x in xs), op, "int8 inputs must share one scale and zero point")
            require(
                self._output_real(xs[0], y) < 1.0,
                op,
                "output rescale is outside (0, 1): the output scale is too small for the inputs'",
            )

    @staticmethod
    def _output_real(x, y) -> float:
        twice = 2.0 * float(np.float32(x.quant.scale[0]))
        return twice / ((1 << LEFT_SHIFT) * float(np.float32(y.quant.scale[0])))

    def macs(self, op, graph):
        return graph.tensors[op.outputs[0]].size * (len(op.inputs) - 1)

    def inplace_inputs(self, op, graph):
        """Element i of every input is read before element i of the output is written."""
        return unbroadcast_inputs(op, graph)

    def fold(self, op, graph):
        """A float32 sum of constants, added in input order as the generated code does."""
        xs = [graph.tensors[i] for i in op.inputs]
        y = graph.tensors[op.outputs[0]]
        if y.dtype != "float32" or not all(x.is_constant and tuple(x.shape) == tuple(y.shape) for x in xs):
            return None
        total = xs[0].data.astype(np.float32)
        with np.errstate(all="ignore"):
            for x in xs[1:]:
                total = total + x.data.astype(np.float32)
        return [np.ascontiguousarray(total.reshape(y.shape))]

    def emit(self, op, graph, ctx):
        y = ctx.tensor(op.outputs[0])
        names = [ctx.arg(i) for i in op.inputs]
        values = dict(inputs=names, output=ctx.arg(op.outputs[0]), size=y.size)
        if y.dtype == "float32":
            return ctx.render("add_n_float.c.j2", **values)
        x = ctx.tensor(op.inputs[0])
        zp = int(x.quant.zero_point[0])
        input_q = quantize_multiplier(0.5)  # scale / (2 * scale)
        # TFLM's sum starts from the rescaled offset; it and each term are below 2^27 in magnitude,
        # so int32 wraps only with 15 or more inputs (then as TFLM's int32 sum: computed unsigned).
        wraps = (len(names) + 1) * _TERM_BOUND >= 1 << 31
        return ctx.render(
            "add_n_int8.c.j2",
            input_offset=-zp,
            left_shift=LEFT_SHIFT,
            input_q=input_q,
            output_q=quantize_multiplier(self._output_real(x, y)),
            output_offset=int(y.quant.zero_point[0]),
            wraps=wraps,
            **values,
        )
