"""UNIDIRECTIONAL_SEQUENCE_LSTM: the fast gate matmuls beside "rows4" (ops/lstm.py), for the template
lstm.c.j2. Each time step's gate pre-activations are two matrix-vector products, the input FC and
the recurrent FC of the 4 gates stacked (4 x n_state rows), each requantized to Q3.12, saturated to
int16 and added with saturation, as TFLM's integer LSTM.

* "mve-rows4" (int8, Helium): the stacked weights as int8 blocks of 4 rows x 16 inputs (mve.pack_blocks),
  one VLDRB + VMLADAVA.S8 per row and chunk (mc_mve_dot_1x4), per block of 4 rows the requantization
  record {bias - zero point * sum(w), multiplier, left shift, -right shift} (mve.records), 4 rows
  requantized at once (mc_v4_requant: VQRDMULH + VRSHL) and their gate sums stored together
  (mc_v4_store_sum_s16). A side whose depth is not a multiple of 16 is copied into a zero-padded
  row of the scratch after the gates (the bytes after it meet zero weights).
* "int16-rows4" (int16x8: int16 activations with zero point 0, int8 weights, int64 biases): the
  stacked weights as int16 pairs interleaved for 4 rows (s16.pack_rows), 4 rows per mc_dot4_s16
  pass (SMLAD on the DSP cores, portable C elsewhere) over the int16 input and hidden state; TFLM
  sums in int64, the kernel in int32 where the weights prove no sum can leave int32 (otherwise the
  reference loops run), then the int64 bias and TFLM's 64-bit requantization. A side whose depth is
  not a multiple of 4 is copied into a zero-padded int16 row of the scratch.
* "int16-rows4-s8" (the int16x8 default): int16-rows4 with the weights kept int8 in flash, the model
  file's size (issue 22 item 6), widened in registers as FULLY_CONNECTED's int16-rows4-s8 does: 4 taps
  of a row per word stored (w0, w2, w1, w3) (s16.pack_rows_s8), SXTB16 / SXTB16 ROR #8 to int16 pairs,
  SMLAD (mc_dot4_s16_s8). Each weight is used once per time step, so there is no block to widen once
  and share. The tuning knob {"weights": "s16"} keeps int16-rows4 (twice the flash, fewer instructions).
* "pairs-rows4" (int8 without the DSP extension: Cortex-M3, and the same C on the M0): the stacked
  weights as FULLY_CONNECTED's "pairs" words (packing.pack_pairs_rows4: the model file's bytes, 4
  rows per word, two rows per 32 x 32 -> 64 multiply-accumulate, mc_pairs_pass of kernel_portable.h),
  the zero points folded into the start values, the sums of the input and of the hidden state taken
  once per step; each block of 4 rows requantized to Q3.12 per side (mc_requant_fast where the
  multipliers allow), saturated, then added.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from microcompiler.ops.fast import mve, s16
from microcompiler.ops.fast import packing as fast
from microcompiler.ops.plan import Variant

MVE_ROWS4 = Variant("mve-rows4", ("kernel_mve_matmul.h", "kernel_mve_lstm.h"))
INT16_ROWS4 = Variant("int16-rows4", ("kernel_s16.h",))
INT16_ROWS4_S8 = Variant("int16-rows4-s8", ("kernel_s16.h",))
PAIRS_ROWS4 = Variant("pairs-rows4", ("kernel_simd.h", "kernel_portable.h"))


@dataclass
class Side:
    """One side's (input or hidden) gate matmul: weights [4 x n_state rows][depth] int8, bias per row
    (int64), the activation's zero point, the requantization per gate (multiplier, shift)[4]."""

    weights: np.ndarray
    bias: np.ndarray
    zero_point: int
    multiplier: np.ndarray
    shift: np.ndarray


def emit_mve(ctx, sides: dict[str, Side], gate_bytes: int) -> dict:
    """The flash arrays and scratch rows of "mve-rows4" (template values ``mve``)."""
    out: dict = {}
    row_at = gate_bytes
    for name, side in sides.items():
        rows, depth = side.weights.shape
        folded = side.bias - side.zero_point * side.weights.astype(np.int64).sum(axis=1)
        mult = np.repeat(side.multiplier, rows // 4)
        shift = np.repeat(side.shift, rows // 4)
        steps = mve.steps_of(depth)
        padded = depth % mve.CHUNK != 0
        out[name] = dict(
            depth=depth,
            steps=steps,
            general=int(np.any(shift >= 0)),
            row=f"(int8_t*){ctx.scratch(row_at + 16 * steps)} + {row_at}" if padded else None,
            weights=ctx.const(
                f"{name}_weights",
                mve.pack_blocks(side.weights),
                comment=(
                    f"{name} FC of the 4 gates (forget, input, cell, output) stacked [{rows} rows][{depth}]: per "
                    "block of 4 rows and chunk of 16 inputs the 16 int8 of rows 0, 1, 2, 3 (zero-padded)"
                ),
            ),
            params=ctx.const(
                f"{name}_params",
                mve.records(folded, mult, shift),
                comment=(
                    f"per block of 4 rows [{rows // 4}] the record {{"
                    + ("gate bias minus" if name == "input" else "minus")
                    + f" the {name} zero point times the row's weights [4], multiplier to Q3.12 [4], -right shift[4]"
                    + (", left shift[4]}" if np.any(shift >= 0) else "}")
                ),
            ),
        )
        if padded:
            row_at += 16 * steps
    out["row_bytes"] = row_at - gate_bytes
    return out


def words_of(depth: int) -> int:
    """Pair words of a row of `depth` int16 inputs padded to a multiple of 4 (mc_dot4_s16 reads 2 at a time)."""
    return -(-depth // 4) * 2


def s16_exact(sides: dict[str, Side]) -> bool:
    """Every int32 sum of "int16-rows4" is exact (|x| <= 2^15 times a row's |weights| below 2^31)."""
    return all(
        side.weights.shape[1] == 0
        or s16.chunk_words(side.weights, words_of(side.weights.shape[1]), True) >= words_of(side.weights.shape[1])
        for side in sides.values()
    )


def emit_s16(ctx, sides: dict[str, Side], gate_bytes: int, s8: bool) -> dict:
    """The flash arrays and scratch rows of "int16-rows4" or, ``s8``, "int16-rows4-s8" (template values
    ``s16``; ``s16.steps``: the steps of 4 taps of mc_dot4_s16_s8)."""
    out: dict = {}
    row_at = gate_bytes
    for name, side in sides.items():
        rows, depth = side.weights.shape
        words = words_of(depth)
        padded = depth % 4 != 0
        layout = (
            "as int8, 4 per word stored (w0, w2, w1, w3) for SXTB16, the rows in blocks of 4 interleaved per word"
            if s8
            else "as int16 pairs, the rows in blocks of 4 interleaved per pair"
        )
        out[name] = dict(
            depth=depth,
            words=words,
            s8=s8,
            row=f"(int16_t*)((int8_t*){ctx.scratch(row_at + 4 * words)} + {row_at})" if padded else None,
            weights=ctx.const(
                f"{name}_weights",
                s16.pack_rows_s8(side.weights) if s8 else s16.pack_rows(side.weights, words),
                comment=(
                    f"{name} FC of the 4 gates (forget, input, cell, output) stacked [{rows} rows][{depth}, zero-padded "
                    f"to a multiple of 4] {layout}"
                ),
            ),
            bias=ctx.const(f"{name}_bias", side.bias, comment=f"gate bias per row [{rows}] (int64)")
            if name == "input"
            else None,
            multiplier=ctx.const(
                f"{name}_multiplier",
                side.multiplier.astype(np.int32),
                comment="requantization multiplier to Q3.12 per gate [4]",
            ),
            shift=ctx.const(f"{name}_shift", side.shift.astype(np.int32), comment="requantization shift per gate [4]"),
        )
        if padded:
            row_at += 4 * words
    out["row_bytes"] = row_at - gate_bytes
    return out


def _requant_consts(ctx, name: str, is_fast: bool, c, r) -> dict:
    """The rounding constants (TFLM's shifts) and right shifts per gate: literals (``same``) where the
    4 gates share them, GCC then keeps no register for them, else flash arrays."""
    if is_fast and len({int(v) for v in c}) == 1 and len({int(v) for v in r}) == 1:
        return dict(shift=None, r=None, same=(int(c[0]), int(r[0])))
    return dict(
        shift=ctx.const(
            f"{name}_{'c' if is_fast else 'shift'}",
            c,
            comment="rounding constant 2^(r-1) per gate [4]" if is_fast else "requantization shift per gate [4]",
        ),
        r=ctx.const(f"{name}_r", r, comment="right shift per gate [4]") if is_fast else None,
        same=None,
    )


def emit_pairs(ctx, sides: dict[str, Side]) -> dict:
    """The flash arrays of "pairs-rows4" (template values ``pairs``): per side the weights as pairs
    words (the input side signed, mc_pairs_pass; the hidden side unsigned, mc_pairs_u_pass, the hidden
    state offset by 128 in place), the start values (bias - (zero point [+ 128]) * sum(w), wrapped to
    int32; the hidden side's as int16 row sums times -(zero point + 128) where they fit), the requantization per gate
    (multiplier; with mc_requant_fast the rounding constant c and right shift r, else TFLM's shift)."""
    out: dict = {}
    n_state = sides["hidden"].weights.shape[1]
    group = 8 if n_state % 8 == 0 else 4
    fused = n_state % 4 == 0
    # fused: the rows in blocks of `group` units, per block the 4 gates' rows of its units in turn
    order = (
        np.arange(4 * n_state).reshape(4, n_state // group, group).transpose(1, 0, 2).reshape(-1)
        if fused
        else np.arange(4 * n_state)
    )
    out["fused"] = fused
    consts: dict = {}  # per side: multiplier, c, r per gate and whether mc_requant_fast applies
    for name, side in sides.items():
        side = Side(side.weights[order], side.bias[order], side.zero_point, side.multiplier, side.shift)
        rows, depth = side.weights.shape
        unsigned = name == "hidden"  # offset in place once per step (the step's output replaces it)
        sums = side.weights.astype(np.int64).sum(axis=1)
        start = side.bias - (side.zero_point + (128 if unsigned else 0)) * sums
        bound = fast.acc_bounds(sides[name].bias, sides[name].weights).reshape(4, -1).max(axis=1)  # per gate
        is_fast, c, r = fast.requant_table(side.multiplier, side.shift, 0, bound)
        rows8 = unsigned and group == 8  # the hidden side 8 rows per pass (mc_pairs_u8_pass)
        words = fast.pack_pairs_u_rows8(side.weights) if rows8 else fast.pack_pairs_rows4(side.weights, unsigned)[0]
        # the hidden side's start is -(zero point + 128) times the row sums: int16 row sums where they fit,
        # except in fused blocks, where the int32 start values save the multiply per row (lstm_int8 on the
        # Cortex-M3: 5,440 instructions fewer for 200 B more flash)
        short = unsigned and not fused and bool(np.all(np.abs(sums) < 2**15))
        out[name] = dict(
            depth=depth,
            fast=is_fast,
            unsigned=unsigned,
            rows=8 if rows8 else 4,
            short=bool(short or np.all(np.abs(start) < 2**15)),
            factor=-(side.zero_point + 128) if short else None,
            weights=ctx.const(
                f"{name}_weights",
                words,
                "uint32_t",
                comment=(
                    f"{name} FC of the 4 gates (forget, input, cell, output) stacked [{rows} rows][{depth}]: per block "
                    "of 4 rows, input by input one word of the 4 rows' weights, bytes (w0 ^ 0x80, w3, w2 ^ 0x80, w1)"
                ),
            ),
            start=ctx.const(f"{name}_sums", sums.astype(np.int16), comment=f"the sum of each row's weights [{rows}]")
            if short
            else ctx.const(
                f"{name}_start",
                start.astype(np.int16) if np.all(np.abs(start) < 2**15) else fast.wrap32(start),
                comment=f"accumulator start per row [{rows}]: "
                + ("the gate bias minus" if name == "input" else "minus")
                + f" the {name} zero point{' + 128' if unsigned else ''} times the row's weights",
            ),
        )
        consts[name] = (side.multiplier.astype(np.int64), np.asarray(c, np.int64), np.asarray(r, np.int64), is_fast)
    if fused:
        out["records"], out["record_len"] = _gate_records(ctx, out, consts)
    else:
        for name, (m, c, r, is_fast) in consts.items():
            out[name].update(
                multiplier=ctx.const(
                    f"{name}_multiplier", m.astype(np.int32), comment="requantization multiplier per gate [4]"
                ),
                **_requant_consts(ctx, name, is_fast, c, r),
            )
    return out


def _gate_records(ctx, out: dict, consts: dict) -> tuple[str, int]:
    """The fused blocks' requantization constants as one record per gate (one pointer for the gate
    loop, where GCC kept one per array on the stack): per side the multiplier, then the rounding
    constant and right shift (TFLM's shift) unless the 4 gates share them (literals, ``same``);
    each side's ``at`` holds the fields' indices."""
    columns: list = []
    for name, (m, c, r, is_fast) in consts.items():
        same = is_fast and len({int(v) for v in c}) == 1 and len({int(v) for v in r}) == 1
        at = {"m": len(columns)}
        columns.append(m)
        if not same:
            at["c"] = len(columns)
            columns.append(c)
            if is_fast:
                at["r"] = len(columns)
                columns.append(r)
        out[name].update(at=at, same=(int(c[0]), int(r[0])) if same else None, multiplier=None, shift=None, r=None)
    records = np.stack(columns, axis=1).astype(np.int32)  # [4 gates][fields]
    fields = ", ".join(f"{side} {key}" for side in consts for key in out[side]["at"])
    return ctx.const("gate_requant", records.reshape(-1), comment=f"per gate [4]: {fields}"), len(columns)
