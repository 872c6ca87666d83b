"""L2_POOL_2D: float32 (TFLM's only type), NHWC, SAME/VALID padding, strides, fused activation.

Each output is sqrt(sum of squares / count) over the window clipped to the input (padding never
counts), summed row by row in float as TFLM's reference L2Pool, then clamped by the activation.
"""

from __future__ import annotations

from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.geometry import origin_expr, pool_geometry
from microcompiler.ops.pooling import _ACTIVATIONS
from microcompiler.ops.quant import c_float, float_activation_range


def linear(terms) -> str:
    """C expression of sum(expr * coefficient), leaving out '* 1' (a '(a + b)' keeps its parentheses
    only when multiplied)."""
    parts = []
    for expr, k in terms:
        if k == 1:
            parts.append(expr[1:-1] if expr.startswith("(") and expr.endswith(")") else expr)
        else:
            parts.append(f"{expr} * {k}")
    return " + ".join(parts) or "0"


@register
class L2Pool2D(OpKernel):
    kinds = ("L2_POOL_2D",)
    types = ("float32",)
    options = "padding, stride, filter size, fused activation"

    def check(self, op, graph):
        require(len(op.inputs) == 1 and len(op.outputs) == 1, op, "expects one input and one output")
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        o = op.options
        require(
            x.dtype == "float32" and y.dtype == "float32",
            op,
            f"type combination input/output ({x.dtype}, {y.dtype}) is not supported (float32, as TFLM)",
        )
        require(o["activation"] in _ACTIVATIONS, op, f"fused activation {o['activation']} is not supported")
        require(o["padding"] in ("SAME", "VALID"), op, f"padding {o['padding']} is not supported")
        require(len(x.shape) == 4 and len(y.shape) == 4, op, "input and output must be 4D (NHWC)")
        require(
            min(o["stride_h"], o["stride_w"], o["filter_h"], o["filter_w"]) >= 1,
            op,
            "strides and filter sizes must be at least 1",
        )
        out_h, _ = pool_geometry(x.shape[1], o["filter_h"], o["stride_h"], o["padding"])
        out_w, _ = pool_geometry(x.shape[2], o["filter_w"], o["stride_w"], o["padding"])
        require(
            out_h >= 1 and out_w >= 1,
            op,
            f"the {o['filter_h']}x{o['filter_w']} filter does not fit the "
            f"{x.shape[1]}x{x.shape[2]} input with VALID padding",
        )
        want = [x.shape[0], out_h, out_w, x.shape[3]]
        require(list(y.shape) == want, op, f"output shape {list(y.shape)} should be {want}")

    def macs(self, op, graph):
        o = op.options
        return graph.tensors[op.outputs[0]].size * o["filter_h"] * o["filter_w"]

    def emit(self, op, graph, ctx):
        x = ctx.tensor(op.inputs[0])
        o = op.options
        batches, in_h, in_w, depth = x.shape
        dims = []
        for size, f, st in ((in_h, o["filter_h"], o["stride_h"]), (in_w, o["filter_w"], o["stride_w"])):
            out, pad = pool_geometry(size, f, st, o["padding"])
            dims.append((out, pad, pad == 0 and (out - 1) * st + f <= size))
        (out_h, pad_h, full_h), (out_w, pad_w, full_w) = dims
        lo, hi = float_activation_range(o["activation"])
        out_terms = [
            (v, k)
            for v, k, n in (("b", out_h * out_w * depth, batches), ("oy", out_w * depth, out_h), ("ox", depth, out_w))
            if n > 1
        ]
        in_terms = [("(y0 + fy)", in_w * depth), ("(x0 + fx)", depth)] + ([("c", 1)] if depth > 1 else [])
        return ctx.render(
            "l2_pool.c.j2",
            out_index=linear(out_terms),
            in_index=linear(in_terms),
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            batches=batches,
            in_h=in_h,
            in_w=in_w,
            depth=depth,
            out_h=out_h,
            out_w=out_w,
            filter_h=o["filter_h"],
            filter_w=o["filter_w"],
            full_h=full_h,
            full_w=full_w,
            y0=origin_expr("oy", o["stride_h"], pad_h),
            x0=origin_expr("ox", o["stride_w"], pad_w),
            act_min=c_float(lo),
            act_max=c_float(hi),
            clamp=o["activation"] != "NONE",
        )
