"""CONV_2D, int8, one group, the "im2col" fast kernel (template conv_2d_im2col.c.j2): 4 output pixels
x 1 output channel per inner loop over the im2col columns of 4 pixels (gathered into the scratch
buffer, padding taps filled with the input zero point), the input zero point folded into the bias,
weights as int8 words (SXTB16) or pre-extended int16 pairs (SMLAD). The plan (which kernel, its
knobs) is Conv2D.plan in ops/conv_2d.py.
"""
from __future__ import annotations

import numpy as np

from microcompiler.ops.conv_common import bias_tensor, geometry
from microcompiler.ops.fast import packing as fast
from microcompiler.ops.quant import activation_range, conv_multipliers


def emit_im2col(op, graph, ctx, plan) -> str:
    x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    g = geometry(op, graph)
    bias = bias_tensor(op, graph)
    w_rows = w.data.astype(np.int8).reshape(g.out_c, -1)  # [oc][ky][kx][c]
    s16 = plan["weights"] == "s16"
    zp = int(x.quant.zero_point[0])
    b = bias.data.astype(np.int64) if bias is not None else np.zeros(g.out_c, np.int64)
    folded = b - zp * w_rows.astype(np.int64).sum(axis=1)
    mult, shift = conv_multipliers(x, w, y, g.out_c)
    y_zp = int(y.quant.zero_point[0])
    is_fast, c, r = fast.requant_table(mult, shift, y_zp, fast.acc_bounds(b, w_rows))
    plan["requant"] = "smmlar" if is_fast else "reference"
    scale = 2 if s16 and is_fast else 1  # int16 weights and bias doubled: the accumulator is 2 * acc
    if s16:
        words, steps = fast.pack_s16_rows(w_rows.astype(np.int32) * scale)
        w_comment = (f"weights [{g.out_c} output channels][{words.shape[1]} words]: per 4 taps (ky, kx, c) the int16 "
                     "pairs (k0,k2) (k1,k3)" + (", doubled" if scale == 2 else ""))
    else:
        words, steps = fast.pack_s8_words(w_rows)
        w_comment = (f"weights [{g.out_c} output channels][{words.shape[1]} words]: 4 int8 taps (ky, kx, c) "
                     "per word, zero-padded")
    lo, hi = activation_range(op.options["activation"], y)
    npix = g.out_h * g.out_w
    # one multiplier for every channel (per-tensor weights): literal constants, the bias alone
    uniform = len(set(zip(mult.tolist(), c.tolist(), r.tolist()))) == 1
    if uniform:
        params = ctx.const("bias", fast.wrap32(folded * scale),
                           comment=f"bias [{g.out_c}] with the input zero point folded in"
                           + (", doubled" if scale == 2 else ""))
        uniform = (int(mult[0]), int(c[0]), int(r[0]))
    elif is_fast:  # {bias, multiplier, r}; c from r in the epilogue
        params = ctx.const("params", fast.channel_params3(folded * scale, mult, r),
                           comment=f"per output channel [{g.out_c}] {{folded bias, multiplier, right shift}}")
    else:
        params = ctx.const("params", fast.channel_params(folded * scale, mult, c, r),
                           comment=f"per output channel [{g.out_c}] {{folded bias, multiplier, shift, 0}}")
    return ctx.render("conv_2d_im2col.c.j2", g=g, describe=g.describe(), input=ctx.arg(op.inputs[0]),
                      output=ctx.arg(op.outputs[0]), weights=ctx.const("weights", words.reshape(-1), comment=w_comment),
                      params=params, uniform=uniform, stride=1 if uniform else (3 if is_fast else 4),
                      scratch=ctx.scratch(plan["scratch_bytes"]),
                      steps=steps, words=words.shape[1], s16=s16, isa=plan["isa"], taps_mode=g.in_c % 4 == 0, zp=zp,
                      zp_pair=int(fast.pairs(np.array([zp]), np.array([zp]))[0]), npix=npix,
                      full=npix // 4, tail=npix % 4, fast=is_fast, act_min=lo, act_max=hi,
                      output_offset=y_zp)
