"""CONV_2D 1x1 with stride 1 and no padding, int8, in portable C (no DSP extension): the "pointwise"
kernel (template conv_2d_pointwise.c.j2). Such a convolution is a FULLY_CONNECTED over the pixels,
4 output channels per inner loop, the weights interleaved per input as FULLY_CONNECTED's portable
rows4 lays them out, the input zero point folded into the bias, TFLM's requantization with SMMLAR's C
equivalent (mc_requant_fast). With the long multiply (Armv7-M, the host: MC_LONG_MULTIPLY) 4 pixels
per step: pixels 0 and 1, and 2 and 3, packed per input word (x0 + x1 * 2^L, lane_bits), both words
of an input side by side in the scratch (mc_pack4_s8), and mc_dot_x4r2_s8i (kernel_portable.h, twice per 4 output channels, 4 sums each) does
two MACs per SMLAL with each weight loaded once for both words (Cortex-M3: 35 instructions per 32
MACs in its loop, 1.35 per MAC with the requantization on KWS, was 1.62); 3 pixels left take a step
of 4 with the last pixel packed again, 1 or 2 one step of 2 (mc_pack2_s8, mc_dot_x2r4_s8i). Without it (Armv6-M) 2 pixels per step, mc_dot_p2r4_s8i on int32 sums,
an odd last pixel with mc_dot_r4_s8i.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.conv_common import bias_tensor, geometry
from microcompiler.ops.fast import packing as fast
from microcompiler.ops.plan import ISA_C, KernelPlan, Variant
from microcompiler.ops.quant import activation_range

POINTWISE = Variant("pointwise", ("kernel_simd.h", "kernel_portable.h"))


def fits(op, graph) -> bool:
    """1x1, stride 1, no padding, output channels in blocks of 4, symmetric weights, TFLM's
    requantization exact with SMMLAR, and every partial sum within int32 (the helpers' signed
    arithmetic): |folded bias| + 128 sum|w| < 2^31."""
    g = geometry(op, graph)
    x, w, y = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
    if (g.k_h, g.k_w, g.pad_h, g.pad_w) != (1, 1, 0, 0) or (g.out_h, g.out_w) != (g.in_h, g.in_w):
        return False
    if g.out_c % 4 or w.quant is None or any(int(z) != 0 for z in w.quant.zero_point):
        return False
    w_rows = w.data.astype(np.int8).reshape(g.out_c, -1)
    rq = fast.requant_setup(x, w, y, bias_tensor(op, graph), w_rows, op)
    bound = np.abs(rq.folded) + 128 * np.abs(w_rows.astype(np.int64)).sum(axis=1)
    return bool(rq.fast and np.all(bound < 2**31))


# The widest lane a packed word x0 + x1 * 2^L holds within int32 (>= -2^31 for int8 x0, x1).
MAX_LANE_BITS = 23


def lane_bits(w_rows: np.ndarray) -> int:
    """The bits L of the low lane of mc_dot_x2r4_s8i's sums: 128 sum|w| < 2^(L - 1) for every row
    (S0 = sum w x0 with int8 x fits L bits signed); 0 where no L <= MAX_LANE_BITS holds."""
    bound = int(128 * np.abs(w_rows.astype(np.int64)).sum(axis=1).max(initial=0))
    bits = bound.bit_length() + 1
    return bits if bits <= MAX_LANE_BITS else 0


def plan(op, graph, long_multiply: bool = True) -> KernelPlan:
    """4 output channels; with the long multiply (Armv7-M, the host) 4 pixels packed two per input
    word into the scratch (2 C words) where lane_bits finds a lane width ("lane"), else 2 pixels
    (and on a core known to lack it, ``long_multiply`` False: "lane" 0, no scratch)."""
    g = geometry(op, graph)
    lane = lane_bits(graph.tensors[op.inputs[1]].data.astype(np.int8).reshape(g.out_c, -1)) if long_multiply else 0
    return KernelPlan.of(
        POINTWISE,
        ISA_C,
        scratch_bytes=8 * g.in_c if lane else 0,
        pixels=2,
        out_channels=4,
        weights="s8",
        extract="interleaved",
        lane=lane,
    )


def layer_values(op, graph, ctx, taps: str) -> dict:
    """What the pointwise and packed templates share: the interleaved weights (``taps`` names a
    row's inputs in their comment), the 9-byte records, the pixel pairs, the activation range, the
    output zero point and the lane width."""
    x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    g = geometry(op, graph)
    w_rows = w.data.astype(np.int8).reshape(g.out_c, -1)
    rq = fast.requant_setup(x, w, y, bias_tensor(op, graph), w_rows, op)
    ctx.note(requant="smmlar")
    lo, hi = activation_range(op.options["activation"], y)
    pixels = g.batches * g.out_h * g.out_w
    return dict(
        input=ctx.arg(op.inputs[0]),
        output=ctx.arg(op.outputs[0]),
        weights=ctx.const(
            "weights",
            fast.interleave_rows4(w_rows),
            comment=f"weights, int8: per block of 4 output channels [{taps}][4 channels]",
        ),
        params=ctx.const(
            "params",
            fast.channel_records9(rq.folded, rq.mult, rq.r),
            comment=f"per output channel [{g.out_c}] {{folded bias, multiplier}} (int32, little-endian) "
            "and the right shift (int8): 9 bytes",
        ),
        record=fast.RECORD9,
        OC=g.out_c,
        pairs=pixels // 2,
        odd=pixels % 2,
        act_min=lo,
        act_max=hi,
        output_offset=int(y.quant.zero_point[0]),
        lane=ctx.plan.knob("lane", 0),
    )


def emit(op, graph, ctx) -> str:
    g = geometry(op, graph)
    values = layer_values(op, graph, ctx, f"{g.in_c} inputs")
    return ctx.render(
        "conv_2d_pointwise.c.j2",
        describe=g.describe(),
        C=g.in_c,
        scratch=ctx.scratch(ctx.plan.scratch) if values["lane"] else "",
        quads=(2 * values["pairs"] + values["odd"]) // 4,
        rest=(2 * values["pairs"] + values["odd"]) % 4,
        **values,
    )
