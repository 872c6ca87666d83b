"""DEPTHWISE_CONV_2D, int16x8 (int16 activations, int8 weights): the "int16-pairs" fast kernel
(template depthwise_conv_2d_s16.c.j2). Per output pixel the receptive field is gathered into an
int16 row [tap][channel] (zeros outside the image), then the output channels in pairs with the
taps unrolled, the weights stored as int16 pairs per tap:

* depth multiplier 1 ("pairs": "channels"): channels c, c + 1 are one word of the row: LDR + LDR +
  SMLABB + SMLATT per 2 MACs; an odd last channel alone;
* even depth multiplier ("multiplier"): the two output channels of a pair read the same input:
  LDRSH + LDR + SMLABB + SMLABT per 2 MACs;
* odd depth multiplier above 1 ("none"): one output channel at a time.

TFLM sums in int64; the kernel's int32 sums are exact where 2^15 * (sum of a channel's |weights|)
fits int32 (any kernel up to 511 taps; plan() keeps the reference beyond). The plan is
DepthwiseConv2D.kernel_plan in ops/depthwise_conv_2d.py.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.fast import s16
from microcompiler.ops.plan import KernelPlan, Variant, dsp_or_c
from microcompiler.ops.quant import activation_range, conv_multipliers

INT16_PAIRS = Variant("int16-pairs")

UNROLL_MAX_TAPS = 16  # taps written out one per line up to this kernel size; above, a loop over the
# kernel rows with a row's taps written out (up to this width), else a loop over the taps


def channel_rows(w) -> np.ndarray:
    """The weights [output channels, taps] of the [1, kernel_h, kernel_w, output channels] tensor."""
    return w.data.astype(np.int8).reshape(-1, w.shape[3]).T


def plan(g, multiplier: int, w, features) -> KernelPlan | None:
    """The int16-pairs plan, or None where one int32 sum could overflow (the reference then)."""
    if int(np.abs(channel_rows(w).astype(np.int64)).sum(axis=1).max()) * s16.MAX_ABS_X > s16.INT32_MAX:
        return None
    pairs = "channels" if multiplier == 1 else ("multiplier" if multiplier % 2 == 0 else "none")
    return KernelPlan.of(INT16_PAIRS, dsp_or_c(features), scratch_bytes=2 * g.k_h * g.k_w * g.in_c, pairs=pairs)


def pack(rows: np.ndarray, pairs: str) -> np.ndarray:
    """Words [group][tap] of int16 pairs: output channels (2p, 2p + 1) per group in the pair modes
    (an odd last channel with 0 in the high half), every channel alone (high half 0) otherwise."""
    n, taps = rows.shape
    r = rows.astype(np.int64)
    paired = n // 2 * 2 if pairs != "none" else 0
    lo = np.concatenate([r[0:paired:2], r[paired:]])
    hi = np.concatenate([r[1:paired:2], np.zeros((n - paired, taps), np.int64)])
    words = (lo & 0xFFFF) | ((hi & 0xFFFF) << 16)
    return ((words + 2**31) % 2**32 - 2**31).astype(np.int32).reshape(-1)


def emit(op, ctx, plan_: KernelPlan, g, bias, multiplier: int) -> str:
    x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    rows = channel_rows(w)
    mult, shift = conv_multipliers(x, w, y, g.out_c)
    lo, hi = activation_range(op.options["activation"], y)
    e = s16.epilogue(ctx, bias, mult, shift, lo, hi, rows)
    taps = g.k_h * g.k_w
    layout = {
        "channels": "per pair of channels (c, c + 1)",
        "multiplier": "per pair of output channels of one input",
        "none": "per output channel (high half 0)",
    }[plan_.knob("pairs")]
    weights = ctx.const(
        "weights",
        pack(rows, plan_.knob("pairs")),
        comment=(
            f"weights [{g.out_c} output channels][{taps} taps (ky, kx)] as int16 pairs {layout}, the taps of a pair "
            "consecutive"
        ),
    )
    return ctx.render(
        "depthwise_conv_2d_s16.c.j2",
        g=g,
        describe=g.describe(),
        input=ctx.arg(op.inputs[0]),
        output=ctx.arg(op.outputs[0]),
        weights=weights,
        e=e,
        taps=taps,
        m=multiplier,
        pairs=plan_.knob("pairs"),
        unroll=taps <= UNROLL_MAX_TAPS,
        row_unroll=1 < g.k_w <= UNROLL_MAX_TAPS,
        scratch=ctx.scratch(plan_.scratch),
        isa=plan_.isa,
    )
