"""PRELU: float32, int8 and int16 (alpha int8), with alpha broadcast against the input up to 4D,
bit-exact with TFLite Micro's reference kernel.

``x >= 0 ? x : alpha * x`` elementwise, alpha usually a constant per channel. The quantized kernel
requantizes non-negative inputs with input_scale / output_scale and negative ones by the product
(x - input zero point) * (alpha - alpha zero point) with input_scale * alpha_scale / output_scale
(double precision, as TFLM). Alpha may also be a model input.
"""

from __future__ import annotations

from microcompiler.ops.add_mul import broadcast_loops, broadcast_shape
from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.quant import INT_RANGES, quantize_multiplier
from microcompiler.ops.requantize import offset_term

MAX_RANK = 4  # TFLM's BroadcastPrelu4DSlow
MAX_LEFT_SHIFT = 30  # the largest power of two an int32 requantization can apply


def _scale_zp(t) -> tuple[float, int]:
    """TFLM reads a tensor's first scale and zero point (alpha may carry per-channel ones)."""
    return float(t.quant.scale[0]), int(t.quant.zero_point[0])


@register
class Prelu(OpKernel):
    kinds = ("PRELU",)
    inputs = (2, 2)
    input_roles = ("input", "alpha")
    type_notes = "alpha int8 for int16 inputs; alpha broadcast up to 4D"

    def check(self, op, graph):
        require(
            len(op.inputs) == 2 and min(op.inputs) >= 0 and len(op.outputs) == 1,
            op,
            "expects an input, an alpha and one output",
        )
        x, alpha, y = (graph.tensors[i] for i in (*op.inputs, op.outputs[0]))
        combos = {("float32", "float32"), ("int8", "int8"), ("int16", "int8")}
        require(
            x.dtype == y.dtype and (x.dtype, alpha.dtype) in combos,
            op,
            f"type combination input/alpha/output {(x.dtype, alpha.dtype, y.dtype)} is not supported "
            "(float32, int8 with int8 alpha, int16 with int8 alpha)",
        )
        shape = broadcast_shape(x.shape, alpha.shape)
        require(
            shape is not None, op, f"input shape {list(x.shape)} and alpha shape {list(alpha.shape)} do not broadcast"
        )
        require(len(shape) <= MAX_RANK and len(y.shape) <= MAX_RANK, op, f"broadcasting is supported up to {MAX_RANK}D")
        require(
            tuple(y.shape) == shape,
            op,
            f"output shape {list(y.shape)} is not the broadcast shape {list(shape)} of input and alpha",
        )
        if x.dtype != "float32":
            require(
                all(t.quant is not None for t in (x, alpha, y)),
                op,
                "quantized input, alpha and output need quantization parameters",
            )
            require(
                max(shift for _, shift in self.multipliers(x, alpha, y)) <= MAX_LEFT_SHIFT,
                op,
                "input scale (times alpha scale) over output scale is beyond 2^30: no int32 multiplier holds it",
            )

    @staticmethod
    def multipliers(x, alpha, y) -> tuple[tuple[int, int], tuple[int, int]]:
        """(multiplier, shift) for non-negative and for negative inputs, in double as TFLM."""
        (in_scale, _), (alpha_scale, _), (out_scale, _) = map(_scale_zp, (x, alpha, y))
        return (
            quantize_multiplier(in_scale / out_scale, saturate=False),
            quantize_multiplier(in_scale * alpha_scale / out_scale, saturate=False),
        )

    def macs(self, op, graph):
        return graph.tensors[op.outputs[0]].size

    def inplace_inputs(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        return (0,) if tuple(x.shape) == tuple(y.shape) else ()

    def emit(self, op, graph, ctx):
        x, alpha, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
        loops, (x_index, alpha_index), out_index = broadcast_loops(y.shape, [x.shape, alpha.shape])
        values = dict(
            loops=loops,
            x_index=x_index,
            alpha_index=alpha_index,
            out_index=out_index,
            input=ctx.arg(op.inputs[0]),
            alpha=ctx.arg(op.inputs[1]),
            output=ctx.arg(op.outputs[0]),
        )
        if x.dtype == "float32":
            return ctx.render("prelu.c.j2", quantized=False, **values)
        (_, in_zp), (_, alpha_zp), (_, out_zp) = map(_scale_zp, (x, alpha, y))
        positive, negative = self.multipliers(x, alpha, y)
        lo, hi = INT_RANGES[x.dtype]
        return ctx.render(
            "prelu.c.j2",
            quantized=True,
            ctype=f"{x.dtype}_t",
            input_offset=offset_term(-in_zp),
            alpha_offset=offset_term(-alpha_zp),
            output_offset=offset_term(out_zp),
            positive=positive,
            negative=negative,
            type_min=lo,
            type_max=hi,
            **values,
        )
