"""L2_NORMALIZATION over the last dimension: float32 and int8, bit-exact with TFLite Micro's
reference kernels.

* float32: ``x / max(sqrt(sum(x^2)), 1e-6)`` per row.
* int8: the sum of squared differences to the input zero point is taken in int32 and its inverse
  square root found at run time in fixed point (``mc_inv_sqrt_multiplier``, kernel_elementwise.h);
  the result is x / norm in steps of 1/128. As in TFLM, the output tensor's quantization is not
  read: the output is always scale 1/128, zero point 0.
"""

from __future__ import annotations

from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.plan import REFERENCE_FLOAT, KernelPlan, Variant
from microcompiler.ops.requantize import offset_term
from microcompiler.ops.softmax_logistic import _outer_and_depth

INVERSE_SQRT = Variant("fixed-point-inverse-sqrt")  # int8: TFLM's fixed-point 1/sqrt

MAX_RANK = 4
EPSILON = "1e-6f"
OUTPUT_FRACTIONAL_BITS = 7  # int8 outputs are x / norm * 2^7


@register
class L2Normalization(OpKernel):
    kinds = ("L2_NORMALIZATION",)
    types = ("int8", "float32")
    type_notes = "int8 output is always x/norm * 128"
    options = "activation (NONE only, as TFLM)"

    def check(self, op, graph):
        require(
            len(op.inputs) == 1 and op.inputs[0] >= 0 and len(op.outputs) == 1, op, "expects one input and one output"
        )
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        require(
            x.dtype in ("int8", "float32") and y.dtype == x.dtype,
            op,
            f"type combination input/output {(x.dtype, y.dtype)} is not supported (float32, int8)",
        )
        require(1 <= len(x.shape) <= MAX_RANK, op, f"input must have 1 to {MAX_RANK} dimensions, got {len(x.shape)}")
        require(
            tuple(x.shape) == tuple(y.shape), op, f"input shape {list(x.shape)} and output shape {list(y.shape)} differ"
        )
        activation = op.options.get("activation", "NONE")
        require(activation == "NONE", op, f"fused activation {activation} is not supported (TFLM supports none)")
        if x.dtype == "int8":
            require(x.quant is not None, op, "int8 input needs quantization parameters")

    def macs(self, op, graph):
        return 2 * graph.tensors[op.inputs[0]].size

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None):
        return KernelPlan(INVERSE_SQRT if graph.tensors[op.inputs[0]].dtype == "int8" else REFERENCE_FLOAT)

    def emit(self, op, graph, ctx):
        x = ctx.tensor(op.inputs[0])
        outer, depth = _outer_and_depth(x.shape)
        values = dict(outer=outer, depth=depth, input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]))
        if x.dtype == "float32":
            return ctx.render("l2_normalization_float.c.j2", epsilon=EPSILON, **values)
        return ctx.render(
            "l2_normalization_int8.c.j2",
            input_offset=offset_term(-x.quant.zero_point[0]),
            output_bits=OUTPUT_FRACTIONAL_BITS,
            **values,
        )
