"""CONV_2D "pixel": the int8 fast kernel for the shapes im2col does not take (grouped convolution,
column buffers above fast.MAX_COL_BYTES).

Per output pixel and group, the receptive field (kernel_h x kernel_w x the group's input channels,
padding taps = the input zero point, folded into the bias) is gathered into an int8 row of the
kernel scratch and sign-extended once into int16 pairs (SXTB16); each output channel of the group
is then one dot product of that row with its weights, stored as int16 pairs (k0,k2) (k1,k3) in the
order SXTB16 produces: LDRD + 2 SMLAD per 4 MACs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from microcompiler.ops import fast
from microcompiler.ops.quant import activation_range, conv_multipliers


@dataclass
class Requant:
    """A fast int8 convolution's requantization: per output channel the bias with the input zero
    point folded in, multiplier, and (fast: mc_requant_fast, c and r; else the TFLM shift in c)."""
    folded: np.ndarray
    mult: np.ndarray
    c: np.ndarray
    r: np.ndarray
    fast: bool

    @property
    def scale(self) -> int:
        """2 with the fast requantization: weights and bias doubled, the accumulators hold 2 * acc."""
        return 2 if self.fast else 1

    def params(self) -> np.ndarray:
        """{bias, M, r} per channel (fast: c = ((2 zp + 1) << r) >> 1 in the epilogue), else
        {bias, M, shift, 0}; the bias doubled with the fast requantization."""
        if self.fast:
            return fast.channel_params3(self.folded * self.scale, self.mult, self.r)
        return fast.channel_params(self.folded * self.scale, self.mult, self.c, self.r)


def requant_setup(x, w, y, bias, w_rows: np.ndarray) -> Requant:
    """The Requant of a convolution with int8 weights w_rows [channels, taps] (TFLM's multipliers,
    the bound on |acc| from the weights and bias)."""
    channels = len(w_rows)
    b = bias.data.astype(np.int64) if bias is not None else np.zeros(channels, np.int64)
    folded = b - int(x.quant.zero_point[0]) * w_rows.astype(np.int64).sum(axis=1)
    mult, shift = conv_multipliers(x, w, y, channels)
    is_fast, c, r = fast.requant_table(mult, shift, int(y.quant.zero_point[0]), fast.acc_bounds(b, w_rows))
    return Requant(folded, mult, c, r, is_fast)


def plan(g, groups: int, features) -> dict:
    k = g.k_h * g.k_w * (g.in_c // groups)
    steps = -(-k // 4)
    return {"variant": "pixel", "isa": "dsp" if fast.has_dsp(features) else "c", "groups": groups,
            "weights": "s16", "scratch_bytes": 8 * steps + 4 * steps}


def emit_pixel(op, graph, ctx, plan_: dict, g, bias) -> str:
    x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    groups = plan_["groups"]
    cg = g.in_c // groups
    w_rows = w.data.astype(np.int8).reshape(g.out_c, -1)  # [oc][ky][kx][c of the group]
    zp, y_zp = int(x.quant.zero_point[0]), int(y.quant.zero_point[0])
    rq = requant_setup(x, w, y, bias, w_rows)
    plan_["requant"] = "smmlar" if rq.fast else "reference"
    is_fast, scale = rq.fast, rq.scale
    words, steps = fast.pack_s16_rows(w_rows.astype(np.int32) * scale)
    lo, hi = activation_range(op.options["activation"], y)
    return ctx.render("conv_2d_pixel.c.j2", g=g, describe=g.describe(), input=ctx.arg(op.inputs[0]),
                      output=ctx.arg(op.outputs[0]), weights=ctx.const("weights", words.reshape(-1)),
                      params=ctx.const("params", rq.params()), stride=3 if is_fast else 4, groups=groups, cg=cg,
                      og=g.out_c // groups, steps=steps, k=g.k_h * g.k_w * cg, zp=zp,
                      scratch=ctx.scratch(plan_["scratch_bytes"]), isa=plan_["isa"], fast=is_fast,
                      c_k=2 * y_zp + 1, act_min=lo, act_max=hi, output_offset=y_zp)


# The lanes im2col saves one instruction per 4 inputs and output channel in the dot product and
# costs about 3 more per 4 inputs and pixel in the gather (P and Q instead of two SXTB16): it pays
# for more output channels than this (measured on IC's 16-channel layers: slower; 32: faster).
LANES_MIN_OUT_CHANNELS = 17


def im2col_lanes_ok(w_rows: np.ndarray, folded: np.ndarray) -> bool:
    """Whether the im2col kernel reads its int8 weights in the lanes encoding (kernel_lanes.h): it
    pays (LANES_MIN_OUT_CHANNELS), the lanes of every word fit int16 and |acc| < 2^23 (w_rows:
    [channels, K], folded: the bias with the input zero point folded in)."""
    return len(w_rows) >= LANES_MIN_OUT_CHANNELS and fast.lanes_plan(_padded(w_rows), folded)


def im2col_lanes(w_rows: np.ndarray, folded: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(weight words [channels, steps], accumulator start per channel) of the lanes encoding."""
    padded = _padded(w_rows)
    return fast.lanes_words(padded), fast.lanes_bias(padded, folded)


def _padded(w_rows: np.ndarray) -> np.ndarray:
    rows, k = w_rows.shape
    out = np.zeros((rows, -(-k // 4) * 4), np.int8)
    out[:, :k] = w_rows
    return out
