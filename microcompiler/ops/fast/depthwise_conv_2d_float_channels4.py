"""DEPTHWISE_CONV_2D, float32: the "float-channels4" fast kernel (template
depthwise_conv_2d_float_channels4.c.j2) for cores with an FPU.

The outer loops are CONV_2D float-blocks' (ops/fast/_float_window.j2: output rows with their kernel
rows clipped, blocks of 4 pixels inside the image, border pixels one at a time with the kernel
columns clipped: no per-tap bounds checks). Per block, with depth multiplier 1, 4 channels x 4
pixels in FPU registers over the taps of each kernel row (kernel_float.h mc_f32_dw_4x4; the weights
[ky][kx][channel] are already 4 consecutive floats per tap); the channels beyond a multiple of 4,
and every channel with a depth multiplier above 1 (input channel = output channel / multiplier), one
at a time for 4 pixels. Every output is summed in TFLM's order (kernel row, column; bias last). The
plan is DepthwiseConv2D.kernel_plan in ops/depthwise_conv_2d.py.
"""

from __future__ import annotations

from microcompiler.ops.conv_common import float_values
from microcompiler.ops.fast.conv_2d_float_blocks import (
    BLOCK_CHANNELS,
    BLOCK_PIXELS,
    FLOAT_HEADERS,
    clip_values,
    float_isa,
)
from microcompiler.ops.plan import KernelPlan, Variant

FLOAT_CHANNELS4 = Variant("float-channels4", FLOAT_HEADERS)


def plan(multiplier: int, features) -> KernelPlan:
    return KernelPlan.of(
        FLOAT_CHANNELS4,
        float_isa(features),
        scratch_bytes=0,
        pixels=BLOCK_PIXELS,
        channels=BLOCK_CHANNELS if multiplier == 1 else 1,
    )


def emit_channels4(op, graph, ctx, plan_: KernelPlan, g, bias) -> str:
    mult = op.options.get("depth_multiplier", 1)
    nb = g.out_c // BLOCK_CHANNELS if mult == 1 else 0
    return ctx.render(
        "depthwise_conv_2d_float_channels4.c.j2",
        g=g,
        describe=g.describe(),
        input=ctx.arg(op.inputs[0]),
        output=ctx.arg(op.outputs[0]),
        weights=ctx.arg(op.inputs[1]),
        bias=ctx.arg(op.inputs[2]) if bias is not None else None,
        mult=mult,
        nb=nb,
        OB=BLOCK_CHANNELS,
        PX=BLOCK_PIXELS,
        **clip_values(g),
        **float_values(op),
        isa=plan_.isa,
    )
