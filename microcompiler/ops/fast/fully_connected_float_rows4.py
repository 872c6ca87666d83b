"""FULLY_CONNECTED, float32, constant weights: the "float-rows4" fast kernel (template
fully_connected_float_rows4.c.j2) for cores with an FPU: 4 output rows per inner loop, their
weights interleaved input by input at compile time (kernel_float.h mc_f32_taps_1x4: one load of
the input, four multiply-adds), the rows left over one at a time. Every output is summed in TFLM's
order (input 0, 1, ...; bias last), as ops/fast/conv_2d_float_blocks.py. The plan is
FullyConnected.kernel_plan.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.fast.conv_2d_float_blocks import BLOCK_CHANNELS, FLOAT_HEADERS, float_isa, interleave_rows
from microcompiler.ops.plan import KernelPlan, Variant
from microcompiler.ops.quant import c_float, float_activation_range

FLOAT_ROWS4 = Variant("float-rows4", FLOAT_HEADERS)


def plan(features) -> KernelPlan:
    return KernelPlan.of(FLOAT_ROWS4, float_isa(features), scratch_bytes=0, rows=BLOCK_CHANNELS)


def emit_float_rows4(op, graph, ctx, dims: tuple[int, int, int]) -> str:
    """``dims``: (batches, output rows, depth)."""
    batches, out_depth, depth = dims
    rows = ctx.tensor(op.inputs[1]).data.astype(np.float32).reshape(out_depth, depth)
    nb, tail = out_depth // BLOCK_CHANNELS, out_depth % BLOCK_CHANNELS
    weights = ctx.const(
        "weights",
        interleave_rows(rows),
        comment=(
            f"weights: {nb} blocks of {BLOCK_CHANNELS} output rows interleaved input by input [{depth}]"
            f"[{BLOCK_CHANNELS}]" + (f", then {tail} rows [{depth}]" if tail else "")
        ),
    )
    has_bias = len(op.inputs) > 2 and op.inputs[2] >= 0
    lo, hi = float_activation_range(op.options["activation"])
    return ctx.render(
        "fully_connected_float_rows4.c.j2",
        batches=batches,
        out_depth=out_depth,
        depth=depth,
        input=ctx.arg(op.inputs[0]),
        output=ctx.arg(op.outputs[0]),
        weights=weights,
        bias=ctx.arg(op.inputs[2]) if has_bias else None,
        nb=nb,
        tail=tail,
        OB=BLOCK_CHANNELS,
        act_min=c_float(lo),
        act_max=c_float(hi),
        isa=ctx.plan.isa,
    )
