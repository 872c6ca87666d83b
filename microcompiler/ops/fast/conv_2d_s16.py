"""CONV_2D, int16x8 (int16 activations, int8 weights), one group: the "int16-pixel" fast kernel
(template conv_2d_s16.c.j2). Per output pixel the receptive field (kernel_h x kernel_w x channels
int16, padding taps 0: int16 activations have zero point 0) is gathered into an int16 row of the
kernel scratch, zero-padded to a multiple of 4; each block of 4 output channels is then one pass
over the row (mc_dot4_s16: the row's pairs as they lie in memory, the weights stored as int16 pairs
interleaved for the 4 channels: 2 loads + 8 SMLAD per 16 MACs), the output channels % 4 one by one
(mc_dot1_s16). The 32-bit partial sums are proven exact and added into int64 (ops/fast/s16.py), so
the result is TFLM's int64 accumulation bit for bit. The plan is Conv2D.kernel_plan in ops/conv_2d.py.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.fast import s16
from microcompiler.ops.plan import KernelPlan, Variant, dsp_or_c
from microcompiler.ops.quant import activation_range, conv_multipliers

INT16_PIXEL = Variant("int16-pixel")


def plan(g, features) -> KernelPlan:
    return KernelPlan.of(INT16_PIXEL, dsp_or_c(features), scratch_bytes=4 * _words(g), out_channels=4)


def _words(g) -> int:
    """Pair words of the gathered row: K = kernel_h * kernel_w * channels rounded up to 4 taps."""
    return -(-g.k_h * g.k_w * g.in_c // 4) * 2


def emit(op, graph, ctx, plan_: KernelPlan, g, bias) -> str:
    x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    w_rows = w.data.astype(np.int8).reshape(g.out_c, -1)  # [oc][ky][kx][c]
    words = _words(g)
    mult, shift = conv_multipliers(x, w, y, g.out_c)
    lo, hi = activation_range(op.options["activation"], y)
    e = s16.epilogue(ctx, bias, mult, shift, lo, hi, w_rows)
    chunk = s16.chunk_words(w_rows, words, e.wide)
    ctx.note(chunk=2 * chunk if chunk < words else 0)
    weights = ctx.const(
        "weights",
        s16.pack_rows(w_rows, words),
        comment=(
            f"weights [{g.out_c} output channels][{2 * words} taps (ky, kx, c), zero-padded] as int16 pairs (low half "
            "first), the channels in blocks of 4 interleaved per pair, then the channels % 4"
        ),
    )
    return ctx.render(
        "conv_2d_s16.c.j2",
        g=g,
        describe=g.describe(),
        input=ctx.arg(op.inputs[0]),
        output=ctx.arg(op.outputs[0]),
        weights=weights,
        e=e,
        words=words,
        chunk=chunk,
        k=g.k_h * g.k_w * g.in_c,
        scratch=ctx.scratch(plan_.scratch),
        isa=plan_.isa,
        full=g.out_c // 4 * 4,
    )
