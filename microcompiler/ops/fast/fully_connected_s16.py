"""FULLY_CONNECTED, int16x8 (int16 activations, int8 weights, zero points 0): the "int16-rows4" fast
kernel (template fully_connected_s16.c.j2). The input row is read as int16 pairs as it lies in
memory; 4 output rows per pass (mc_dot4_s16: weights stored as int16 pairs interleaved for the 4
rows, 2 loads + 8 SMLAD per 16 MACs), the depth % 4 taps after the loop, the output rows % 4 one
by one. The 32-bit partial sums are proven exact and added into int64 (ops/fast/s16.py): TFLM's
int64 accumulation bit for bit. The plan is FullyConnected.kernel_plan in ops/fully_connected.py.

That kernel needs the weights as int16 pairs in flash, twice the model file's int8 weights, and a
fully connected layer uses each weight once per inference (no widened block to share, unlike
CONV_2D's int16-blocks). The default, "int16-rows4-s8" (template fully_connected_s16_s8.c.j2), keeps
them int8 and widens them in registers: each word holds 4 taps of a row stored (w0, w2, w1, w3) at
compile time (s16.pack_rows_s8), so SXTB16 gives the pair (w0, w1) and SXTB16 ROR #8 (w2, w3), each
SMLAD'd with an activation pair (mc_dot4_s16_s8: 2 loads of weights, 8 SXTB16 and 8 SMLAD per
16 MACs; the reordering spares the PKHBT / PKHTB that CMSIS-NN's read_and_pad spends on the order).
The depth % 4 taps are one more (zero-padded) word per row. The "weights": "s16" knob (tuning) keeps
int16-rows4.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.fast import s16
from microcompiler.ops.plan import KernelPlan, Variant, dsp_or_c
from microcompiler.ops.quant import activation_range

INT16_ROWS4 = Variant("int16-rows4")
INT16_ROWS4_S8 = Variant("int16-rows4-s8")


def applies(x, w, y) -> bool:
    """int16x8 with every zero point 0 (what the kernel assumes; TFLM's int16 converter writes 0)."""
    return (
        x.dtype == "int16"
        and w.dtype == "int8"
        and y.dtype == "int16"
        and w.quant is not None
        and all(int(z) == 0 for z in w.quant.zero_point)
        and int(x.quant.zero_point[0]) == 0
        and int(y.quant.zero_point[0]) == 0
    )


def plan(features, weights: str | None = None) -> KernelPlan:
    """int16-rows4-s8 (int8 weights in flash, widened in registers) unless ``weights`` (the tuning
    knob) is "s16": int16-rows4 (int16 pairs in flash, twice the bytes, fewer instructions)."""
    if weights == "s16":
        return KernelPlan.of(INT16_ROWS4, dsp_or_c(features), scratch_bytes=0, rows=4, weights="s16")
    return KernelPlan.of(INT16_ROWS4_S8, dsp_or_c(features), scratch_bytes=0, rows=4, weights="s8")


def emit(op, ctx, plan_: KernelPlan, dims, multipliers, bias) -> str:
    """int16-rows4 (the weights as int16 pairs, s16.pack_rows) or int16-rows4-s8 (int8 words,
    s16.pack_rows_s8, 4 taps per step); the 32-bit runs of s16.chunk_words."""
    batches, out_depth, depth = dims
    y = ctx.tensor(op.outputs[0])
    w_rows = ctx.tensor(op.inputs[1]).data.astype(np.int8).reshape(out_depth, depth)
    main = depth // 4 * 2
    lo, hi = activation_range(op.options["activation"], y)
    mult, shift = multipliers
    e = s16.epilogue(ctx, bias, mult, shift, lo, hi, w_rows)
    chunk = s16.chunk_words(w_rows, main, e.wide) if main else 0
    ctx.note(chunk=2 * chunk if chunk < main else 0)
    if plan_.variant == INT16_ROWS4_S8:
        template, packed, layout = (
            "fully_connected_s16_s8.c.j2",
            s16.pack_rows_s8(w_rows),
            "zero-padded to a multiple of 4] as int8, 4 per word stored (w0, w2, w1, w3) for SXTB16, the rows in "
            "blocks of 4 interleaved per word",
        )
    else:
        template, packed, layout = (
            "fully_connected_s16.c.j2",
            s16.pack_rows(w_rows, -(-depth // 2)),
            "zero-padded to even] as int16 pairs (low half first), the rows in blocks of 4 interleaved per pair",
        )
    weights = ctx.const(
        "weights", packed, comment=f"weights [{out_depth} rows][{depth} inputs, {layout}, then the rows % 4"
    )
    return ctx.render(
        template,
        input=ctx.arg(op.inputs[0]),
        output=ctx.arg(op.outputs[0]),
        weights=weights,
        e=e,
        batches=batches,
        out_depth=out_depth,
        depth=depth,
        main=main,
        tail=depth % 4,
        chunk=chunk,
        full=out_depth // 4 * 4,
        isa=plan_.isa,
    )
