"""CONV_2D, int8, the "pixel" fast kernel (template conv_2d_pixel.c.j2) for the shapes im2col does not
take (grouped convolution, column buffers above MAX_COL_BYTES).

Per output pixel and group, the receptive field (kernel_h x kernel_w x the group's input channels,
padding taps = the input zero point, folded into the bias) is gathered into an int8 row of the
kernel scratch and sign-extended once into int16 pairs (SXTB16); each output channel of the group
is then one dot product of that row with its weights, stored as int16 pairs (k0,k2) (k1,k3) in the
order SXTB16 produces: LDRD + 2 SMLAD per 4 MACs. The plan is Conv2D.kernel_plan in ops/conv_2d.py.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.fast import packing as fast
from microcompiler.ops.plan import KernelPlan, Variant, dsp_or_c
from microcompiler.ops.quant import activation_range

PIXEL = Variant("pixel", ("kernel_simd.h",))


def plan(g, groups: int, features) -> KernelPlan:
    k = g.k_h * g.k_w * (g.in_c // groups)
    steps = -(-k // 4)
    return KernelPlan.of(PIXEL, dsp_or_c(features), scratch_bytes=8 * steps + 4 * steps, groups=groups, weights="s16")


def emit_pixel(op, graph, ctx, plan_: KernelPlan, g, bias) -> str:
    x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    groups = plan_.knob("groups")
    cg = g.in_c // groups
    w_rows = w.data.astype(np.int8).reshape(g.out_c, -1)  # [oc][ky][kx][c of the group]
    zp, y_zp = int(x.quant.zero_point[0]), int(y.quant.zero_point[0])
    rq = fast.requant_setup(x, w, y, bias, w_rows, op)
    ctx.note(requant="smmlar" if rq.fast else "reference")
    is_fast, scale = rq.fast, rq.scale
    words, steps = fast.pack_s16_rows(w_rows.astype(np.int32) * scale)
    lo, hi = activation_range(op.options["activation"], y)
    return ctx.render(
        "conv_2d_pixel.c.j2",
        g=g,
        describe=g.describe(),
        input=ctx.arg(op.inputs[0]),
        output=ctx.arg(op.outputs[0]),
        weights=ctx.const(
            "weights",
            words.reshape(-1),
            comment=(
                f"weights [{g.out_c} output channels][{words.shape[1]} words]: per 4 taps (ky, kx, c) the "
                "int16 pairs (k0,k2) (k1,k3)" + (", doubled" if scale == 2 else "")
            ),
        ),
        params=ctx.const(
            "params",
            rq.params(),
            comment=(
                f"per output channel [{g.out_c}] "
                + (
                    "{folded bias (doubled), multiplier, right shift}"
                    if is_fast
                    else "{folded bias, multiplier, shift, 0}"
                )
            ),
        ),
        stride=3 if is_fast else 4,
        groups=groups,
        cg=cg,
        og=g.out_c // groups,
        steps=steps,
        k=g.k_h * g.k_w * cg,
        zp=zp,
        scratch=ctx.scratch(plan_.scratch),
        isa=plan_.isa,
        fast=is_fast,
        c_k=2 * y_zp + 1,
        act_min=lo,
        act_max=hi,
        output_offset=y_zp,
    )
