"""DEPTHWISE_CONV_2D, int8, any depth multiplier, stride and dilation, in portable C (no DSP
extension): the "rows" kernel (template depthwise_conv_2d_rows.c.j2). One channel at a time, the
output rows in blocks of up to 4 pixels: per kernel row each input of the block is loaded once for
every tap that reads it and each weight once for the block (Cortex-M3: 4 pixels of a 3x3 kernel take
6 LDRSB of inputs, 3 of weights and 12 MLA per kernel row with stride 1, 1.75 instructions per MAC). Padding
columns are known when generating (the blocks at the borders are written out), padding rows add the
input zero point times the kernel row's weights; the input zero point is folded into the bias. Weights
stay int8 in flash, [output channel][ky][kx]. Not for a layer written in place or reading a channel
table (planes).
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.conv_common import bias_tensor, geometry
from microcompiler.ops.fast import packing as fast
from microcompiler.ops.plan import ISA_C, KernelPlan, Variant
from microcompiler.ops.quant import activation_range, conv_multipliers

ROWS = Variant("rows", ("kernel_simd.h",))
BLOCK = 4  # output pixels per block
MAX_BLOCK = 6  # a row up to this wide is one block (KWS: 5)
STATIC_ROW_PIXELS = 8  # rows up to this wide are written out block by block (no loop over blocks)
# Kernels up to this tall have their rows written out for the output rows whose taps are all inside
# (no test); taller ones keep the loop over kernel rows (micro_speech's 10x8: 7 KB of flash otherwise).
MAX_UNROLLED_ROWS = 3


def _taps(op, graph) -> np.ndarray:
    g = geometry(op, graph)
    return graph.tensors[op.inputs[1]].data.astype(np.int8).reshape(g.k_h * g.k_w, g.out_c)  # [tap][channel]


def _requant(op, graph):
    x, w, y = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
    g = geometry(op, graph)
    w_taps = _taps(op, graph)
    bias = bias_tensor(op, graph)
    b = bias.data.astype(np.int64) if bias is not None else np.zeros(g.out_c, np.int64)
    folded = b - int(x.quant.zero_point[0]) * w_taps.astype(np.int64).sum(axis=0)
    mult, shift = conv_multipliers(x, w, y, g.out_c)
    is_fast, _, r = fast.requant_table(mult, shift, int(y.quant.zero_point[0]), fast.acc_bounds(b, w_taps.T))
    bound = np.abs(folded) + 128 * np.abs(w_taps.astype(np.int64)).sum(axis=0)
    return is_fast and bool(np.all(bound < 2**31)), folded, mult, r


def fits(op, graph) -> bool:
    """TFLM's requantization exact with SMMLAR and every partial sum within int32 (|folded bias| +
    128 sum|w| < 2^31); output channel c reads input channel c / depth_multiplier."""
    g = geometry(op, graph)
    if g.out_c != g.in_c * op.options.get("depth_multiplier", 1):
        return False
    return _requant(op, graph)[0]


def plan() -> KernelPlan:
    return KernelPlan.of(ROWS, ISA_C, scratch_bytes=0, channels=1, pixels=BLOCK, weights="s8")


def blocks(g) -> list[dict]:
    """The blocks of an output row: {"ox": first column (None: the loop over the interior), "n":
    pixels, "cols": per input column of the block, its offset from the block's first input column
    (None: a padding column)}; the loop's block comes with "count" (blocks it runs)."""
    lo = -(-g.pad_w // g.stride_w)  # first column whose taps are all inside
    hi = (g.in_w - 1 - (g.k_w - 1) * g.dil_w + g.pad_w) // g.stride_w  # last one
    out: list[dict] = []

    def span(n: int) -> int:  # input columns of a block of n pixels
        return (n - 1) * g.stride_w + (g.k_w - 1) * g.dil_w + 1

    def static(ox0: int, n: int) -> None:
        cols = [ox0 * g.stride_w - g.pad_w + i for i in range(span(n))]
        out.append({"ox": ox0, "n": n, "cols": [c if 0 <= c < g.in_w else None for c in cols]})

    ox = 0
    if g.out_w <= MAX_BLOCK:  # one block for the row
        static(0, g.out_w)
        return out
    if g.out_w > STATIC_ROW_PIXELS:
        while ox < lo:
            static(ox, min(BLOCK, g.out_w - ox))
            ox += BLOCK
        count = max(0, (hi - ox + 1) // BLOCK)
        if count:
            out.append({"ox": None, "start": ox, "n": BLOCK, "count": count, "cols": list(range(span(BLOCK)))})
            ox += BLOCK * count
    while ox < g.out_w:
        static(ox, min(BLOCK, g.out_w - ox))
        ox += BLOCK
    return out


def emit(op, graph, ctx, plan) -> str:
    return ctx.render("depthwise_conv_2d_rows.c.j2", **values(op, graph, ctx))


def values(op, graph, ctx) -> dict:
    """The template's values (its weights and records added to the layer's arrays); also the
    Cortex-M0 branch of depthwise_conv_2d_packed_rows.py."""
    x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
    g = geometry(op, graph)
    _, folded, mult, r = _requant(op, graph)
    ctx.note(requant="smmlar")
    lo, hi = activation_range(op.options["activation"], y)
    return dict(
        g=g,
        describe=g.describe(),
        input=ctx.arg(op.inputs[0]),
        output=ctx.arg(op.outputs[0]),
        weights=ctx.const(
            "weights",
            _taps(op, graph).T.reshape(-1),
            comment=f"weights, int8: per channel [{g.out_c}] the taps ({g.k_h}x{g.k_w})",
        ),
        params=ctx.const(
            "params",
            fast.channel_records9(folded, mult, r),
            comment=f"per channel [{g.out_c}] {{folded bias, multiplier}} (int32, little-endian) and the "
            "right shift (int8): 9 bytes",
        ),
        record=fast.RECORD9,
        mult=g.out_c // g.in_c,
        blocks=blocks(g),
        rows_inside=[
            max(0, -(-g.pad_h // g.stride_h)),
            min(g.out_h - 1, (g.in_h - 1 - (g.k_h - 1) * g.dil_h + g.pad_h) // g.stride_h),
        ],
        loop_blocks=any(b["ox"] is None for b in blocks(g)),
        unroll_rows=g.k_h <= MAX_UNROLLED_ROWS,
        input_offset=int(x.quant.zero_point[0]),
        act_min=lo,
        act_max=hi,
        output_offset=int(y.quant.zero_point[0]),
    )
