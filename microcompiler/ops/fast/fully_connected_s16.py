"""FULLY_CONNECTED, int16x8 (int16 activations, int8 weights, zero points 0): the "int16-rows4" fast
kernel (template fully_connected_s16.c.j2). The input row is read as int16 pairs as it lies in
memory; 4 output rows per pass (mc_dot4_s16: weights stored as int16 pairs interleaved for the 4
rows, 2 loads + 8 SMLAD per 16 MACs), the depth % 4 taps after the loop, the output rows % 4 one
by one. The 32-bit partial sums are proven exact and added into int64 (ops/fast/s16.py): TFLM's
int64 accumulation bit for bit. The plan is FullyConnected.kernel_plan in ops/fully_connected.py.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.fast import s16
from microcompiler.ops.plan import KernelPlan, Variant, dsp_or_c
from microcompiler.ops.quant import activation_range

INT16_ROWS4 = Variant("int16-rows4")


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


def plan(features) -> KernelPlan:
    return KernelPlan.of(INT16_ROWS4, dsp_or_c(features), scratch_bytes=0, rows=4)


def emit(op, ctx, plan_: KernelPlan, dims, multipliers, bias) -> str:
    batches, out_depth, depth = dims
    y = ctx.tensor(op.outputs[0])
    w_rows = ctx.tensor(op.inputs[1]).data.astype(np.int8).reshape(out_depth, depth)
    main = depth // 4 * 2
    lo, hi = activation_range(op.options["activation"], y)
    mult, shift = multipliers
    e = s16.epilogue(ctx, bias, mult, shift, lo, hi, w_rows)
    chunk = s16.chunk_words(w_rows, main, e.wide) if main else 0
    ctx.note(chunk=2 * chunk if chunk < main else 0)
    weights = ctx.const(
        "weights",
        s16.pack_rows(w_rows, -(-depth // 2)),
        comment=(
            f"weights [{out_depth} rows][{depth} inputs, zero-padded to even] as int16 pairs (low half first), the rows "
            "in blocks of 4 interleaved per pair, then the rows % 4"
        ),
    )
    return ctx.render(
        "fully_connected_s16.c.j2",
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
