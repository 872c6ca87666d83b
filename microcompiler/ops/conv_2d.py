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
    float_values,
    folded_bias,
    geometry,
    quant_values,
)
from microcompiler.ops.fast import conv_2d_float_blocks as float_blocks
from microcompiler.ops.fast import conv_2d_im2col as im2col
from microcompiler.ops.fast import conv_2d_pixel as pixel
from microcompiler.ops.fast import conv_2d_s16
from microcompiler.ops.fast import mve as fast_mve
from microcompiler.ops.features import has_dsp, has_fpu, has_mve
from microcompiler.ops.quant import activation_range, conv_multipliers


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

    def variant(self, op, graph):
        """The plan for a target without features (emit() records the plan for the actual target)."""
        return self.plan(op, graph)

    def plan(self, op, graph, features=frozenset(), tuning=None) -> dict:
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
        Otherwise (grouped int16, grouped float32) the reference loop nest. With "mve" in the features (Cortex-M55)
        an int8 convolution of one group takes the Helium kernel instead (fast_mve.conv_plan)."""
        tuning = tuning or {}
        x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
        if x.dtype == "float32" and has_fpu(features) and w.shape[3] == x.shape[3] and constant_parameters(op, graph):
            return float_blocks.plan(geometry(op, graph), features)
        if x.dtype == "int8" and has_mve(features) and constant_parameters(op, graph):
            mve = fast_mve.conv_plan(geometry(op, graph), x.shape[3] // w.shape[3])
            if mve:
                return mve
        if x.dtype == "int8" and w.shape[3] == x.shape[3] and constant_parameters(op, graph):
            g = geometry(op, graph)
            steps = -(-g.k_h * g.k_w * g.in_c // 4)
            col_bytes = 32 * steps
            if col_bytes <= fast.MAX_COL_BYTES:
                weights = tuning.get("weights", "s8")
                plan = {
                    "variant": "im2col",
                    "isa": "dsp" if has_dsp(features) else "c",
                    "pixels": 4,
                    "out_channels": 1,
                    "unroll": 4,
                    "gather": "taps" if g.in_c % 4 == 0 else "bytes",
                    "weights": weights if weights in ("s8", "s16") else "s8",
                    "scratch_bytes": col_bytes + (0 if g.in_c % 4 == 0 else 4 * steps),
                }
                if (
                    plan["weights"] == "s8"
                    and has_dsp(features)
                    and tuning.get("extract") != "sxtb16"
                    and im2col.lanes_ok(op, graph)
                ):
                    plan["extract"] = "lanes"
                return plan
        if x.dtype == "int8" and constant_parameters(op, graph):
            return pixel.plan(geometry(op, graph), x.shape[3] // w.shape[3], features)
        if x.dtype == "int16" and w.shape[3] == x.shape[3] and constant_parameters(op, graph):
            g = geometry(op, graph)
            return conv_2d_s16.plan(g, features, w.data.astype(np.int8).reshape(g.out_c, -1), tuning.get("weights"))
        return {"variant": "reference"}

    def emit(self, op, graph, ctx):
        plan = {"variant": "reference"} if ctx.reference_only else self.plan(op, graph, ctx.features, ctx.tuning)
        ctx.variant = plan
        if plan["variant"] == "im2col":
            return self._emit_im2col(op, graph, ctx, plan)
        if plan["variant"] == "mve-dot":
            return self._emit_mve(op, graph, ctx, plan)
        if plan["variant"] == "float-blocks":
            return float_blocks.emit_blocks(op, graph, ctx, plan, geometry(op, graph), bias_tensor(op, graph))
        if plan["variant"] == "pixel":
            return pixel.emit_pixel(op, graph, ctx, plan, geometry(op, graph), bias_tensor(op, graph))
        if plan["variant"] == "int16-pixel":
            return conv_2d_s16.emit(op, graph, ctx, plan, geometry(op, graph), bias_tensor(op, graph))
        if plan["variant"] == "int16-blocks":
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
        x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
        g = geometry(op, graph)
        bias = bias_tensor(op, graph)
        mult, shift = conv_multipliers(x, w, y, g.out_c)
        return fast_mve.emit_dot(
            ctx,
            plan,
            g,
            w.data.astype(np.int8).reshape(g.out_c, -1),
            bias.data.astype(np.int64) if bias is not None else np.zeros(g.out_c, np.int64),
            int(x.quant.zero_point[0]),
            mult,
            shift,
            int(y.quant.zero_point[0]),
            activation_range(op.options["activation"], y),
            ctx.arg(op.inputs[0]),
            ctx.arg(op.outputs[0]),
            g.describe(),
        )
