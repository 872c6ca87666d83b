"""Helium (MVE) int8 kernels for Cortex-M55 ("mve" variants, crt/include/microcompiler/kernel_mve.h).

Chosen when the board's CPU features include "mve" (boards/*.toml). The plans and emitters here are
called by the operators (conv_2d.py, depthwise_conv_2d.py, fully_connected.py, add_mul.py) with what
they already computed (geometry, weights, multipliers), so this module imports no operator module.

* CONV_2D and FULLY_CONNECTED share one kernel ("mve-dot"): 2 output pixels (or batch rows) x 4
  output channels per inner loop of VLDRB + VMLADAVA.S8, 16 instructions per 128 MACs. Each pixel's
  receptive field is gathered into a 16-byte-padded row of the scratch buffer (padding taps get the
  input zero point, folded into the bias), or read in place when it already is one contiguous row
  (1x1, stride 1, channels % 16 == 0; FULLY_CONNECTED with depth % 16 == 0).
* DEPTHWISE_CONV_2D ("mve-channels4"): 4 channels per vector, VMLA.S32 per tap, taps unrolled.
* ADD ("mve"): 4 elements per vector, TFLM's three rescalings with VQRDMULH + VRSHL.
* The requantization epilogue of all of them runs on 4 lanes (mc_v4_requant): exactly TFLM's
  MultiplyByQuantizedMultiplier for any multiplier and shift (no range proof needed).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from microcompiler.ops.conv_common import RequantizedLayer
from microcompiler.ops.fast import wrap32
from microcompiler.ops.plan import ISA_MVE, KernelPlan, Variant

HEADERS = ("kernel_mve.h",)
MVE_DOT = Variant("mve-dot", HEADERS)  # CONV_2D and FULLY_CONNECTED
# DEPTHWISE_CONV_2D; its body as a shared function: a 24 B larger frame (KWS on the M55: 280 vs 256)
MVE_CHANNELS16 = Variant("mve-channels16", ("kernel_mve_dw.h",), shared_body=False)
MVE_LANES = Variant("mve", HEADERS)  # ADD/SUB, 4 lanes
MVE_CHANNELS8 = Variant("mve-channels8", HEADERS)  # AVERAGE_POOL_2D
MVE_MAX16 = Variant("mve-max16", HEADERS)  # MAX_POOL_2D

CHUNK = 16  # int8 lanes of a Q register: inputs per VMLADAVA.S8
RECORD = 16  # int32 per block of 4 channels: bias[4], multiplier[4], -right shift[4], left shift[4]


def steps_of(k: int) -> int:
    return -(-k // CHUNK)


def pack_blocks(w_rows: np.ndarray) -> np.ndarray:
    """int8 [channels, k] -> the kernel layout: channels padded to a multiple of 4 and k to a multiple
    of 16 with zeros; per block of 4 channels and chunk of 16 inputs, the 16 weights of channels
    0, 1, 2, 3. Flat int8."""
    rows, k = w_rows.shape
    rows4, k16 = -(-rows // 4) * 4, steps_of(k) * CHUNK
    padded = np.zeros((rows4, k16), np.int8)
    padded[:rows, :k] = w_rows
    return padded.reshape(rows4 // 4, 4, k16 // CHUNK, CHUNK).transpose(0, 2, 1, 3).reshape(-1).copy()


def records(folded_bias: np.ndarray, mult: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """Per block of 4 channels {bias[4], multiplier[4], -right shift[4], left shift[4]} (int32; the
    channels padded to a multiple of 4 with zeros); without the left shifts when no channel shifts
    left (the kernels' ANY_LEFT_SHIFT 0 never read them: MC_MVE_RECORD_OF in kernel_mve.h). mult/shift
    may hold one entry (per tensor)."""
    n = len(folded_bias)
    n4 = -(-n // 4) * 4
    mult = np.broadcast_to(np.asarray(mult, np.int64), (n,))
    shift = np.broadcast_to(np.asarray(shift, np.int64), (n,))
    cols = np.zeros((4, n4), np.int64)
    cols[0, :n] = wrap32(folded_bias)
    cols[1, :n] = mult
    cols[2, :n] = np.minimum(shift, 0)
    cols[3, :n] = np.maximum(shift, 0)
    fields = 4 if np.any(shift >= 0) else 3
    return cols[:fields].reshape(fields, n4 // 4, 4).transpose(1, 0, 2).reshape(-1).astype(np.int32)


ORT_REQUANT = 2  # MC_MVE_ORT_REQUANT (kernel_mve_ort.h): ONNX Runtime's requantization


def general_mode(layer: RequantizedLayer, shift: np.ndarray) -> int:
    """The kernels' ``general`` (ANY_LEFT_SHIFT): 1 when a channel shifts left (TFLM's general
    requantization), 0 when all shift right, ORT_REQUANT for ONNX Runtime's float requantization (the
    records then hold the float scales' bits: kernel_mve_ort.h)."""
    return ORT_REQUANT if layer.ort else int(np.any(shift >= 0))


def conv_plan(g, groups: int) -> KernelPlan | None:
    """The "mve-dot" plan of an int8 CONV_2D with geometry g (one group), or None. "gather": none (1x1,
    stride 1, channels % 16 == 0: each pixel's inputs in place), rows (each kernel row's k_w x
    channels bytes are contiguous and a multiple of 16: read in place, the pixels whose window
    leaves the image gathered) or all (every receptive field gathered into a 16-byte-padded row)."""
    if groups != 1:
        return None
    k = g.k_h * g.k_w * g.in_c
    if g.k_h == g.k_w == 1 and g.stride_h == g.stride_w == 1 and g.pad_h == g.pad_w == 0 and g.in_c % CHUNK == 0:
        gather, scratch = "none", 0
    elif g.dil_w == 1 and (g.k_w * g.in_c) % CHUNK == 0:
        gather, scratch = "rows", 0 if g.always_inside else 2 * k
    else:
        gather, scratch = "all", 2 * steps_of(k) * CHUNK
    return KernelPlan.of(MVE_DOT, ISA_MVE, scratch_bytes=scratch, pixels=2, out_channels=4, gather=gather)


def fc_plan(depth: int) -> KernelPlan:
    direct = depth % CHUNK == 0
    return KernelPlan.of(
        MVE_DOT,
        ISA_MVE,
        scratch_bytes=0 if direct else 2 * steps_of(depth) * CHUNK,
        pixels=2,
        out_channels=4,
        gather="none" if direct else "all",
    )


def fc_geometry(batches: int, depth: int, units: int) -> SimpleNamespace:
    """FULLY_CONNECTED as the 1x1 convolution of a 1 x batches image with depth channels."""
    return SimpleNamespace(
        batches=1,
        in_h=1,
        in_w=batches,
        in_c=depth,
        out_h=1,
        out_w=batches,
        out_c=units,
        k_h=1,
        k_w=1,
        stride_h=1,
        stride_w=1,
        dil_h=1,
        dil_w=1,
        pad_h=0,
        pad_w=0,
        always_inside=True,
    )


def gather16_offsets(g, k: int) -> tuple[list[int], np.ndarray] | None:
    """The receptive field of a pixel inside the image as VLDRB gathers (mc_mve_gather16): per chunk of
    16 taps ([ky][kx][c] order) its first tap's byte offset from the window's first input and the 16
    byte offsets from it (the lanes past the k taps: 0, their weights are zero), or None when a
    chunk spans more than 255 bytes (VLDRB.U8 offsets)."""
    ky, kx, c = np.meshgrid(np.arange(g.k_h), np.arange(g.k_w), np.arange(g.in_c), indexing="ij")
    taps = (ky * g.dil_h * g.in_w * g.in_c + kx * g.dil_w * g.in_c + c).reshape(-1)
    padded = np.zeros(steps_of(k) * CHUNK, np.int64)
    padded[:k] = taps
    chunks = padded.reshape(-1, CHUNK)
    bases = chunks[:, 0].copy()
    rel = chunks - bases[:, None]
    rel[rel < 0] = 0  # the zero-weight lanes past the last tap
    if rel.max() > 255:
        return None
    return [int(b) for b in bases], rel.astype(np.uint8).reshape(-1)


def emit_dot(ctx, plan: KernelPlan, g, w_rows: np.ndarray, layer: RequantizedLayer) -> str:
    """C body of the "mve-dot" kernel: g a ConvGeometry (FULLY_CONNECTED: 1 x batches pixels, 1x1),
    w_rows int8 [out_c, k] in the order of the gathered row ([ky][kx][c])."""
    k = w_rows.shape[1]
    folded = layer.bias.astype(np.int64) - layer.x_zp * w_rows.astype(np.int64).sum(axis=1)
    shift = np.asarray(layer.shift)
    ctx.note(requant="ort-float" if layer.ort else "vqrdmulh")
    mode = {"none": "none", "rows": "rows", "all": "gather"}[plan.knob("gather")]
    # the gathers pay where a kernel row is shorter than a vector (a copy per row of a few bytes)
    rows_short = g.k_w * g.in_c < CHUNK
    gather = gather16_offsets(g, k) if mode == "gather" and (g.k_h > 1 or g.dil_w > 1) and rows_short else None
    rows, row_steps = (g.k_h, g.k_w * g.in_c // CHUNK) if mode == "rows" else (1, steps_of(k))
    return ctx.render(
        "conv_2d_mve.c.j2",
        g=g,
        describe=layer.describe,
        input=layer.input_c,
        output=layer.output_c,
        weights=ctx.const("weights", pack_blocks(w_rows)),
        params=ctx.const("params", records(folded, layer.mult, shift)),
        steps=steps_of(k),
        k=k,
        mode=mode,
        rows=rows,
        row_steps=row_steps,
        in_stride=g.dil_h * g.in_w * g.in_c if mode == "rows" else CHUNK * row_steps,
        variable_stride=mode == "rows" and not g.always_inside,
        npix=g.out_h * g.out_w,
        scratch=ctx.scratch(plan.scratch) if plan.scratch else None,
        gather_bases=gather[0] if gather else None,
        gather_offsets=ctx.const(
            "gather_offsets",
            gather[1],
            "uint8_t",
            comment=f"per chunk of 16 taps [{len(gather[0])}] the byte offsets of its taps from the chunk's first",
        )
        if gather
        else None,
        general=general_mode(layer, shift),
        zp=layer.x_zp,
        out_zp=layer.y_zp,
        act_min=layer.act[0],
        act_max=layer.act[1],
    )


def depthwise_plan(g, depth_multiplier: int) -> KernelPlan | None:
    """The "mve-channels16" plan of an int8 DEPTHWISE_CONV_2D (depth multiplier 1, channels % 16 == 0);
    with one input channel (any multiplier) the layer is the CONV_2D of one input channel and
    depth_multiplier output channels: the "mve-dot" plan (emit_depthwise_dot)."""
    if g.in_c == 1:
        return conv_plan(g, 1)
    if depth_multiplier != 1 or g.in_c % 16:
        return None
    return KernelPlan.of(MVE_CHANNELS16, ISA_MVE, scratch_bytes=0, channels=16, taps_unrolled=True)


def dw16_order(channels: int) -> np.ndarray:
    """Channel order of the requantization records of mc_dw16 (kernel_mve.h): per group of 16, the
    accumulators A (0, 4, 8, 12), B (2, 6, 10, 14), C (1, 5, 9, 13), D (3, 7, 11, 15)."""
    lanes = [0, 4, 8, 12, 2, 6, 10, 14, 1, 5, 9, 13, 3, 7, 11, 15]
    return np.array([base + k for base in range(0, channels, 16) for k in lanes])


MAX_IMM = 127  # VLDRB's immediate offset: -127..127


def depthwise_rows(g) -> tuple[list[int], list[tuple[int, int]]]:
    """Addressing of the taps of an interior pixel: row pointers (byte offsets from the pixel's first
    input, pointing to the middle of each kernel row, so that the row's taps are within VLDRB's
    immediate offset of it) and per tap (row pointer index, immediate offset). Rows too wide for
    that get a pointer per tap."""
    c = g.in_c
    span = (g.k_w - 1) * g.dil_w * c
    mid = span // 2
    rows, taps = [], []
    for ky in range(g.k_h):
        row = ky * g.dil_h * g.in_w * c
        if span - mid <= MAX_IMM:
            rows.append(row + mid)
            taps += [(len(rows) - 1, kx * g.dil_w * c - mid) for kx in range(g.k_w)]
        else:
            for kx in range(g.k_w):
                rows.append(row + kx * g.dil_w * c)
                taps.append((len(rows) - 1, 0))
    return rows, taps


def pack_depthwise(w_taps: np.ndarray) -> np.ndarray:
    """DEPTHWISE_CONV_2D weights [taps, channels] (channels % 16 == 0) -> per group of 16 channels and
    per tap, the 16 int8 weights. Flat int8."""
    taps, channels = w_taps.shape
    return w_taps.astype(np.int8).reshape(taps, channels // 16, 16).transpose(1, 0, 2).reshape(-1).copy()


def dw16_requantization(
    ctx, w_taps: np.ndarray, layer: RequantizedLayer
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """The per-channel folded bias (input zero point folded in), multipliers and shifts of a depthwise
    layer for the mc_dw16 kernels (w_taps int8 [taps, channels]), and the template values they share
    (tap pairs: two int16 products cannot overflow when no weight is -128)."""
    folded = layer.bias.astype(np.int64) - layer.x_zp * w_taps.astype(np.int64).sum(axis=0)
    n = len(folded)
    shift = np.broadcast_to(np.asarray(layer.shift), (n,))
    mult = np.broadcast_to(np.asarray(layer.mult), (n,))
    pairs = bool(w_taps.min(initial=0) > -128)  # two int16 products cannot overflow
    ctx.note(requant="ort-float" if layer.ort else "vqrdmulh", tap_pairs=pairs)
    values = dict(
        describe=layer.describe,
        input=layer.input_c,
        output=layer.output_c,
        pairs=pairs,
        general=general_mode(layer, shift),
        out_zp=layer.y_zp,
        act_min=layer.act[0],
        act_max=layer.act[1],
    )
    return folded, mult, shift, values


def emit_depthwise(ctx, plan: KernelPlan, g, w_taps: np.ndarray, layer: RequantizedLayer) -> str:
    """C body of "mve-channels16": w_taps int8 [taps, channels]."""
    folded, mult, shift, values = dw16_requantization(ctx, w_taps, layer)
    order = dw16_order(len(folded))
    zp_row = (
        None
        if g.always_inside
        else ctx.model_const(
            f"zero_point_row_{g.in_c}",
            np.full(g.in_c, layer.x_zp, np.int8),
            comment=f"a pixel of {g.in_c} input zero points ({layer.x_zp}): what padding taps read",
        )
    )
    rows, taps = depthwise_rows(g)
    return ctx.render(
        "depthwise_conv_2d_mve.c.j2",
        rows=rows,
        taps=taps,
        g=g,
        weights=ctx.const("weights", pack_depthwise(w_taps)),
        params=ctx.const("params", records(folded[order], mult[order], shift[order])),
        zp_row=zp_row,
        **values,
    )


def emit_depthwise_dot(ctx, plan: KernelPlan, g, w_taps: np.ndarray, layer: RequantizedLayer) -> str:
    """C body of an int8 DEPTHWISE_CONV_2D of one input channel as the "mve-dot" CONV_2D (w_taps int8
    [taps, multiplier]: output channel m's weights are column m, in the [ky][kx] order of the gathered
    row). TFLM's depthwise and convolution arithmetic are the same sum, bias and requantization."""
    return emit_dot(ctx, plan, g, np.ascontiguousarray(w_taps.T), layer)


def emit_add(ctx, q: dict, symbol: str, a, b, y, act: tuple[int, int], in1: str, in2: str, out: str) -> str:
    """C body of the "mve" ADD/SUB (inputs of the output's shape): q the requantization of
    Add.requantization (multipliers below one: right shifts only)."""
    (m1, s1), (m2, s2), (mo, so) = q["input1_q"], q["input2_q"], q["output_q"]
    n = int(np.prod(y.shape))
    name = "SUB" if symbol == "-" else "ADD"
    args = [
        ("elements", n),
        ("subtract", int(symbol == "-")),
        ("left shift", q["left_shift"]),
        ("input1 offset", -int(a.quant.zero_point[0])),
        ("input1 multiplier", m1),
        ("input1 right shift", -s1),
        ("input2 offset", -int(b.quant.zero_point[0])),
        ("input2 multiplier", m2),
        ("input2 right shift", -s2),
        ("output multiplier", mo),
        ("output right shift", -so),
        ("output zero point", int(y.quant.zero_point[0])),
        ("activation min", act[0]),
        ("activation max", act[1]),
    ]
    lines = [
        f"  /* {name} of {n} int8 elements, 4 per step (Helium: VMLAS, VQRDMULH, VRSHL), TFLM's arithmetic:",
        f"   * both inputs to a common scale with {q['left_shift']} bits of headroom, "
        f"{'subtract' if symbol == '-' else 'add'}, rescale. */",
        f"  mc_mve_add_s8({in1}, {in2}, {out},",
    ]
    lines += [
        f"                /* {what} */ {value}{',' if k < len(args) - 1 else ');'}"
        for k, (what, value) in enumerate(args)
    ]
    return "\n".join(lines) + "\n"


def division_magic(count: int, largest: int) -> tuple[int, int] | None:
    """(magic, shift) with (t * magic) >> (32 + shift) == t // count for every 0 <= t <= largest, magic
    below 2^31 (VMULH.S32), checked over the whole range; None when no such pair exists."""
    t = np.arange(largest + 1, dtype=np.int64)
    for shift in range(0, 31):
        magic = -(-(1 << (32 + shift)) // count)
        if magic >= 2**31:
            break
        if np.array_equal((t * magic) >> (32 + shift), t // count):
            return magic, shift
    return None


def avgpool_plan(depth: int, taps: int, unclipped: bool) -> KernelPlan | None:
    """The "mve-channels8" AVERAGE_POOL_2D plan: int8, unclipped windows, depth % 8 == 0, at most 255
    taps (int16 lane sums), and an exact division by multiplication."""
    if not unclipped or depth % 8 or taps > 255 or division_magic(taps, 128 * taps + taps // 2) is None:
        return None
    return KernelPlan.of(MVE_CHANNELS8, ISA_MVE, scratch_bytes=0, channels=8, clipped_windows=False)


def maxpool_plan(depth: int, unclipped: bool) -> KernelPlan | None:
    """The "mve-max16" MAX_POOL_2D plan: int8, unclipped windows, depth % 16 == 0."""
    if not unclipped or depth % 16:
        return None
    return KernelPlan.of(MVE_MAX16, ISA_MVE, scratch_bytes=0, channels=16, clipped_windows=False)


def avgpool_values(taps: int) -> dict:
    magic, shift = division_magic(taps, 128 * taps + taps // 2)
    return dict(magic=magic, shift=shift)
