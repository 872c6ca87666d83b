"""TRANSPOSE_CONV: int8 (per-tensor or per-channel weights, int32 bias), int16x8 (int64 or int16 bias)
and float32; SAME/VALID padding, any strides, optional bias as the 4th input.

Inputs as in the schema: output shape (ignored, as TFLM ignores it: the output tensor's shape
decides), weights [out_c, k_h, k_w, in_c], input [n, h, w, in_c], optional bias [out_c].

TFLM's reference kernel scatters every input pixel through the filter into an int32 (int8) or
int64 (int16) buffer the size of the output. The generated code gathers instead: each output
element sums the input pixels whose strided window covers it, in the order TFLM adds them (input
row, column, channel ascending), so no buffer is needed, integer results are identical (sums modulo
2^32 or in int64 do not depend on order) and float32 sums are formed in TFLM's order. Then, as in
TFLM:

* padding from ``ComputePaddingHeightWidth`` on the *output* size (dilation 1);
* int8: ``(x - input_zp) * w`` summed in int32, plus bias, per-channel requantization
  (input_scale * filter_scale / output_scale in double), plus the output zero point; the weights'
  zero point is not used;
* int16: ``x * w`` summed in int64 (zero points not used), plus the bias (an int16 bias widened to
  int64), the 64-bit requantization;
* the fused activation clamps every type (checked against the pinned oracle).

The fast kernels (int8, constant weights and bias): "phases" in ops/fast/transpose_conv_phases.py, the
transposed convolution as one ordinary convolution of the input per output phase; on Helium cores
"mve-phases" in ops/fast/transpose_conv_mve.py, the same phases with VMLADAVA.S8 dot products; int16x8
(constant weights and bias, zero points 0): "int16-phases" in ops/fast/transpose_conv_s16.py.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.conv_2d import ACTIVATIONS, INT32_MAX
from microcompiler.ops.conv_common import check_weights_and_bias
from microcompiler.ops.fast import transpose_conv_mve, transpose_conv_s16
from microcompiler.ops.fast import transpose_conv_phases as phases
from microcompiler.ops.geometry import out_size, padding_before
from microcompiler.ops.plan import REFERENCE_PLAN, KernelPlan
from microcompiler.ops.quant import activation_range, c_float, conv_multipliers, float_activation_range

OUTPUT_SHAPE, WEIGHTS, INPUT, BIAS = range(4)
_BIAS_TYPES = {"int8": ("int32",), "int16": ("int64", "int16"), "float32": ("float32",)}


def _bias(op, graph):
    if len(op.inputs) > BIAS and op.inputs[BIAS] >= 0:
        return graph.tensors[op.inputs[BIAS]]
    return None


def _padding(op, size: int, k: int, stride: int) -> int:
    """TFLM's padding of a transposed convolution: that of a convolution over the output."""
    return padding_before(size, k, stride, 1, out_size(op.options.get("padding", "SAME"), size, k, stride, 1))


@register
class TransposeConv(OpKernel):
    kinds = ("TRANSPOSE_CONV",)
    inputs = (3, 4)
    input_roles = ("output_shape", "filter", "input", "bias")
    type_notes = "int8 (per-tensor or per-channel weights, int32 bias), int16x8 (int64 or int16 bias), float32"
    options = "padding (SAME/VALID), stride_h, stride_w, fused activation"
    tuning_knobs = {"weights": ("s8", "s16")}  # int16x8: int8 weights widened per phase, or int16 pairs
    fast = {
        "dsp": "int8 with constant weights (phases: one convolution per output phase, no zero-stuffing MACs, "
        "4 output channels per SMLAD dot product); int16x8 with constant weights, zero points 0 (int16-phases: the "
        "phases with int16 pairs, 4 output channels per SMLAD pass, int32 sums proven exact; int16-phases-s8, the "
        "default: the int8 weights in flash, each phase's widened once into the scratch by SXTB16); portable C of "
        "the same loops elsewhere",
        "mve": "int8 with constant weights, kernel >= stride (mve-phases: the phases with 2 pixels x 4 output "
        "channels per VMLADAVA.S8 dot product)",
    }

    def check(self, op, graph):
        o = op.options
        require(
            len(op.inputs) in (3, 4) and min(op.inputs[:3]) >= 0 and len(op.outputs) == 1,
            op,
            "expects output shape, weights, input, optional bias and one output",
        )
        w, x, y = graph.tensors[op.inputs[WEIGHTS]], graph.tensors[op.inputs[INPUT]], graph.tensors[op.outputs[0]]
        require(
            len(x.shape) == 4 and len(w.shape) == 4 and len(y.shape) == 4,
            op,
            f"input, weights and output must be 4-D (NHWC, OHWI); got {list(x.shape)}, {list(w.shape)}, "
            f"{list(y.shape)}",
        )
        require(o.get("padding", "SAME") in ("SAME", "VALID"), op, f"padding {o.get('padding')} is not supported")
        require(
            o.get("activation", "NONE") in ACTIVATIONS, op, f"fused activation {o.get('activation')} is not supported"
        )
        require(
            o.get("stride_h", 0) >= 1 and o.get("stride_w", 0) >= 1,
            op,
            f"stride {o.get('stride_h', 0)}x{o.get('stride_w', 0)} is not supported (must be >= 1)",
        )
        require(x.shape[3] == w.shape[3], op, f"input has {x.shape[3]} channels but the weights take {w.shape[3]}")
        require(y.shape[3] == w.shape[0], op, f"output has {y.shape[3]} channels but the weights make {w.shape[0]}")
        require(y.shape[0] == x.shape[0], op, "input and output batch sizes differ")
        combo = (x.dtype, w.dtype, y.dtype)
        require(
            combo in {("int8", "int8", "int8"), ("int16", "int8", "int16"), ("float32", "float32", "float32")},
            op,
            f"type combination input/weights/output {combo} is not supported (int8, int16x8, float32; "
            "hybrid models are not supported by TFLM either)",
        )
        require(
            x.dtype == "float32" or (x.quant is not None and y.quant is not None and w.quant is not None),
            op,
            "quantized tensors need quantization parameters",
        )
        check_weights_and_bias(op, x, w, _bias(op, graph), y.shape[3], 0, _BIAS_TYPES)
        if x.dtype == "float32":
            return
        out_c = y.shape[3]
        if x.dtype == "int16":
            _, shift = conv_multipliers(x, w, y, out_c)
            require(
                all(int(s) <= 14 for s in shift),
                op,
                "the requantization scale input_scale * filter_scale / output_scale is too large (>= 2^15)",
            )

    def macs(self, op, graph):
        w, x = graph.tensors[op.inputs[WEIGHTS]], graph.tensors[op.inputs[INPUT]]
        return x.size * w.shape[0] * w.shape[1] * w.shape[2]

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None) -> KernelPlan:
        """int8 with constant weights and bias: "phases" (ops/fast/transpose_conv_phases.py); otherwise
        the reference gather loop nest."""
        w, x = graph.tensors[op.inputs[WEIGHTS]], graph.tensors[op.inputs[INPUT]]
        bias = _bias(op, graph)
        if x.dtype == "int8" and w.is_constant and (bias is None or bias.is_constant):
            chosen = transpose_conv_mve.plan(
                x.shape[3], w.shape[1], w.shape[2], op.options["stride_h"], op.options["stride_w"], features
            )
            if chosen:
                return chosen
            return phases.plan(
                x.shape[3], w.shape[1], w.shape[2], op.options["stride_h"], op.options["stride_w"], features
            )
        y = graph.tensors[op.outputs[0]]
        if transpose_conv_s16.applies(x, w, y, bias):
            chosen = transpose_conv_s16.plan(
                w,
                w.shape[1],
                w.shape[2],
                op.options["stride_h"],
                op.options["stride_w"],
                features,
                (tuning or {}).get("weights"),
            )
            if chosen:
                return chosen
        return REFERENCE_PLAN

    def emit(self, op, graph, ctx):
        plan = REFERENCE_PLAN if ctx.reference_only else self.kernel_plan(op, graph, ctx.features, ctx.tuning)
        ctx.plan = plan
        o = op.options
        w, x, y = ctx.tensor(op.inputs[WEIGHTS]), ctx.tensor(op.inputs[INPUT]), ctx.tensor(op.outputs[0])
        bias = _bias(op, graph)
        n, in_h, in_w, in_c = x.shape
        _, out_h, out_w, out_c = y.shape
        k_h, k_w = w.shape[1], w.shape[2]
        stride_h, stride_w = o["stride_h"], o["stride_w"]
        pad_h, pad_w = _padding(op, out_h, k_h, stride_h), _padding(op, out_w, k_w, stride_w)
        values = dict(
            batches=n,
            in_h=in_h,
            in_w=in_w,
            in_c=in_c,
            out_h=out_h,
            out_w=out_w,
            out_c=out_c,
            k_h=k_h,
            k_w=k_w,
            stride_h=stride_h,
            stride_w=stride_w,
            pad_h=pad_h,
            pad_w=pad_w,
            input=ctx.arg(op.inputs[INPUT]),
            output=ctx.arg(op.outputs[0]),
            describe=(
                f"TRANSPOSE_CONV input {n}x{in_h}x{in_w}x{in_c} -> output {n}x{out_h}x{out_w}x{out_c}; "
                f"kernel {k_h}x{k_w}, stride {stride_h}x{stride_w}, padding top {pad_h} left {pad_w}"
            ),
        )
        if plan.variant == transpose_conv_mve.MVE_PHASES:
            return transpose_conv_mve.emit(ctx, plan, x, w, y, bias, values, o.get("activation", "NONE"))
        if plan.variant in transpose_conv_s16.VARIANTS:
            return transpose_conv_s16.emit(ctx, plan, x, w, y, bias, values, o.get("activation", "NONE"))
        if plan.variant == phases.PHASES:
            return phases.emit_phases(ctx, plan, x, w, y, bias, values, o.get("activation", "NONE"))
        values["weights"] = ctx.arg(op.inputs[WEIGHTS])
        bias_c = ctx.arg(op.inputs[BIAS]) if bias is not None else None
        if x.dtype == "float32":
            lo, hi = float_activation_range(o.get("activation", "NONE"))
            return ctx.render(
                "transpose_conv.c.j2",
                io_t="float",
                w_t="float",
                acc_t="float",
                bias=bias_c,
                act_min=c_float(lo),
                act_max=c_float(hi),
                **values,
            )
        mult, shift = conv_multipliers(x, w, y, out_c)
        if len(set(zip(mult.tolist(), shift.tolist()))) == 1:
            requant = (str(int(mult[0])), str(int(shift[0])))
        else:
            requant = (ctx.const("multiplier", mult) + "[oc]", ctx.const("shift", shift) + "[oc]")
        lo, hi = activation_range(o.get("activation", "NONE"), y)
        if x.dtype == "int16":
            return ctx.render(
                "transpose_conv.c.j2",
                io_t="int16_t",
                w_t="int8_t",
                acc_t="int64_t",
                bias=bias_c,
                requant_fn="mc_requantize64",
                requant=requant,
                input_offset=0,
                output_offset=0,
                wrap=False,
                act_min=lo,
                act_max=hi,
                **values,
            )
        # Largest |accumulator| TFLM's int32 arithmetic can reach; beyond int32 we sum in int64 and wrap.
        taps = -(-k_h // stride_h) * -(-k_w // stride_w) * in_c
        max_bias = (
            int(np.max(np.abs(bias.data.astype(np.int64))))
            if bias is not None and bias.is_constant
            else (INT32_MAX if bias is not None else 0)
        )
        wrap = taps * 128 * 255 + max_bias > INT32_MAX
        return ctx.render(
            "transpose_conv.c.j2",
            io_t="int8_t",
            w_t="int8_t",
            acc_t="int64_t" if wrap else "int32_t",
            bias=bias_c,
            requant_fn="mc_requantize",
            requant=requant,
            input_offset=-x.quant.zero_point[0],
            output_offset=y.quant.zero_point[0],
            wrap=wrap,
            act_min=lo,
            act_max=hi,
            **values,
        )
