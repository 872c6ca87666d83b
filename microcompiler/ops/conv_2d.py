"""CONV_2D: int8, int16x8 and float32; per-tensor or per-channel weights; grouped convolution.

Semantics follow TFLite Micro's reference kernels: TFLM's padding (``ComputePaddingHeightWidth``),
taps outside the image are skipped (zero padding in the real domain), per-channel requantization
with multipliers computed as input_scale * filter_scale / output_scale in double precision.

The accumulator follows TFLM's: int32 for int8; for int16 an int32 bias means an int32 accumulator
and the 32-bit requantize, while an int64 bias or none means int64 and the 64-bit requantize
(checked against the oracle). Where the int32 accumulator could overflow, the generated code sums
in int64 and wraps to int32 at the end: what TFLM's int32 arithmetic does, without C undefined
behaviour.

The checks, geometry and requantization constants it shares with DEPTHWISE_CONV_2D are in
ops/conv_common.py; the fast kernels are ops/fast/conv_2d_im2col.py and ops/fast/conv_2d_pixel.py.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops import fast
from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.conv_common import (
    ACTIVATIONS as ACTIVATIONS,  # re-exported: the other convolution kernels import them from here
)
from microcompiler.ops.conv_common import (
    INT32_MAX as INT32_MAX,
)
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
from microcompiler.ops.fast import conv_2d_float_blocks as float_blocks
from microcompiler.ops.fast import conv_2d_im2col as im2col
from microcompiler.ops.fast import conv_2d_packed as packed
from microcompiler.ops.fast import conv_2d_pixel as pixel
from microcompiler.ops.fast import conv_2d_pointwise as pointwise
from microcompiler.ops.fast import conv_2d_s16
from microcompiler.ops.fast import mve as fast_mve
from microcompiler.ops.plan import REFERENCE_PLAN, Choice, KernelPlan, PlanRequest, choose, dsp_or_c
from microcompiler.ops.requant_float import float_requant


def _one_group(r: PlanRequest) -> bool:
    return r.tensor(1).shape[3] == r.tensor(0).shape[3]


def _constant(r: PlanRequest) -> bool:
    return constant_parameters(r.op, r.graph)


def float_blocks_fits(r: PlanRequest) -> bool:
    """float32, one group, constant weights, on a core with an FPU; not ONNX Runtime's fused
    multiply-add order (``fma_blocks``, set by the ONNX importer: the reference loop computes it)."""
    return r.dtype == "float32" and r.fpu and _one_group(r) and _constant(r) and not r.op.options.get("fma_blocks")


def helium_fits(r: PlanRequest) -> bool:
    """int8 with constant weights on a Helium core (fast_mve.conv_plan takes one group only)."""
    return r.dtype == "int8" and r.mve and _constant(r)


def _im2col_column_bytes(r: PlanRequest) -> int:
    g = geometry(r.op, r.graph)
    return 32 * -(-g.k_h * g.k_w * g.in_c // 4)


def im2col_fits(r: PlanRequest) -> bool:
    """int8, one group, constant weights, a column buffer of at most fast.MAX_COL_BYTES."""
    return r.dtype == "int8" and _one_group(r) and _constant(r) and _im2col_column_bytes(r) <= fast.MAX_COL_BYTES


def pointwise_fits(r: PlanRequest) -> bool:
    """int8, one group, constant weights, no DSP extension nor Helium, 1x1 with stride 1 and no
    padding (conv_2d_pointwise.fits)."""
    return (
        r.dtype == "int8"
        and not r.dsp
        and not r.mve
        and _one_group(r)
        and _constant(r)
        and pointwise.fits(r.op, r.graph)
    )


def packed_fits(r: PlanRequest) -> bool:
    """int8, one group, constant weights, no DSP extension nor Helium (conv_2d_packed.fits), unless
    tuned to im2col; TFLM's requantization only (ONNX Runtime's float epilogue is not in it yet)."""
    return (
        r.knob("variant") != "im2col"
        and not float_requant(r.op)
        and r.dtype == "int8"
        and not r.dsp
        and not r.mve
        and _one_group(r)
        and _constant(r)
        and packed.fits(r.op, r.graph)
    )


def _packed_layers(r: PlanRequest) -> tuple[int, int]:
    """About how many CONV_2D layers of the model take the packed kernel on this core, and the most
    taps of one: the int8 ones of one group with constant weights that are not 1x1 with stride 1 and
    no padding (cheap checks only: the weights' bounds of packed.fits are not computed for every layer)."""
    n = taps = 0
    for op in r.graph.operators:
        if op.kind == "CONV_2D":
            q = PlanRequest(op, r.graph, r.features)
            if q.dtype == "int8" and _one_group(q) and _constant(q):
                g = geometry(op, r.graph)
                if (g.k_h, g.k_w, g.pad_h, g.pad_w) != (1, 1, 0, 0) or (g.out_h, g.out_w) != (g.in_h, g.in_w):
                    n += 1
                    taps = max(taps, g.k_h * g.k_w * g.in_c)
    return n, taps


def pixel_fits(r: PlanRequest) -> bool:
    """int8 with constant weights (grouped, or a column buffer too large for im2col)."""
    return r.dtype == "int8" and _constant(r)


def int16_pixel_fits(r: PlanRequest) -> bool:
    """int16x8, one group, constant weights."""
    return r.dtype == "int16" and _one_group(r) and _constant(r)


def _rows(r: PlanRequest) -> np.ndarray:
    """The weights [output channels, taps]."""
    w = r.tensor(1)
    return w.data.astype(np.int8).reshape(w.shape[0], -1)


def _groups(r: PlanRequest) -> int:
    return r.tensor(0).shape[3] // r.tensor(1).shape[3]


def _im2col_plan(r: PlanRequest) -> KernelPlan:
    g = geometry(r.op, r.graph)
    steps = -(-g.k_h * g.k_w * g.in_c // 4)
    weights = r.knob("weights", "s8")
    weights = weights if weights in ("s8", "s16") else "s8"
    lanes = weights == "s8" and r.dsp and r.knob("extract") != "sxtb16" and im2col.lanes_ok(r.op, r.graph)
    plan = KernelPlan.of(
        im2col.IM2COL,
        dsp_or_c(r.features),
        scratch_bytes=32 * steps + (0 if g.in_c % 4 == 0 else 4 * steps),
        pixels=4,
        out_channels=1,
        unroll=4,
        gather="taps" if g.in_c % 4 == 0 else "bytes",
        weights=weights,
    )
    if lanes:
        return plan.with_knobs(extract="lanes").with_headers("kernel_lanes.h")
    return plan if r.dsp else plan.with_headers("kernel_portable.h")  # mc_dot_p4x2_s8


# The variants CONV_2D takes, in order of preference (Conv2D.kernel_plan).
CHOICES = (
    Choice(float_blocks_fits, lambda r: float_blocks.plan(geometry(r.op, r.graph), r.features)),
    Choice(helium_fits, lambda r: fast_mve.conv_plan(geometry(r.op, r.graph), _groups(r))),
    Choice(pointwise_fits, lambda r: pointwise.plan(r.op, r.graph, r.long_multiply)),
    Choice(packed_fits, lambda r: packed.plan(r.op, r.graph, *_packed_layers(r), long_multiply=r.long_multiply)),
    Choice(im2col_fits, _im2col_plan),
    Choice(pixel_fits, lambda r: pixel.plan(geometry(r.op, r.graph), _groups(r), r.features)),
    Choice(
        int16_pixel_fits, lambda r: conv_2d_s16.plan(geometry(r.op, r.graph), r.features, _rows(r), r.knob("weights"))
    ),
)


@register
class Conv2D(OpKernel):
    kinds = ("CONV_2D",)
    input_roles = ("input", "filter", "bias")
    inputs = (2, 3)
    type_notes = (
        "int8 and int16 activations with int8 or packed int4 per-channel weights (int16: int32 or int64 "
        "bias); weights and bias constant or activations"
    )
    options = "padding, stride, dilation, fused activation"
    fast = {
        "dsp": "int8 (im2col + SMLAD; pixel for grouped convolution and large kernels); int16x8, one group "
        "(int16-pixel: SMLAD on int16 pairs, exact int64 sums); portable C of the same loops elsewhere",
        "mve": "int8, one group (VMLADAVA.S8, 2 pixels x 4 channels)",
        "fpu": "float32, one group (float-blocks: 4 pixels x 4 channels in FPU registers)",
    }
    tuning_knobs = {"weights": ("s8", "s16")}  # plan(): int8 words or pre-extended int16 pairs

    def check(self, op, graph):
        check_common(op, graph, weight_channel_axis=0)
        x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
        require(
            x.shape[3] % w.shape[3] == 0,
            op,
            f"input channels {x.shape[3]} are not a multiple of the weights' depth {w.shape[3]}",
        )
        groups = x.shape[3] // w.shape[3]
        require(w.shape[0] % groups == 0, op, f"output channels {w.shape[0]} do not split into {groups} groups")
        bias = bias_tensor(op, graph)
        if x.dtype == "int8":
            require(bias is None or bias.dtype == "int32", op, f"int8 needs an int32 bias, not {bias and bias.dtype}")
        elif x.dtype == "int16":
            require(
                bias is None or bias.dtype in ("int32", "int64"),
                op,
                f"int16x8 needs an int64 or int32 bias, not {bias and bias.dtype}",
            )

    def macs(self, op, graph):
        y, w = graph.tensors[op.outputs[0]], graph.tensors[op.inputs[1]]
        return y.size * w.shape[1] * w.shape[2] * w.shape[3]

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None) -> KernelPlan:
        """The variant emit() generates and its knobs (recorded in metadata.json).

        im2col (int8, one group, im2col buffer <= 8 KB): 4 output pixels x 1 output channel per inner
        loop over im2col columns; "pixels" and "unroll" are the register block and the inner loop's
        unrolling; "weights" is s8 (int8 weights, sign-extended in the loop: 13 instructions per 16
        MACs with the DSP extension) or s16 (pre-extended int16 pairs, twice the flash: 11 per 16),
        s8 unless ``tuning`` asks for s16; "isa" says whether the target has the DSP extension (SIMD
        inline assembly) or runs the same loops in C. int8 grouped, or with a column buffer
        above 8 KB: pixel (ops/fast/conv_2d_pixel.py, one output pixel per dot product of int16 pairs).
        int16x8 with one group: int16-blocks (ops/fast/conv_2d_s16.py: int8 weights in flash, one block
        of 4 output channels widened into int16 pairs in the scratch and run over every pixel, SMLAD on
        the int16 inputs as they lie, 32-bit sums proven exact added into int64), or int16-pixel (int16
        pairs in flash, 4 output channels per pass of a gathered row) when ``tuning`` asks for s16 or
        the widened block would exceed 8 KB.
        float32 of one group with constant weights on a core with an FPU ("fpu" in the features):
        float-blocks (ops/fast/conv_2d_float_blocks.py, 4 pixels x 4 output channels per inner loop).
        int8 1x1 convolutions with stride 1 and no padding without the DSP extension: pointwise
        (ops/fast/conv_2d_pointwise.py, 2 pixels x 4 output channels per inner loop in portable C);
        other int8 convolutions of one group without it: packed (ops/fast/conv_2d_packed.py, the same
        loop on the gathered patches of 2 pixels, or 4 where the model's packed scratch allows).
        Otherwise (grouped int16, grouped float32) the reference loop nest. With "mve" in the features (Cortex-M55)
        an int8 convolution of one group takes the Helium kernel instead (fast_mve.conv_plan)."""
        plan = choose(CHOICES, PlanRequest(op, graph, features, tuning or {}))
        return plan

    def emit(self, op, graph, ctx):
        plan = REFERENCE_PLAN if ctx.reference_only else self.kernel_plan(op, graph, ctx.features, ctx.tuning)
        ctx.plan = plan
        if plan.variant == im2col.IM2COL:
            return self._emit_im2col(op, graph, ctx, plan)
        if plan.variant == pointwise.POINTWISE:
            return pointwise.emit(op, graph, ctx)
        if plan.variant == packed.PACKED:
            return packed.emit(op, graph, ctx)
        if plan.variant == fast_mve.MVE_DOT:
            return self._emit_mve(op, graph, ctx, plan)
        if plan.variant == float_blocks.FLOAT_BLOCKS:
            return float_blocks.emit_blocks(op, graph, ctx, plan, geometry(op, graph), bias_tensor(op, graph))
        if plan.variant == pixel.PIXEL:
            return pixel.emit_pixel(op, graph, ctx, plan, geometry(op, graph), bias_tensor(op, graph))
        if plan.variant == conv_2d_s16.INT16_PIXEL:
            return conv_2d_s16.emit(op, graph, ctx, plan, geometry(op, graph), bias_tensor(op, graph))
        if plan.variant == conv_2d_s16.INT16_BLOCKS:
            return conv_2d_s16.emit_blocks(op, graph, ctx, plan, geometry(op, graph), bias_tensor(op, graph))
        x, w = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1])
        g = geometry(op, graph)
        group_c = w.shape[3]
        groups = g.in_c // group_c
        bias = bias_tensor(op, graph)
        values = dict(
            input=ctx.arg(op.inputs[0]),
            weights=ctx.arg(op.inputs[1]),
            output=ctx.arg(op.outputs[0]),
            group_c=group_c,
            groups=groups,
            per_group=g.out_c // groups,
            taps=g.k_h * g.k_w * group_c,
            **g.values(),
        )
        if x.dtype == "float32":
            return ctx.render(
                "conv_2d_float.c.j2",
                fma_blocks=int(op.options.get("fma_blocks", 0)) if groups == 1 else 0,
                bias=ctx.arg(op.inputs[2]) if bias is not None else None,
                **float_values(op),
                **values,
            )
        taps = g.k_h * g.k_w * group_c
        offset = -x.quant.zero_point[0]
        fold = offset != 0 and g.always_inside and constant_parameters(op, graph)
        if fold:
            bias_c = folded_bias(op, graph, ctx, w.data.astype(np.int64).reshape(g.out_c, -1).sum(axis=1))
        else:
            bias_c = ctx.arg(op.inputs[2]) if bias is not None else None
        q = quant_values(op, graph, ctx, taps, bias_c)
        if fold:
            q["input_offset"] = 0
        return ctx.render("conv_2d_int.c.j2", **q, **values)

    def _emit_im2col(self, op, graph, ctx, plan):
        return im2col.emit_im2col(op, graph, ctx, plan)

    def _emit_mve(self, op, graph, ctx, plan):
        w = ctx.tensor(op.inputs[1])
        g = geometry(op, graph)
        layer = conv_requantized_layer(op, graph, ctx, g.out_c, g.describe())
        return fast_mve.emit_dot(ctx, plan, g, w.data.astype(np.int8).reshape(g.out_c, -1), layer)
