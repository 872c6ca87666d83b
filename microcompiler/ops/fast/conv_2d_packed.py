"""CONV_2D, int8, one group, in portable C (no DSP extension): the "packed" kernel (template
conv_2d_packed.c.j2) for any kernel, stride, dilation and padding. Per pair of output pixels (raster
order), with the long multiply (Armv7-M, the host) both pixels' taps are packed per input word
(x0 + x1 * 2^L, conv_2d_pointwise.lane_bits) into the scratch straight from the input by one helper
of kernel_portable_runs.h (mc_pack2_pair_s8, the layer's geometry a constant mc_packed_geom): where both
pixels are on one row and every tap inside, one run of k_w * in_c inputs per kernel row, else
gathered tap by tap into the two patches (padding taps: the input zero point, folded into the bias), then packed -- and run 4 output channels at
a time with one SMLAL per 2 MACs (mc_dot_x2r4_s8i); without it (Armv6-M) each pixel's gathered patch runs mc_dot_r4_s8i. The
weights are interleaved per input as FULLY_CONNECTED's portable rows4 lays them out (same flash).
With the helpers and the scratch for it ("quads", QUADS_FREE_BYTES), 4 pixels per step as the pointwise
kernel: pixels 0 and 1, and 2 and 3, packed side by side (mc_pack4_quad_s8: one run per kernel row where
the four are inside on one row, else pair by pair), mc_dot_x4r2_s8i (twice per 4 output channels; each weight loaded once for 4 pixels).
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.conv_common import bias_tensor, geometry
from microcompiler.ops.fast import packing as fast
from microcompiler.ops.fast.conv_2d_pointwise import lane_bits, layer_values
from microcompiler.ops.plan import ISA_C, KernelPlan, Variant

PACKED = Variant("packed", ("kernel_simd.h", "kernel_portable.h"))
# From this many input channels the two pixels' taps are packed straight from the input (per tap two
# pointers); below it (KWS's and IC's first layers: 1 and 3) the patches are gathered first, then
# packed in one pass (the per-tap work would outweigh a tap's few inputs). Layer code ("runs" 0).
FUSED_MIN_CHANNELS = 4
# From this many packed layers in a model, the packing is kernel_portable_runs.h's mc_pack2_pair_s8
# ("runs" 1: one run per kernel row where both pixels are inside, the layer's geometry a constant
# mc_packed_geom): the helpers' 0.7 KB of code is then less than the layer code they replace.
RUNS_MIN_LAYERS = 4
# With the runs, 4 output pixels per step (knob "quads": pixels 0 and 1, 2 and 3 packed per input word
# side by side, mc_pack4_quad_s8, and mc_dot_x4r2_s8i: each weight loaded once for 4 pixels, 60
# instructions per 64 MACs in its loop where mc_dot_x2r4_s8i takes 40 per 32) where the layer's scratch
# for them (2 words per tap and two patches) is within the largest 2-pixel scratch of the model's packed
# layers (the model's scratch does not grow), or within QUADS_FREE_BYTES. 0: the patched stems of the
# MobileNet look-alikes (one input channel, 9 taps) would take 157K instructions less on person_detect,
# but their frames (the layer's 8 sums and mc_pack4_quad_s8's) add 52 B to its stack.
QUADS_FREE_BYTES = 0


def _rows(op, graph) -> np.ndarray:
    g = geometry(op, graph)
    return graph.tensors[op.inputs[1]].data.astype(np.int8).reshape(g.out_c, -1)  # [oc][ky][kx][c]


def fits(op, graph) -> bool:
    """Output channels in blocks of 4, symmetric weights, TFLM's requantization exact with SMMLAR,
    every partial sum within int32 (mc_dot_r4_s8i: |folded bias| + 128 sum|w| < 2^31), a lane
    width for the packed sums and the geometry within mc_packed_geom's int16 fields."""
    g = geometry(op, graph)
    if (
        max(g.in_h, g.in_w, g.in_c, g.k_h * g.dil_h, g.k_w * g.dil_w, g.out_h * g.stride_h, g.out_w * g.stride_w)
        >= 2**15
    ):
        return False
    x, w, y = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
    if g.out_c % 4 or w.quant is None or any(int(z) != 0 for z in w.quant.zero_point):
        return False
    w_rows = _rows(op, graph)
    rq = fast.requant_setup(x, w, y, bias_tensor(op, graph), w_rows)
    bound = np.abs(rq.folded) + 128 * np.abs(w_rows.astype(np.int64)).sum(axis=1)
    return bool(rq.fast and np.all(bound < 2**31) and lane_bits(w_rows))


def _scratch_layout(k: int, quads: bool = False, long_multiply: bool = True) -> tuple[int, int]:
    """(packed words, patch words) of a layer of ``k`` taps (kernel rows x columns x input channels):
    the packed column (K words, 2K for quads; none on a core without the long multiply) and the two
    patches (2K bytes)."""
    return (2 * k if quads else k) if long_multiply else 0, -(-2 * k // 4)


def scratch_bytes(k: int, quads: bool = False, long_multiply: bool = True) -> int:
    """The scratch of a packed layer of ``k`` taps."""
    return 4 * sum(_scratch_layout(k, quads, long_multiply))


def plan(op, graph, layers: int = 1, model_taps: int = 0, long_multiply: bool = True) -> KernelPlan:
    """``layers``: how many of the model's layers take this kernel ("runs" from RUNS_MIN_LAYERS);
    ``model_taps``: the most taps of one of them (the model's packed scratch, for "quads");
    ``long_multiply`` False (a core known to lack it, Cortex-M0/M0+/M23): the int32 path alone, its
    two patches the whole scratch ("lane" 0, no runs nor quads)."""
    g = geometry(op, graph)
    runs = long_multiply and layers >= RUNS_MIN_LAYERS
    k = g.k_h * g.k_w * g.in_c
    quads = runs and scratch_bytes(k, True) <= max(scratch_bytes(model_taps), QUADS_FREE_BYTES)
    return KernelPlan.of(
        PACKED,
        ISA_C,
        scratch_bytes=scratch_bytes(k, quads, long_multiply),
        pixels=4 if quads else 2,
        out_channels=4,
        weights="s8",
        extract="interleaved",
        lane=lane_bits(_rows(op, graph)) if long_multiply else 0,
        runs=int(runs),
        **({"quads": 1} if quads else {}),
    )


def _geom(g, lane: int, zero: int, scratch: str, packed_words: int, rest: int = 0) -> str:
    """The initializer of the layer's mc_packed_geom (kernel_portable_runs.h): the scratch, the geometry,
    the interior (output rows y_lo..y_hi, columns x_lo..x_hi where both pixels of a pair on one row
    have every tap inside; with dilation 1 across, so that a kernel row's taps are one run), the
    input zero point, 2^lane and the pixels of the last step of 4 (quads; 0 for pairs)."""
    y_lo = max(0, -(-g.pad_h // g.stride_h))  # (a patch's padding may be negative)
    y_hi = min(g.out_h - 1, (g.in_h - 1 + g.pad_h - (g.k_h - 1) * g.dil_h) // g.stride_h)
    x_lo = max(0, -(-g.pad_w // g.stride_w))  # >= 0: an odd last pixel's ox < 0 is never inside
    x_hi = min(g.out_w - 1, (g.in_w - 1 + g.pad_w - (g.k_w - 1)) // g.stride_w)
    if g.dil_w != 1 or x_lo + 1 > x_hi:
        y_lo, y_hi = 1, 0
    fields = [g.in_h * g.in_w * g.in_c, 2**lane, g.in_h, g.in_w, g.in_c, g.k_h, g.k_w, g.stride_h, g.stride_w]
    fields += [g.dil_h, g.dil_w, g.pad_h, g.pad_w, g.out_h, g.out_w, y_lo, y_hi, x_lo, x_hi, zero, rest]
    pointers = f"{scratch}, (int8_t*)({scratch} + {packed_words})"
    return pointers + ", " + ", ".join(str(int(v)) for v in fields)


def emit(op, graph, ctx) -> str:
    x = ctx.tensor(op.inputs[0])
    g = geometry(op, graph)
    k = g.k_h * g.k_w * g.in_c
    values = layer_values(op, graph, ctx, f"{k} taps (ky, kx, c)")
    scratch = ctx.scratch(ctx.plan.scratch)
    quads = bool(ctx.plan.knob("quads", 0))
    words = _scratch_layout(k, quads, bool(ctx.plan.knob("lane", 0)))[0]
    rest = (g.batches * g.out_h * g.out_w) % 4 if quads else 0
    return ctx.render(
        "conv_2d_packed.c.j2",
        scratch=scratch,
        packed_words=words,
        K=k,
        input_offset=int(x.quant.zero_point[0]),
        fused=g.in_c >= FUSED_MIN_CHANNELS,
        runs=ctx.plan.knob("runs", 0),
        quads=quads,
        batch_bytes=g.in_h * g.in_w * g.in_c,
        geom=_geom(g, ctx.plan.knob("lane", 0), int(x.quant.zero_point[0]), scratch, words, rest),
        tap_y=f"py[t] * {g.stride_h} - {g.pad_h} + ky * {g.dil_h}",
        tap_x=f"px[t] * {g.stride_w} - {g.pad_w} + kx * {g.dil_w}",
        **g.values(),
        **values,
    )
