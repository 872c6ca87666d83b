"""SVDF, int8 input with int16 or int8 activation state: the "rows4" fast kernel for cores with the
DSP extension (template svdf_rows4.c.j2; the plan is Svdf.plan in ops/svdf.py).

Bit-exact with TFLM's EvalIntegerSvdfReference, with its sums taken in another order (int32
arithmetic wraps alike in any order):

* the feature matmul is FULLY_CONNECTED's rows4 inner loop (``mc_dot_r4``: 4 filters per step, the
  raw int8 input sign-extended in pairs with SXTB16, int16 weight pairs packed at compile time, 8
  SMLADs per 16 MACs); the input zero point is folded into a per-filter start value
  ``-input_zp * sum(weights_feature row)``;
* the state's shift by one step (TFLM moves the whole state one element to the left) happens inside
  the time loop: the feature matmul parks each filter's new activation in the first (oldest) step
  of its memory, and the time loop reads every memory word once, multiplies it with the time weights
  (two MACs per SMLAD, on int16 pairs, or on int8 words sign-extended with SXTB16), and stores it one
  step to the left, the new activation last: one store per word instead of a memmove of the state;
* the state zero point and the bias fold into a per-unit start value
  ``bias - state_zp * sum(the unit's time weights)``;
* both requantizations are ``mc_requant_fast`` (SMMLAR) where the accumulators provably stay below
  2^30 (``packing.requant_table``), else ``mc_requantize`` (TFLM's double rounding).

Without the DSP extension the same code runs on kernel_simd.h's portable emulation (the host tests
run it so, under the sanitizers); the plan only picks it on DSP cores, the reference loop elsewhere.

"mve-rows4" (Helium cores): the same kernel with the feature matmul on Helium, the LSTM's
``mc_mve_dot_1x4`` (VLDRB + VMLADAVA.S8, 16 MACs per instruction and filter) over the weights as int8
blocks of 4 filters x 16 inputs (``mve.pack_blocks``), the input copied into a zero-padded row of the
kernel scratch when its length is not a multiple of 16; the time loop stays the SMLAD one.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.fast import mve
from microcompiler.ops.fast import packing as fast
from microcompiler.ops.plan import Variant
from microcompiler.ops.quant import INT_RANGES

ROWS4 = Variant("rows4", ("kernel_simd.h",))  # the feature matmul 4 filters per SMLAD step
MVE_ROWS4 = Variant("mve-rows4", ("kernel_simd.h", "kernel_mve_matmul.h"))  # ... per VMLADAVA.S8 chunk


def mve_scratch_bytes(n_input: int) -> int:
    """The zero-padded input row of "mve-rows4" (none when the input length is a multiple of 16)."""
    return mve.steps_of(n_input) * mve.CHUNK if n_input % mve.CHUNK else 0


def emit_svdf_rows4(
    op, graph, ctx, dims: tuple[int, ...], m1: tuple[int, int], m2: tuple[int, int], helium: bool = False
) -> str:
    """``dims``: (batch, n_input, n_filter, n_memory, rank, n_unit); ``m1``/``m2``: the feature and
    output requantizations (multiplier, shift); ``helium``: "mve-rows4"."""
    batch, n_input, n_filter, n_memory, rank, n_unit = dims
    x, wf_t, wt_t, bias_t, state = (ctx.tensor(i) for i in op.inputs[:5])
    y = ctx.tensor(op.outputs[0])
    wf = wf_t.data.astype(np.int8).reshape(n_filter, n_input)
    wt = wt_t.data.astype(np.int64).reshape(n_unit, rank * n_memory)
    input_zp, state_zp = int(x.quant.zero_point[0]), int(state.quant.zero_point[0])
    steps, input_tail = n_input // 4, n_input % 4
    start = fast.wrap32(-input_zp * wf.astype(np.int64).sum(axis=1))
    feature_start = ctx.const(
        "feature_start",
        np.concatenate([start, np.zeros(-n_filter % 4 if helium else 0, start.dtype)]),
        comment=f"SVDF operator {op.index}: per filter, -input_zero_point * sum of its feature weights "
        f"[{n_filter}] (the input zero point folded in)" + (", zero-padded to a multiple of 4" if helium else ""),
    )
    time_start = ctx.const(
        "time_start",
        fast.wrap32(bias_t.data.astype(np.int64).reshape(-1) - state_zp * wt.sum(axis=1)),
        comment=f"SVDF operator {op.index}: per unit, bias - state_zero_point * sum of its {rank} filters' "
        f"time weights [{n_unit}]",
    )
    if helium:
        steps, input_tail = mve.steps_of(n_input), 0
        packed = ctx.const(
            "feature_blocks",
            mve.pack_blocks(wf),
            comment=f"SVDF operator {op.index}: feature weights for mc_mve_dot_1x4: per block of 4 filters and "
            "chunk of 16 inputs the 16 int8 of filters 0, 1, 2, 3 (zero-padded)",
        )
        tail = None
        row = f"(int8_t*){ctx.scratch(mve_scratch_bytes(n_input))}" if mve_scratch_bytes(n_input) else None
    else:
        row = None
        packed = (
            ctx.const(
                "feature_pairs",
                fast.pack_s16_rows4(wf),
                comment=f"SVDF operator {op.index}: feature weights for mc_dot_r4: per block of 4 filters and "
                "group of 4 inputs k0..k3 the int16 pairs (k0,k2) (k1,k3) of filters 0..3, then the filters "
                "left over",
            )
            if steps
            else None
        )
        tail = (
            ctx.const(
                "feature_tail",
                np.ascontiguousarray(wf[:, 4 * steps :]),
                comment=f"SVDF operator {op.index}: the last {input_tail} feature weights of each filter "
                f"[{n_filter}][{input_tail}]",
            )
            if input_tail
            else None
        )
    lo, hi = INT_RANGES[state.dtype]
    group = 2 if state.dtype == "int16" else 4  # elements per SMLAD pair (int16) or SXTB16 word (int8)
    # mc_requant_fast (SMMLAR, 4 instructions) where the accumulators provably stay below 2^30:
    # |sum w (x - input_zp)| <= 255 sum |w|, |bias + sum wt (s - state_zp)| <= |bias| + max|s - zp| sum |wt|
    feature_bound = fast.acc_bounds(None, wf).max(keepdims=True)
    time_bound = fast.acc_bounds(
        bias_t.data.astype(np.int64).reshape(-1), wt, max(abs(lo - state_zp), abs(hi - state_zp))
    ).max(keepdims=True)
    fast1, c1, r1 = fast.requant_table(np.array([m1[0]]), np.array([m1[1]]), 0, feature_bound)
    fast2, c2, r2 = fast.requant_table(np.array([m2[0]]), np.array([m2[1]]), int(y.quant.zero_point[0]), time_bound)
    ctx.note(
        requant="smmlar" if fast1 and fast2 else "smmlar-feature" if fast1 else "smmlar-time" if fast2 else "reference"
    )
    return ctx.render(
        "svdf_rows4.c.j2",
        batch=batch,
        n_input=n_input,
        n_filter=n_filter,
        n_memory=n_memory,
        rank=rank,
        n_unit=n_unit,
        steps=steps,
        input_tail=input_tail,
        blocks=n_filter // 4,
        filters_tail=n_filter % 4,
        group=group,
        s16=state.dtype == "int16",
        state_t=f"{state.dtype}_t",
        state_min=lo,
        state_max=hi,
        state_zp=state_zp,
        output_zp=int(y.quant.zero_point[0]),
        m1=m1,
        m2=m2,
        fast1=(int(c1[0]), int(r1[0])) if fast1 else None,
        fast2=(int(c2[0]), int(r2[0])) if fast2 else None,
        input=ctx.arg(op.inputs[0]),
        weights_time=ctx.arg(op.inputs[2]),
        state=ctx.arg(op.inputs[4]),
        output=ctx.arg(op.outputs[0]),
        weights=packed,
        tail_weights=tail,
        feature_start=feature_start,
        time_start=time_start,
        helium=helium,
        padded_row=row,
    )
