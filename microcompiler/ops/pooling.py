"""AVERAGE_POOL_2D and MAX_POOL_2D: int8, int16 and float32, NHWC, SAME/VALID padding.

As in TFLite Micro's reference kernels, windows are clipped to the input (padding never counts),
integer averages round half away from zero, and input and output share one quantization.
When every window lies fully inside the input (VALID padding, or SAME needing no padding) the
window bounds and the divisor become compile-time constants.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.fast import mve as fast_mve
from microcompiler.ops.fast.avg_pool_sxtab16 import SXTAB16, emit_sxtab16
from microcompiler.ops.features import has_dsp, has_mve
from microcompiler.ops.geometry import origin_expr, pool_geometry  # noqa: F401 (pool_geometry re-exported)
from microcompiler.ops.plan import ISA_DSP, REFERENCE, KernelPlan
from microcompiler.ops.quant import INT_RANGES, activation_range, c_float, float_activation_range

_ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")


@register
class Pool2D(OpKernel):
    kinds = ("AVERAGE_POOL_2D", "MAX_POOL_2D")
    options = "padding, stride, filter size, fused activation"
    fast = {"dsp": "int8 (SXTAB16)", "mve": "int8, unclipped windows, depth % 8 == 0 (8 channels)"}

    def describe(self, kind):
        info = super().describe(kind)
        if kind != "AVERAGE_POOL_2D":
            info["fast_kernels"] = {"mve": "int8, unclipped windows, depth % 16 == 0 (VMAX.S8, 16 channels)"}
        return info

    def check(self, op, graph):
        require(len(op.inputs) == 1 and len(op.outputs) == 1, op, "expects one input and one output")
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        o = op.options
        require(o["activation"] in _ACTIVATIONS, op, f"fused activation {o['activation']} is not supported")
        require(o["padding"] in ("SAME", "VALID"), op, f"padding {o['padding']} is not supported")
        require(
            x.dtype == y.dtype and x.dtype in ("int8", "int16", "float32"),
            op,
            f"type combination input/output ({x.dtype}, {y.dtype}) is not supported "
            "(int8, int16 or float32, the same for both)",
        )
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
            f"the {o['filter_h']}x{o['filter_w']} filter does not fit the {x.shape[1]}x{x.shape[2]} input "
            "with VALID padding",
        )
        want = (x.shape[0], out_h, out_w, x.shape[3])
        require(tuple(y.shape) == want, op, f"output shape {list(y.shape)} should be {list(want)}")
        if x.dtype != "float32":
            require(
                x.quant is not None and y.quant is not None and not x.quant.per_channel and not y.quant.per_channel,
                op,
                "input and output need per-tensor quantization",
            )
            # TFLM's check (pooling_common.cc): same zero point, scales within 1e-6.
            same = (
                abs(float(np.float32(x.quant.scale[0])) - float(np.float32(y.quant.scale[0]))) <= 1e-6
                and x.quant.zero_point[0] == y.quant.zero_point[0]
            )
            require(same, op, "input and output quantization must be the same")
            # The int32 window sum of average pooling must not overflow.
            require(o["filter_h"] * o["filter_w"] * 32768 < 2**31, op, "the pooling window is too large")

    def macs(self, op, graph):
        o = op.options
        return graph.tensors[op.outputs[0]].size * o["filter_h"] * o["filter_w"]

    @staticmethod
    def _geometry(op, x):
        """Output size, padding before, and whether no window is clipped, per spatial dimension."""
        o = op.options
        dims = []
        for size, f, st in ((x.shape[1], o["filter_h"], o["stride_h"]), (x.shape[2], o["filter_w"], o["stride_w"])):
            out, pad = pool_geometry(size, f, st, o["padding"])
            dims.append((out, pad, pad == 0 and (out - 1) * st + f <= size))
        return dims

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None) -> KernelPlan:
        """sxtab16 (int8 AVERAGE_POOL_2D, DSP extension, no clipped window, depth % 4 == 0, at most
        255 taps so that int16 lane sums cannot overflow): 4 channels per step with SXTAB16.
        Otherwise the reference loop nest."""
        x = graph.tensors[op.inputs[0]]
        o = op.options
        (_, _, full_h), (_, _, full_w) = self._geometry(op, x)
        if x.dtype == "int8" and has_mve(features):
            mve = (
                fast_mve.avgpool_plan(x.shape[3], o["filter_h"] * o["filter_w"], full_h and full_w)
                if op.kind == "AVERAGE_POOL_2D"
                else fast_mve.maxpool_plan(x.shape[3], full_h and full_w)
            )
            if mve:
                return mve
        if (
            op.kind == "AVERAGE_POOL_2D"
            and x.dtype == "int8"
            and has_dsp(features)
            and full_h
            and full_w
            and x.shape[3] % 4 == 0
            and o["filter_h"] * o["filter_w"] <= 255
        ):
            return KernelPlan.of(SXTAB16, ISA_DSP, scratch_bytes=0, channels=4, clipped_windows=False)
        return KernelPlan.of(REFERENCE, scratch_bytes=0, clipped_windows=not (full_h and full_w))

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        o = op.options
        ctx.plan = plan = self.kernel_plan(op, graph, frozenset() if ctx.reference_only else ctx.features)
        batches, in_h, in_w, depth = x.shape
        (out_h, pad_h, full_h), (out_w, pad_w, full_w) = self._geometry(op, x)
        if full_h and full_w:
            count = str(o["filter_h"] * o["filter_w"])
        else:
            count = (
                (str(o["filter_h"]) if full_h else "(fy_end - fy_start)")
                + " * "
                + (str(o["filter_w"]) if full_w else "(fx_end - fx_start)")
            )
        values = dict(
            kind="avg" if op.kind == "AVERAGE_POOL_2D" else "max",
            dtype=x.dtype,
            batches=batches,
            in_h=in_h,
            in_w=in_w,
            depth=depth,
            out_h=out_h,
            out_w=out_w,
            stride_h=o["stride_h"],
            stride_w=o["stride_w"],
            filter_h=o["filter_h"],
            filter_w=o["filter_w"],
            pad_h=pad_h,
            pad_w=pad_w,
            full_h=full_h,
            full_w=full_w,
            y0=origin_expr("oy", o["stride_h"], pad_h) if out_h > 1 else str(-pad_h),
            x0=origin_expr("ox", o["stride_w"], pad_w) if out_w > 1 else str(-pad_w),
            count=count,
            const_count=full_h and full_w,
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
        )
        if x.dtype == "float32" and op.kind == "AVERAGE_POOL_2D" and o.get("ort_lanes") and out_h * out_w == 1:
            lo, hi = float_activation_range(o["activation"])  # ONNX Runtime's global pool (ops/mean.py's order)
            lanes = dict(batch=batches, channels=depth, pixels=in_h * in_w, divisor=c_float(in_h * in_w))
            return ctx.render(
                "mean_ort_lanes.c.j2",
                clamp=(c_float(lo), c_float(hi)),
                input=values["input"],
                output=values["output"],
                **lanes,
            )
        if x.dtype == "float32" and op.kind == "AVERAGE_POOL_2D" and o.get("mlas_columns"):  # ONNX Runtime's order
            lo, hi = float_activation_range(o["activation"])
            return ctx.render("pooling_avg_mlas.c.j2", act_min=c_float(lo), act_max=c_float(hi), **values)
        if x.dtype == "float32":
            lo, hi = float_activation_range(o["activation"])
            return ctx.render(
                "pooling.c.j2", ctype="float", act_min=c_float(lo), act_max=c_float(hi), lowest="-FLT_MAX", **values
            )
        lo, hi = activation_range(o["activation"], y)
        if plan.variant == fast_mve.MVE_CHANNELS8:
            return ctx.render(
                "pool_mve.c.j2",
                act_min=lo,
                act_max=hi,
                **fast_mve.avgpool_values(o["filter_h"] * o["filter_w"]),
                **values,
            )
        if plan.variant == fast_mve.MVE_MAX16:
            return ctx.render("pool_mve.c.j2", act_min=lo, act_max=hi, **values)
        if plan.variant == SXTAB16:
            return emit_sxtab16(ctx, act_min=lo, act_max=hi, **values)
        return ctx.render(
            "pooling.c.j2",
            ctype="int16_t" if x.dtype == "int16" else "int8_t",
            act_min=lo,
            act_max=hi,
            lowest=INT_RANGES[x.dtype][0],
            **values,
        )
