"""TRANSPOSE_CONV, int16x8 (int16 activations, int8 weights, zero points 0, int64 or int16 bias or
none), constant weights and bias: the "int16-phases" fast kernel (template transpose_conv_s16.c.j2).

The decomposition of "phases" (transpose_conv_phases.py: one ordinary convolution of the input per
output phase, each output pixel summing only the taps that reach it, no zero-stuffing MACs) with the
arithmetic of the int16x8 FULLY_CONNECTED (fully_connected_s16.py, ops/fast/s16.py): per output
pixel the phase's taps gathered into an int16 row (taps outside the input: 0, TFLM's int16 zero
point), 4 output channels per pass of mc_dot4_s16 (the weights as int16 pairs interleaved for the 4
channels, SMLAD on the DSP cores, portable C elsewhere), the channels left over one by one. TFLM sums
in int64; the kernel sums in int32 where the weights prove that no sum can leave int32 (|x| <= 2^15
times the sum of a channel's |weights| in the phase; otherwise the reference loops run) and adds the
int64 bias after, then TFLM's 64-bit requantization (s16.epilogue: its one-multiply forms where the
bias allows). The loops run phase by phase (every output pixel of one phase, then the next).

"int16-phases" stores the weights as int16 pairs, twice the model file's int8. The default,
"int16-phases-s8" (issue 22 item 6), keeps them int8 in flash (s16.pack_widened per phase) and
widens each phase's weights once per inference into int16 pairs in the kernel scratch (mc_widen_s8:
about one instruction per weight), then runs the same pixel loops over them: every weight of a phase
serves each of its output pixels, so widening in the scratch costs less than widening in registers
(two SXTB16 per 4 taps per pixel). Where one phase's widened weights would pass MAX_WIDE_BYTES of
scratch, and with the tuning knob {"weights": "s16"}, int16-phases runs.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from microcompiler.ops.fast import s16
from microcompiler.ops.fast.conv_2d_s16 import MAX_WIDE_BYTES
from microcompiler.ops.fast.transpose_conv_phases import phase_tables, phase_taps
from microcompiler.ops.plan import KernelPlan, Variant, dsp_or_c
from microcompiler.ops.quant import activation_range, conv_multipliers

INT16_PHASES = Variant("int16-phases", ("kernel_s16.h",))
INT16_PHASES_S8 = Variant("int16-phases-s8", ("kernel_s16.h",))
VARIANTS = (INT16_PHASES, INT16_PHASES_S8)


def phase_rows(w, k_h: int, k_w: int, s_h: int, s_w: int) -> list[np.ndarray]:
    """Per phase (row phase major) the weights [out_c][taps of the phase, in input order] (int8)."""
    out_c, in_c = w.shape[0], w.shape[3]
    w_all = w.data.astype(np.int8).reshape(out_c, k_h, k_w, in_c)
    return [
        w_all[:, phase_taps(r_h, k_h, s_h)][:, :, phase_taps(r_w, k_w, s_w)].reshape(out_c, -1)
        for r_h in range(s_h)
        for r_w in range(s_w)
    ]


def applies(x, w, y, bias) -> bool:
    """int16x8 with every zero point 0 and an int64 or int16 bias (or none)."""
    return (
        x.dtype == "int16"
        and w.is_constant
        and (bias is None or (bias.is_constant and bias.dtype in ("int64", "int16")))
        and int(x.quant.zero_point[0]) == 0
        and int(y.quant.zero_point[0]) == 0
    )


def plan(w, k_h: int, k_w: int, s_h: int, s_w: int, features, weights: str | None = None) -> KernelPlan | None:
    """The plan where every phase's int32 sums are proven exact, else None: int16-phases-s8 (int8
    weights in flash, one phase widened in the scratch) unless ``weights`` (the tuning knob) is "s16"
    or the widened phase would pass MAX_WIDE_BYTES: int16-phases."""
    rows = phase_rows(w, k_h, k_w, s_h, s_w)
    for r in rows:
        words = -(-r.shape[1] // 4) * 2
        if r.shape[1] and s16.chunk_words(r, words, True) < words:
            return None
    taps = max(-(-r.shape[1] // 4) * 4 for r in rows)
    row_bytes = 2 * max(taps, 4)
    wide_bytes = 2 * taps * w.shape[0]  # the widest phase's weights as int16 pairs
    if weights != "s16" and wide_bytes <= MAX_WIDE_BYTES:
        return KernelPlan.of(
            INT16_PHASES_S8, dsp_or_c(features), scratch_bytes=wide_bytes + row_bytes, rows=4, weights="s8"
        )
    return KernelPlan.of(INT16_PHASES, dsp_or_c(features), scratch_bytes=row_bytes, rows=4, weights="s16")


def pack_phase_s8(r: np.ndarray) -> np.ndarray:
    """int8 words of one phase's weights [out_c][taps] (each channel zero-padded to a multiple of 4
    taps) that mc_widen_s8 turns into s16.pack_rows' int16 pair layout: the model file's bytes plus
    the padding."""
    padded = np.zeros((r.shape[0], -(-r.shape[1] // 4) * 4), np.int8)
    padded[:, : r.shape[1]] = r
    return s16.pack_widened(padded)


def emit(ctx, plan_: KernelPlan, x, w, y, bias, values: dict, activation: str) -> str:
    v = values
    out_c, k_h, k_w, s_h, s_w = v["out_c"], v["k_h"], v["k_w"], v["stride_h"], v["stride_w"]
    rows = phase_rows(w, k_h, k_w, s_h, s_w)
    words: list[np.ndarray] = []
    offsets: list[int] = []
    widen = plan_.variant == INT16_PHASES_S8
    for r in rows:
        offsets.append(sum(len(a) for a in words))
        if not r.shape[1]:  # no taps
            words.append(np.zeros(0, np.int32))
        else:
            words.append(pack_phase_s8(r) if widen else s16.pack_rows(r, -(-r.shape[1] // 4) * 2))
    if bias is not None and bias.dtype == "int16":  # TFLM widens an int16 bias to int64
        bias = SimpleNamespace(dtype="int64", data=bias.data.astype(np.int64))
    mult, shift = conv_multipliers(x, w, y, out_c)
    lo, hi = activation_range(activation, y)
    widest = max(r.shape[1] for r in rows)
    w_all = np.zeros((len(rows) * out_c, widest), np.int64)  # every phase's channels: the bound of all
    for p, r in enumerate(rows):
        w_all[p * out_c : (p + 1) * out_c, : r.shape[1]] = r
    e = s16.epilogue(ctx, bias, mult, shift, lo, hi, w_all)
    ctx.note(requant=e.mode)
    phases = s_h * s_w
    taps = max(-(-r.shape[1] // 4) * 4 for r in rows)
    wide_words = taps * out_c // 2 if widen else 0
    layout = (
        "as int8, 4 per word in the order mc_widen_s8 widens them into int16 pairs: the channels in blocks of 4 "
        "interleaved per pair, then the channels % 4"
        if widen
        else "as int16 pairs, the channels in blocks of 4 interleaved per pair, then the channels % 4"
    )
    return ctx.render(
        "transpose_conv_s16.c.j2",
        **v,
        e=e,
        isa=plan_.isa,
        phases=phases,
        full=out_c // 4 * 4,
        widen=widen,
        wide_words=wide_words,
        row_bytes=plan_.scratch - 4 * wide_words,
        scratch=ctx.scratch(plan_.scratch),
        weights=ctx.const(
            "weights",
            np.concatenate(words),
            comment=(
                f"weights of the {phases} phases (offsets in phase_offsets), each [{out_c} channels][its taps, zero-padded "
                f"to a multiple of 4] {layout}"
            ),
        ),
        **phase_tables(ctx, offsets, k_h, k_w, s_h, s_w, "weight word"),
    )
