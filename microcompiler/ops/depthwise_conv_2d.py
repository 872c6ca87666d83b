"""DEPTHWISE_CONV_2D: int8, int16x8 and float32; per-tensor or per-channel weights; any depth multiplier.

Output channel oc reads input channel oc / depth_multiplier, as in TFLite Micro's reference kernel.
Weights are [1, kernel_h, kernel_w, output_channels]; per-channel scales run along dimension 3.
int16 takes an int64 bias (TFLM reads the bias as int64) and always accumulates in 64 bits.
Checks, geometry and requantization constants are shared with CONV_2D (ops/conv_common.py); the fast
kernels are ops/fast/depthwise_conv_2d_channels4.py and ops/fast/depthwise_conv_2d_planes.py (int8),
ops/fast/depthwise_conv_2d_s16.py (int16x8).
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.conv_common import (
    bias_tensor,
    check_common,
    constant_parameters,
    conv_requantized_layer,
    float_values,
    folded_bias,
    geometry,
    quant_values,
)
from microcompiler.ops.fast import depthwise_conv_2d_float_channels4 as float_channels4
from microcompiler.ops.fast import depthwise_conv_2d_mve_pairs as mve_pairs
from microcompiler.ops.fast import depthwise_conv_2d_packed_rows as packed_rows
from microcompiler.ops.fast import depthwise_conv_2d_planes as planes_kernel
from microcompiler.ops.fast import depthwise_conv_2d_rows as rows_kernel
from microcompiler.ops.fast import depthwise_conv_2d_s16 as dw_s16
from microcompiler.ops.fast import mve as fast_mve
from microcompiler.ops.fast.depthwise_conv_2d_channels4 import CHANNELS4, emit_channels4
from microcompiler.ops.plan import REFERENCE, REFERENCE_PLAN, Choice, KernelPlan, PlanRequest, choose, dsp_or_c
from microcompiler.ops.requant_float import float_requant, has_post_table, is_mve


def _multiplier(r: PlanRequest) -> int:
    return r.op.options.get("depth_multiplier", 1)


def _int8_constant(r: PlanRequest) -> bool:
    return r.dtype == "int8" and constant_parameters(r.op, r.graph)


def reads_channel_table(r: PlanRequest) -> bool:
    """Output channels were dropped (passes/zero_channels.py): each remaining one names its input channel."""
    return r.op.notes.input_channels is not None


def written_in_place(r: PlanRequest) -> bool:
    """The memory planner gave the output the input's memory (DepthwiseConv2D.inplace_inputs)."""
    return r.graph.storage(r.op.outputs[0]) == r.graph.storage(r.op.inputs[0])


def float_channels4_fits(r: PlanRequest) -> bool:
    """float32, constant weights, an FPU, no channel table; not ONNX Runtime's fused multiply-add chain
    (``fma_chain``, set by the ONNX importer: the reference loop computes it)."""
    return (
        r.dtype == "float32"
        and r.fpu
        and constant_parameters(r.op, r.graph)
        and not reads_channel_table(r)
        and not r.op.options.get("fma_chain")
        and not r.op.options.get("mlas_m1")
    )


def int16_pairs_fits(r: PlanRequest) -> bool:
    """int16x8, constant weights, no channel table (dw_s16.plan refuses where an int32 sum could overflow)."""
    return r.dtype == "int16" and constant_parameters(r.op, r.graph) and not reads_channel_table(r)


def one_channel_at_a_time(r: PlanRequest) -> bool:
    """int8 written in place or reading a channel table: planes, the only fast kernel for either."""
    return _int8_constant(r) and (written_in_place(r) or reads_channel_table(r))


def helium_fits(r: PlanRequest) -> bool:
    """int8 on a Helium core (fast_mve.depthwise_plan: multiplier 1, channels % 16 == 0; or one input
    channel, any multiplier: the CONV_2D kernel "mve-dot"; or 8 channels, stride 1 across:
    "mve-pixels2x8")."""
    return _int8_constant(r) and r.mve


def rows_fits(r: PlanRequest) -> bool:
    """int8 without the DSP extension nor Helium, not tuned to another variant (rows_kernel.fits);
    TFLM's requantization only (ONNX Runtime's float epilogue is not in it yet)."""
    return (
        _int8_constant(r)
        and not float_requant(r.op)
        and not r.dsp
        and not r.mve
        and r.knob("variant") in (None, "rows")
        and rows_kernel.fits(r.op, r.graph)
    )


def packed_rows_fits(r: PlanRequest) -> bool:
    """rows_fits with an even depth multiplier (channel pairs) and a lane width: packed-rows, unless
    tuned to rows or the core is known to lack the long multiply (Cortex-M0/M0+/M23: its C would run
    the rows kernel, and the ring of packed rows would be scratch it never uses)."""
    return (
        _multiplier(r) % 2 == 0
        and r.long_multiply
        and r.knob("variant") in (None, "packed-rows")
        and _int8_constant(r)
        and not float_requant(r.op)
        and not r.dsp
        and not r.mve
        and packed_rows.fits(r.op, r.graph)
    )


def only_planes_fits(r: PlanRequest) -> bool:
    """int8 with a depth multiplier other than 1 or channels not a multiple of 4 (no channels4)."""
    return _int8_constant(r) and (_multiplier(r) != 1 or r.tensor(0).shape[3] % 4 != 0)


def planes_preferred(r: PlanRequest) -> bool:
    """Both apply: planes when tuned so, or with the DSP extension when it runs two or more pixels per
    step and its plane fits planes_kernel.PREFERRED_PLANE_BYTES."""
    if not _int8_constant(r):
        return False
    planes = _planes_plan(r)
    knob = r.knob("variant")
    return knob == "planes" or (
        knob != "channels4"
        and r.dsp
        and planes.knob("pixels") > 1
        and planes.scratch <= planes_kernel.PREFERRED_PLANE_BYTES
    )


def _planes_plan(r: PlanRequest) -> KernelPlan:
    return planes_kernel.plan(geometry(r.op, r.graph), r.features)


def _channels4_plan(r: PlanRequest) -> KernelPlan:
    return KernelPlan.of(
        CHANNELS4, dsp_or_c(r.features), scratch_bytes=0, channels=4, taps_unrolled=True, weights="s16-pairs"
    )


# The variants DEPTHWISE_CONV_2D takes, in order of preference (DepthwiseConv2D.kernel_plan).
CHOICES = (
    Choice(float_channels4_fits, lambda r: float_channels4.plan(_multiplier(r), r.features)),
    Choice(
        int16_pairs_fits,
        lambda r: dw_s16.plan(geometry(r.op, r.graph), _multiplier(r), r.tensor(1), r.features, r.knob("weights")),
    ),
    Choice(
        one_channel_at_a_time,
        lambda r: _planes_plan(r).with_knobs(in_place=True) if written_in_place(r) else _planes_plan(r),
    ),
    Choice(
        helium_fits,
        lambda r: (
            fast_mve.depthwise_plan(geometry(r.op, r.graph), _multiplier(r))
            or mve_pairs.plan(geometry(r.op, r.graph), _multiplier(r))
        ),
    ),
    Choice(packed_rows_fits, lambda r: packed_rows.plan(r.op, r.graph)),
    Choice(rows_fits, lambda r: rows_kernel.plan()),
    Choice(only_planes_fits, _planes_plan),
    Choice(planes_preferred, _planes_plan),
    Choice(_int8_constant, _channels4_plan),
)


@register
class DepthwiseConv2D(OpKernel):
    kinds = ("DEPTHWISE_CONV_2D",)
    input_roles = ("input", "filter", "bias", "post_table")  # post_table: ops/requant_float.py (ONNX QDQ)
    inputs = (2, 4)
    type_notes = (
        "int8 and int16 activations with int8 or packed int4 per-channel weights; weights and bias "
        "constant or activations"
    )
    options = "padding, stride, dilation, depth multiplier, fused activation"
    tuning_knobs = {"weights": ("s8", "s16")}  # int16x8: int8 weights widened per channel pair, or int16 pairs
    fast = {
        "dsp": "int8: channels4 (depth multiplier 1, channels divisible by 4) or planes (any shape); int16x8: "
        "int16-pair-planes (any depth multiplier, int8 weights widened per pair of channels, SMLABB/SMLATT on "
        "int16 pairs, a zero-padded plane per input channel) or int16-pairs (int16 weights); without it int8 rows "
        "(one channel at a time, blocks of up to 4 pixels of a row) or, with an even depth multiplier, packed-rows "
        "(each input row packed once, two pixels per word, into a ring of kernel-height rows; 4 pixels x 2 "
        "channels per step, one 32 x 32 -> 64 multiply-accumulate per 2 MACs; Armv6-M: the rows loops)",
        "mve": "int8, depth multiplier 1, channels divisible by 16 (VMULLB/VMULLT, 16 channels); one input channel: the CONV_2D kernel mve-dot; 8 channels, stride 1 across: mve-pixels2x8 (two pixels per vector)",
        "fpu": "float32 (float-channels4: 4 pixels x 4 channels in FPU registers; any multiplier)",
    }

    def check(self, op, graph):
        check_common(op, graph, weight_channel_axis=3)
        x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
        mult = op.options.get("depth_multiplier", 1)
        require(w.shape[0] == 1, op, f"weights must have shape [1, h, w, channels], not {list(w.shape)}")
        table = op.notes.input_channels  # output channels dropped (passes/zero_channels.py)
        require(
            table is None or (len(table) == w.shape[3] and all(0 <= c < x.shape[3] for c in table)),
            op,
            f"input_channels {table} do not name an input channel for each of the {w.shape[3]} output channels",
        )
        require(
            mult >= 1 and (table is not None or x.shape[3] * mult == w.shape[3]),
            op,
            f"depth multiplier {mult} with {x.shape[3]} input channels does not make the "
            f"{w.shape[3]} output channels of the weights",
        )
        bias = bias_tensor(op, graph)
        if x.dtype == "int8":
            require(bias is None or bias.dtype == "int32", op, f"int8 needs an int32 bias, not {bias and bias.dtype}")
        elif x.dtype == "int16":
            require(
                bias is None or bias.dtype == "int64", op, f"int16x8 needs an int64 bias, not {bias and bias.dtype}"
            )

    def macs(self, op, graph):
        y, w = graph.tensors[op.outputs[0]], graph.tensors[op.inputs[1]]
        return y.size * w.shape[1] * w.shape[2]

    def inplace_inputs(self, op, graph):
        """int8, depth multiplier 1, constant weights and bias: the output may overwrite the input.
        Output channel c is written only over input channel c's values (same channel count, output
        pixels no more than input pixels), and the in-place schedules (planes, or the reference
        loops channel by channel) copy that channel to scratch before writing it."""
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if (
            (x.dtype, y.dtype) != ("int8", "int8")
            or op.options.get("depth_multiplier", 1) != 1
            or x.shape[3] != y.shape[3]
            or not constant_parameters(op, graph)
            or y.size > x.size
        ):
            return ()
        return (0,)

    def inplace_scratch(self, op, graph):
        """The planes kernel's plane (the reference loops' channel copy is smaller)."""
        return planes_kernel.plane_geometry(geometry(op, graph)).nbytes

    @staticmethod
    def in_place(op, graph) -> bool:
        """The memory planner gave the output the input's memory (``inplace_inputs``)."""
        return graph.storage(op.outputs[0]) == graph.storage(op.inputs[0])

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None) -> KernelPlan:
        """int8 with constant weights and bias: planes (ops/fast/depthwise_conv_2d_planes.py: any depth multiplier,
        channel count, kernel, stride, dilation; one int16 plane per input channel in the kernel
        scratch) or channels4 (depth multiplier 1, channels % 4 == 0: 4 channels per step with the
        taps unrolled, int16 weights; SXTB16 + SMLABB/SMLATT with the DSP extension, "isa" dsp;
        LDRSB + MLA otherwise, "isa" c, no scratch). Where both apply, planes with the DSP extension
        when it runs two or more pixels per step (stride 1, no horizontal dilation) and its plane fits
        planes_kernel.PREFERRED_PLANE_BYTES (KWS: 2.2 instead of 3.76 instructions per MAC; with
        stride 2 channels4 is faster), channels4 otherwise. ``tuning`` {"variant": "planes"} or
        {"variant": "channels4"} overrides. With "mve" (Cortex-M55) and channels % 16 == 0 the Helium
        kernel (fast_mve.depthwise_plan). Written in place (``inplace_inputs``): always planes, which
        copies each input channel to its plane before writing that channel; with the
        note ``input_channels`` (output channels dropped by passes/zero_channels.py: the input channel
        each remaining one reads) planes too. int16x8: int16-pair-planes (ops/fast/depthwise_conv_2d_s16.py,
        any depth multiplier, int8 weights in flash widened per pair of output channels, a zero-padded
        plane of 8 KB at most) or int16-pairs (int16 pairs in flash; ``tuning`` {"weights": "s16"}, or
        a larger plane); the reference where one int32 sum of a channel could overflow, or with
        ``input_channels``. float32 with constant weights on a core with an FPU (and no input_channels
        table): float-channels4 (ops/fast/depthwise_conv_2d_float_channels4.py); else the reference loop nest."""
        plan = choose(CHOICES, PlanRequest(op, graph, features, tuning or {}))
        if has_post_table(op) and is_mve(plan):  # no post table in the Helium epilogue: the DSP kernels
            plan = choose(CHOICES, PlanRequest(op, graph, features - {"mve"}, tuning or {}))
        return plan

    def emit(self, op, graph, ctx):
        plan = REFERENCE_PLAN if ctx.reference_only else self.kernel_plan(op, graph, ctx.features, ctx.tuning)
        ctx.plan = plan
        if plan.variant == rows_kernel.ROWS:
            return rows_kernel.emit(op, graph, ctx, plan)
        if plan.variant == packed_rows.PACKED_ROWS:
            return packed_rows.emit(op, graph, ctx, plan)
        if plan.variant == CHANNELS4:
            return self._emit_channels4(op, graph, ctx, plan)
        if plan.variant in (fast_mve.MVE_CHANNELS16, fast_mve.MVE_DOT, mve_pairs.MVE_PIXELS2X8):
            return self._emit_mve(op, graph, ctx, plan)
        if plan.variant == float_channels4.FLOAT_CHANNELS4:
            return float_channels4.emit_channels4(op, graph, ctx, plan, geometry(op, graph), bias_tensor(op, graph))
        if plan.variant == planes_kernel.PLANES:
            return planes_kernel.emit_planes(op, graph, ctx, plan, geometry(op, graph), bias_tensor(op, graph))
        if plan.variant == dw_s16.INT16_PAIR_PLANES:
            return dw_s16.emit_planes(
                op, ctx, plan, geometry(op, graph), bias_tensor(op, graph), op.options.get("depth_multiplier", 1)
            )
        if plan.variant == dw_s16.INT16_PAIRS:
            return dw_s16.emit(
                op, ctx, plan, geometry(op, graph), bias_tensor(op, graph), op.options.get("depth_multiplier", 1)
            )
        x, w = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1])
        g = geometry(op, graph)
        mult = op.options.get("depth_multiplier", 1)
        bias = bias_tensor(op, graph)
        values = dict(
            input=ctx.arg(op.inputs[0]),
            weights=ctx.arg(op.inputs[1]),
            output=ctx.arg(op.outputs[0]),
            mult=mult,
            channel_copy=None,
            input_channels=planes_kernel.input_channel_table(op, ctx, g),
            **g.values(),
        )
        if x.dtype == "float32" and op.options.get("mlas_m1") and mult == 1:  # ONNX Runtime's im2col + M=1 SGEMM
            return ctx.render(
                "depthwise_conv_2d_float_m1.c.j2",
                bias=ctx.arg(op.inputs[2]) if bias is not None else None,
                **float_values(op),
                **values,
            )
        if x.dtype == "float32":
            return ctx.render(
                "depthwise_conv_2d_float.c.j2",
                fma_chain=bool(op.options.get("fma_chain")),
                bias=ctx.arg(op.inputs[2]) if bias is not None else None,
                **float_values(op),
                **values,
            )
        taps = g.k_h * g.k_w
        fold = x.quant.zero_point[0] != 0 and g.always_inside and constant_parameters(op, graph)
        if fold:
            sums = w.data.astype(np.int64).reshape(taps, g.out_c).sum(axis=0)
            bias_c = folded_bias(op, graph, ctx, sums)
        else:
            bias_c = ctx.arg(op.inputs[2]) if bias is not None else None
        q = quant_values(op, graph, ctx, taps, bias_c)
        if fold:
            q["input_offset"] = 0
        if self.in_place(op, graph):  # channel by channel, each input channel copied to scratch first
            ctx.plan = KernelPlan.of(REFERENCE, in_place=True)
            values["channel_copy"] = ctx.scratch(g.in_h * g.in_w)
        if x.dtype == "int16":  # TFLM's int16 depthwise kernel always accumulates in 64 bits
            q.update(acc_t="int64_t", requant_fn="mc_requantize64", wrap=False)
        return ctx.render("depthwise_conv_2d_int.c.j2", **q, **values)

    def _emit_channels4(self, op, graph, ctx, plan):
        return emit_channels4(op, graph, ctx, plan)

    def _emit_mve(self, op, graph, ctx, plan):
        w = ctx.tensor(op.inputs[1])
        g = geometry(op, graph)
        layer = conv_requantized_layer(op, graph, ctx, g.out_c, g.describe())
        w_taps = w.data.astype(np.int8).reshape(g.k_h * g.k_w, g.out_c)
        if plan.variant == fast_mve.MVE_DOT:  # one input channel: the CONV_2D kernel
            return fast_mve.emit_depthwise_dot(ctx, plan, g, w_taps, layer)
        if plan.variant == mve_pairs.MVE_PIXELS2X8:  # 8 channels, stride 1 across: pixel pairs
            return mve_pairs.emit(ctx, plan, g, w_taps, layer)
        return fast_mve.emit_depthwise(ctx, plan, g, w_taps, layer)
