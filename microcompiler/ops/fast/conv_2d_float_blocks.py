"""CONV_2D, float32, one group: the "float-blocks" fast kernel (template conv_2d_float_blocks.c.j2)
for cores with an FPU.

Per output row, blocks of 4 output pixels x 4 output channels: 16 accumulators in FPU registers,
one run per kernel row over its kernel_w x in_c taps (contiguous in the input when the horizontal
dilation is 1) with the weights of the 4 channels interleaved tap by tap at compile time, so the
inner loop (kernel_float.h) reads them sequentially. Pixels whose window crosses the left or right
border run one at a time with the kernel columns clipped to the image, rows clip their kernel rows:
no per-tap bounds checks. Output channels beyond a multiple of 4 run one at a time on their
original weight rows.

Every output is summed tap after tap in TFLM's order (kernel row, column, input channel; bias
added last, then the clamp), so it rounds as TFLM's reference kernel: the tests still compare
within harness.FLOAT_RTOL (1e-5 relative), which also covers compilers that contract a * b + c
into a fused multiply-add. The plan is Conv2D.kernel_plan in ops/conv_2d.py.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.conv_common import float_values
from microcompiler.ops.features import FPU, has_mve
from microcompiler.ops.plan import KernelPlan, Variant

FLOAT_HEADERS = ("kernel_float.h",)
FLOAT_BLOCKS = Variant("float-blocks", FLOAT_HEADERS)
BLOCK_CHANNELS = 4  # output channels per block (the interleave of the repacked weights)
BLOCK_PIXELS = 4  # output pixels per block


def float_isa(features) -> str:
    """ "mve-f" on Helium cores (kernel_float.h runs the 4-channel blocks as vectors: VMUL.F32 + VADD.F32),
    else "fpu" (scalar VMLA.F32)."""
    return "mve-f" if has_mve(features) else FPU


def plan(g, features) -> KernelPlan:
    return KernelPlan.of(
        FLOAT_BLOCKS, float_isa(features), scratch_bytes=0, pixels=BLOCK_PIXELS, out_channels=BLOCK_CHANNELS
    )


def interleave_rows(rows: np.ndarray, block: int = BLOCK_CHANNELS) -> np.ndarray:
    """Weight rows [channels][K] as blocks of ``block`` channels interleaved tap by tap
    ([K][block] per block), then the channels left over row after row."""
    full = rows.shape[0] // block * block
    blocks = rows[:full].reshape(-1, block, rows.shape[1]).transpose(0, 2, 1)
    return np.concatenate([blocks.reshape(-1), rows[full:].reshape(-1)]).astype(np.float32)


def _valid_range(start: int, k: int, dil: int, size: int) -> tuple[int, int]:
    """The kernel taps [lo, hi) of a window starting at input index ``start`` that fall inside the image."""
    taps = [t for t in range(k) if 0 <= start + t * dil < size]
    return (taps[0], taps[-1] + 1) if taps else (0, 0)


def interior(out: int, k: int, stride: int, dil: int, pad: int, size: int) -> tuple[int, int]:
    """[first, end) of the outputs whose whole window lies inside the image (end <= first: none)."""
    inside = [o for o in range(out) if _valid_range(o * stride - pad, k, dil, size) == (0, k)]
    return (inside[0], inside[-1] + 1) if inside else (0, 0)


def clip_values(g) -> dict:
    """What the template needs to clip kernel rows and columns at the borders."""
    rows = [_valid_range(o * g.stride_h - g.pad_h, g.k_h, g.dil_h, g.in_h) for o in range(g.out_h)]
    cols = [_valid_range(o * g.stride_w - g.pad_w, g.k_w, g.dil_w, g.in_w) for o in range(g.out_w)]
    x_lo, x_hi = interior(g.out_w, g.k_w, g.stride_w, g.dil_w, g.pad_w, g.in_w)
    # a window whose first tap lies before the image (clip its start) or last tap after it (clip its end)
    before = (
        [o * g.stride_h - g.pad_h < 0 for o in range(g.out_h)],
        [o * g.stride_w - g.pad_w < 0 for o in range(g.out_w)],
    )
    after = (
        [o * g.stride_h - g.pad_h + (g.k_h - 1) * g.dil_h >= g.in_h for o in range(g.out_h)],
        [o * g.stride_w - g.pad_w + (g.k_w - 1) * g.dil_w >= g.in_w for o in range(g.out_w)],
    )
    return dict(
        clip_top=any(before[0]),
        clip_bottom=any(after[0]),
        clip_left=any(before[1]),
        clip_right=any(after[1]),
        empty_rows=any(lo >= hi for lo, hi in rows),
        empty_cols=any(lo >= hi for lo, hi in cols),
        x_lo=x_lo,
        x_hi=x_hi,
        blocks_possible=x_hi - x_lo >= BLOCK_PIXELS,
    )


def emit_blocks(op, graph, ctx, plan_: KernelPlan, g, bias) -> str:
    w = ctx.tensor(op.inputs[1])
    rows = w.data.astype(np.float32).reshape(g.out_c, -1)  # [oc][ky][kx][c]
    k = rows.shape[1]
    nb, tail = g.out_c // BLOCK_CHANNELS, g.out_c % BLOCK_CHANNELS
    weights = ctx.const(
        "weights",
        interleave_rows(rows),
        comment=(
            f"weights: {nb} blocks of {BLOCK_CHANNELS} output channels, each [{g.k_h} ky][{g.k_w} kx][{g.in_c} c]"
            f"[{BLOCK_CHANNELS} channels]" + (f", then {tail} channel rows [{k}]" if tail else "")
        ),
    )
    return ctx.render(
        "conv_2d_float_blocks.c.j2",
        g=g,
        describe=g.describe(),
        input=ctx.arg(op.inputs[0]),
        output=ctx.arg(op.outputs[0]),
        weights=weights,
        bias=ctx.arg(op.inputs[2]) if bias is not None else None,
        k=k,
        nb=nb,
        tail=tail,
        OB=BLOCK_CHANNELS,
        PX=BLOCK_PIXELS,
        **clip_values(g),
        **float_values(op),
        isa=plan_.isa,
    )
