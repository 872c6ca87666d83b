"""FULLY_CONNECTED, int8, symmetric weights: the "rows4" fast kernel (template
fully_connected_rows4.c.j2): 4 output rows per inner loop, the input zero point folded into the
bias; weights as int16 pairs (SMLAD), int8 words (SXTB16) or the "lanes" encoding (the input
expanded once into the scratch, optionally in chunks). The plan is FullyConnected.kernel_plan.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from microcompiler.ops.fast import packing as fast
from microcompiler.ops.plan import Variant
from microcompiler.ops.quant import activation_range
from microcompiler.ops.requant_float import ort_requant_table

ROWS4 = Variant("rows4", ("kernel_simd.h",))


def emit_rows4(op, graph, ctx, plan, dims: tuple[int, int, int], multipliers) -> str:
    """``dims``: (batches, output rows, depth); ``multipliers``: per-row (or one) (q, shift) arrays."""
    x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    batches, out_depth, depth = dims
    w_rows = w.data.astype(np.int8).reshape(out_depth, depth)
    has_bias = len(op.inputs) > 2 and op.inputs[2] >= 0
    b = graph.tensors[op.inputs[2]].data.astype(np.int64).reshape(-1) if has_bias else np.zeros(out_depth, np.int64)
    zp = int(x.quant.zero_point[0])
    folded = b - zp * w_rows.astype(np.int64).sum(axis=1)
    mult, shift = multipliers
    y_zp = int(y.quant.zero_point[0])
    bounds = fast.acc_bounds(b, w_rows)
    per_channel = len(mult) > 1
    is_fast, c, r = fast.requant_table(mult, shift, y_zp, bounds if per_channel else bounds.max(keepdims=True))
    ort = ort_requant_table(op, x, w, y, out_depth)
    if ort is not None:  # ONNX Runtime's requantization: the reference epilogue, float scales as bits
        is_fast, mult, c, r = ort
        per_channel = len(set(mult.tolist())) > 1
    ctx.note(requant="smmlar" if is_fast else "reference")
    if per_channel:  # a multiplier and shift per row: loaded per output (its own cost-model key)
        ctx.note(multipliers="per-row")
    lo, hi = activation_range(op.options["activation"], y)
    steps, depth_tail = depth // 4, depth % 4
    lanes = plan.knob("extract") == "lanes"
    chunk_steps = plan.knob("chunk", 0) // 4 or steps
    # the requantization on the 256-scaled sums: mc_fc_l128 (128-input passes) or MC_FC_L8 (8 inputs)
    # both on the inputs swapped in pairs (x1 x0 x3 x2: P = SXTB16, Q = EOR, see kernel_fc_lanes.h), the
    # weights with them, whose lanes must fit int16 too
    swapped = w_rows.reshape(out_depth, -1, 2)[:, :, ::-1].reshape(out_depth, -1) if not depth % 4 else w_rows
    fits = (
        lanes
        and batches == 1
        and not depth_tail
        and lanes_requant_fits(is_fast, per_channel, ort, c, r, (lo, hi))
        and fast.lanes_words(swapped) is not None
    )
    l128 = fits and not out_depth % 4 and not steps % L128_STEPS and chunk_steps == L128_STEPS
    l8 = fits and depth == L8_DEPTH
    if l8:  # MC_FC_L8: per row its start value and 2 lanes words
        ctx.note(routine="l8")  # its own cost-model key, as mc_fc_l128's
        # its expanded input stays in registers: none of the lanes plan's scratch (nor its array)
        ctx.plan = dataclasses.replace(ctx.plan, scratch_bytes=0)
        weights = ctx.const(
            "weights",
            np.concatenate([fast.lanes_bias(swapped, folded).reshape(-1, 1), fast.lanes_words(swapped)], axis=1)
            .reshape(-1)
            .astype(np.int32),
            comment="per row its start value (256 * folded bias - 127 * sum(w1 + w3)) and its 2 lanes words "
            "(w1 + 256 w0, w3 + 256 w2)",
        )
        bias = None
    elif l128:
        ctx.note(routine="l128")  # its own cost-model key (ops/cost_model.py KEY_KNOBS)
        words, symbols = pack_l128(fast.pack_lanes_rows4(swapped, chunk_steps), fast.lanes_bias(swapped, folded), steps)
        weights = ctx.const(
            "weights",
            words,
            comment="weights in lanes words (w1 + 256 w0, w3 + 256 w2): per chunk of 128 inputs and block of 4 "
            "rows the words of rows 0..3 per group of 4 inputs; in the first chunk each block's record before "
            "them (its 4 start values 256 * folded bias - 127 * sum(w1 + w3), MC_FC_L128_GO: the body's "
            "address) and a terminator record after the last block (MC_FC_L128_DONE or MC_FC_L128_NEXT)",
            symbols=symbols,
        )
        bias = None
    elif lanes:
        weights = ctx.const(
            "weights",
            fast.pack_lanes_rows4(w_rows, chunk_steps),
            comment=f"weights in lanes words (w0 + 256 w1, w2 + 256 w3): per block of 4 rows and "
            f"group of 4 inputs the words of rows 0..3, then the {out_depth % 4} rows left over"
            + (f"; in chunks of {4 * chunk_steps} inputs" if chunk_steps < steps else ""),
        )
        bias = ctx.const(
            "bias",
            fast.lanes_bias(w_rows, folded),
            comment=f"accumulator start per row [{out_depth}]: 256 * folded bias - 127 * sum(w0 + w2)",
        )
    else:
        interleaved = plan.knob("extract") == "interleaved"
        pairs = plan.knob("extract") == "pairs"
        pair_rows = None
        if plan.knob("extract") == "pairs-u8":  # 8 rows per pass over the input offset by 128
            words = fast.pack_pairs_u_rows8(w_rows)
            folded = folded - 128 * w_rows.astype(np.int64).sum(axis=1)  # the start: - (zero point + 128) sum w
        elif pairs:
            words, rest = fast.pack_pairs_rows4(w_rows)
            pair_rows = (
                ctx.const(
                    "tail_rows",
                    rest,
                    comment=f"the {out_depth % 4} rows left over [{out_depth % 4}][{depth}], int8",
                )
                if out_depth % 4
                else None
            )
        weights = (
            ctx.const(
                "weights",
                words,
                "uint32_t",
                comment=f"weights, int8: per block of 4 rows [{depth} inputs] one word of the 4 rows' weights, "
                "bytes (w0 ^ 0x80, w3, w2 ^ 0x80, w1) from the lowest",
            )
            if pairs and out_depth >= 4
            else None
            if pairs
            else ctx.const(
                "weights",
                words,
                "uint32_t",
                comment=f"weights, int8: per block of 8 rows [{depth} inputs] the words of rows 0..3 and 4..7, "
                "bytes (w0, w1, w2, w3) ^ 0x80 from the lowest (w + 128, unsigned)",
            )
            if plan.knob("extract") == "pairs-u8"
            else ctx.const(
                "weights",
                fast.interleave_rows4(w_rows),
                comment=f"weights, int8: per block of 4 rows [{depth} inputs][4 rows], then the "
                f"{out_depth % 4} rows left over [{depth} inputs]",
            )
            if interleaved
            else ctx.const("weights", w_rows, comment=f"weights [{out_depth} rows][{depth} inputs], int8")
            if plan.knob("weights") == "s8"
            else ctx.const(
                "weights",
                fast.pack_s16_rows4(w_rows),
                comment="weights: per block of 4 rows and group of 4 inputs k0..k3 the int16 pairs "
                "(k0,k2) (k1,k3) of rows 0..3, then the rows left over",
            )
            if steps
            else None
        )
        bias = ctx.const(
            "bias",
            fast.wrap32(folded),
            comment=f"bias per row [{out_depth}] with the input zero point"
            + (" + 128 (the input offset in place)" if plan.knob("extract") == "pairs-u8" else "")
            + " folded in",
        )
    values = dict(
        batches=batches,
        out_depth=out_depth,
        depth=depth,
        steps=steps,
        depth_tail=depth_tail,
        blocks=out_depth // 4,
        rows_tail=out_depth % 4,
        input=ctx.arg(op.inputs[0]),
        output=ctx.arg(op.outputs[0]),
        bias=bias,
        lanes=lanes,
        chunk_steps=chunk_steps,
        chunks=-(-steps // chunk_steps) if steps else 0,
        scratch=ctx.scratch(ctx.plan.scratch) if (lanes and not l8) or plan.knob("lane", 0) else None,
        lane=plan.knob("lane", 0),
        s16=plan.knob("weights") == "s16" or lanes,
        sxtb16=plan.knob("extract") == "sxtb16",
        interleaved=plan.knob("extract") in ("interleaved", "pairs", "pairs-u8"),
        pairs_u8=plan.knob("extract") == "pairs-u8",
        pairs=plan.knob("extract") == "pairs",
        tail_rows=pair_rows if lanes is False and plan.knob("extract") == "pairs" else None,
        weights=weights,
        tail_weights=(
            ctx.const(
                "tail_weights",
                w_rows[:, steps * 4 :].copy(),
                comment=f"the last {depth_tail} weights of each row [{out_depth}][{depth_tail}], int8",
            )
            if depth_tail and (plan.knob("weights") == "s16" or lanes)
            else None
        ),
        fast=is_fast,
        act_min=lo,
        act_max=hi,
        output_offset=y_zp,
        per_channel=per_channel,
        # lanes without depth tail, fast requantization: 256 * acc >> 7 = 2 * acc (mc_requant_fast2)
        halve=lanes and is_fast and not depth_tail,
        l128=l128,
        l8=l8,
    )
    # one record for a shared whole-layer kernel (kernel_portable_fc.h's mc_fc_r8_u8p, mc_fc_r4_s8p):
    # per-tensor fast requantization, no clamp but int8's, one batch row, whole row blocks, pairs-u8
    # within one pass of whole groups of 8 inputs
    values["layer_fn"] = (
        not per_channel
        and is_fast
        and (lo, hi) == (-128, 127)
        and ort is None
        and batches == 1
        and (
            (values["pairs_u8"] and depth <= 256 and depth % 8 == 0)
            or (values["pairs"] and out_depth >= 4 and not out_depth % 4 and not values["lane"])
        )
    )
    if l128 or l8:
        # mc_fc_l128: SMMLA on the 256-scaled sums with C = 64 + 128 c, then >> (r + 7) (kernel_fc_lanes.h)
        values.update(
            # mc_fc_l128's shift 16 (MC_FC_L128_EPILOGUE_16): the outputs + 128 saturated unsigned
            l128_c=64 + 128 * int(c[0]) + (L128_UNSIGNED_OFFSET if l128 and int(r[0]) + 7 == 16 else 0),
            l128_sh=int(r[0]) + 7,
            l128_signed=lo < y_zp,
        )
    if per_channel:
        values.update(
            multipliers=ctx.const(
                "multiplier",
                mult,
                comment=f"requantization multiplier per row [{out_depth}]"
                + (" (ONNX Runtime's float32 scale, as its bits)" if ort is not None else ""),
            ),
            cs=None
            if ort is not None  # ONNX Runtime's requantization reads the scale alone
            else ctx.const(
                "c" if is_fast else "shift",
                c,
                comment=f"per row [{out_depth}]: "
                + ("rounding constant c = 2^(r-1) + output zero point * 2^r" if is_fast else "requantization shift"),
            ),
            rs=ctx.const("r", r, comment=f"right shift per row [{out_depth}]") if is_fast else None,
            requant=None,
        )
    else:
        values["requant"] = (int(mult[0]), int(c[0]), int(r[0]))
    # two batch rows per step, requantized by kernel_portable_runs.h's mc_fc_rows2_store (the layer's
    # constants in one struct) where it takes the layer: TFLM's requantization per row, rows by 4
    values["rows2_helper"] = bool(values["lane"] and is_fast and per_channel and ort is None and not out_depth % 4)
    return ctx.render("fully_connected_rows4.c.j2", **values)


# kernel_fc_lanes.h's one pass per 128 inputs: 32 groups of 4 inputs per chunk
L128_STEPS = 32
# a record of mc_fc_l128's first chunk: 4 start values and the address the LDM loads into the PC
L128_RECORD = 5


# MC_FC_L8: a layer of 8 inputs, its expanded input in 4 registers
L8_DEPTH = 8
# mc_fc_l128's epilogue for the shift 16 saturates the outputs + 128 unsigned: 128 * 2^16 more in C
L128_UNSIGNED_OFFSET = 128 << 16


def lanes_requant_fits(is_fast, per_channel, ort, c, r, act) -> bool:
    """Whether a lanes layer's requantization runs on its 256-scaled sums (mc_fc_l128, MC_FC_L8): one
    per-tensor fast requantization whose clamp is the int8 range (SSAT alone), C = 64 + 128 c with
    |C| + 2^23 < 2^30 (C, with L128_UNSIGNED_OFFSET, + the SMMLA product, |product| < 2^30, stays in
    int32) and 8 <= r + 7 <= 31 (SSAT's shift)."""
    if not is_fast or per_channel or ort is not None or tuple(act) != (-128, 127):
        return False
    return abs(64 + 128 * int(c[0])) + L128_UNSIGNED_OFFSET < 2**30 and 1 <= int(r[0]) <= 24


def pack_l128(words: np.ndarray, start: np.ndarray, steps: int) -> tuple[np.ndarray, dict[int, str]]:
    """pack_lanes_rows4's stream (chunks of 128 inputs, blocks of 4 rows) with the first chunk's records
    (mc_fc_l128's epilogue goes on with one LDM of a record's 5 words, the last one into the PC): each
    block's 4 start values and MC_FC_L128_GO before its words, then a terminator (4 words unused,
    MC_FC_L128_DONE for a one-pass layer, MC_FC_L128_NEXT into the next chunks). Returns the words (0
    where an address goes) and the C expression of each address word by its index."""
    blocks = len(start) // 4
    per_block = 4 * L128_STEPS
    chunks = words.reshape(steps // L128_STEPS, blocks, per_block)
    go = np.zeros((blocks, 1), np.int32)
    first = np.concatenate([start.reshape(blocks, 4).astype(np.int32), go, chunks[0]], axis=1).reshape(-1)
    stream = np.concatenate([first, np.zeros(L128_RECORD, np.int32), chunks[1:].reshape(-1)]).astype(np.int32)
    record = L128_RECORD + per_block
    symbols = {k * record + 4: "MC_FC_L128_GO" for k in range(blocks)}
    symbols[blocks * record + 4] = "MC_FC_L128_DONE" if len(chunks) == 1 else "MC_FC_L128_NEXT"
    return stream, symbols
