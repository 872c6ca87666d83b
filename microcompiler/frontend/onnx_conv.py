"""A float Conv (group 1) in ONNX Runtime's summation order: im2col + FULLY_CONNECTED with ``fma_block``.

With graph optimizations on, ONNX Runtime (x86-64 with AVX-512) runs a 2-D Conv as MLAS's NCHWc
convolution. Measured against ONNX Runtime 1.32.0 on this host (tests/test_onnx.py), each output is:

* fewer than 16 input channels (MLAS's NCHW kernel): per input channel, a fused multiply-add chain
  over the kernel rows and columns, starting at 0; the chains added to the output one after another;
* 16 or more (the NCHWc kernel, blocks of 16 channels): per block of 16 input channels, one chain
  over (kernel row, kernel column, channel of the block); the chains added in turn;
* a 1x1 convolution with 16 or more input channels (the pointwise kernel): chains of 128 channels;
* the bias added last (then the activation).

That is a FULLY_CONNECTED over the input patches ("im2col") whose depth is ordered that way, with
``fma_block`` the chain's length and no bias, then an ADD of the bias. The patches are one GATHER of
the (zero-padded) input with a constant index table; a 1x1 convolution with stride 1 needs none (its
patches are the NHWC input itself). Input channels are padded to whole blocks of 16 with zeros (a
fused multiply-add of 0 leaves the chain as it is, as MLAS's zero-padded blocks do).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from microcompiler.frontend.onnx_values import _out

NCHWC_BLOCK = 16  # MLAS's NCHWc block on AVX-512 (MlasNchwcGetBlockSize)
POINTWISE_CHAIN = 128  # input channels per pointwise kernel call
PATCH_LIMIT = 1 << 16  # elements of the im2col tensor: above, the CONV_2D kernel (docs/onnx.md)


def mlas_order(c: int, kh: int, kw: int) -> tuple[list[tuple[int, int, int]], int]:
    """(the depth's (channel, row, column) terms in MLAS's order, padded channels as -1; the chain length)."""
    if kh == kw == 1 and c >= NCHWC_BLOCK:
        return [(ch, 0, 0) for ch in range(c)], POINTWISE_CHAIN
    if c < NCHWC_BLOCK:
        return [(ch, i, j) for ch in range(c) for i in range(kh) for j in range(kw)], kh * kw
    padded = -(-c // NCHWC_BLOCK) * NCHWC_BLOCK
    terms = [
        (ch if ch < c else -1, i, j)
        for c0 in range(0, padded, NCHWC_BLOCK)
        for i in range(kh)
        for j in range(kw)
        for ch in range(c0, c0 + NCHWC_BLOCK)
    ]
    return terms, kh * kw * NCHWC_BLOCK


def exact_conv(imp: Any, node: Any, x: Any, w: np.ndarray, bias: np.ndarray | None, geometry: dict) -> Any:
    """The Conv as im2col + FULLY_CONNECTED (+ ADD of the bias); None when the patches would be too large."""
    m, c, kh, kw = w.shape
    (sh, sw), (dh, dw), (t, left, b, r), (oh, ow) = (geometry[k] for k in ("strides", "dilations", "pads", "out"))
    terms, chain = mlas_order(c, kh, kw)
    n, h, wd = x.shape[0], x.shape[2], x.shape[3]
    plain_1x1 = kh == kw == 1 and (sh, sw, t, left, b, r) == (1, 1, 0, 0, 0, 0) and len(terms) == c
    if n != 1 or (not plain_1x1 and oh * ow * len(terms) > PATCH_LIMIT):
        return None
    weights = np.zeros((m, len(terms)), dtype=np.float32)
    for k, (ch, i, j) in enumerate(terms):
        if ch >= 0:
            weights[:, k] = w[:, ch, i, j]
    source = imp.nhwc(x)
    name = node.output[0]
    if plain_1x1:
        patches = imp.emit("RESHAPE", [source, imp.shape_const((h * wd, c))], (h * wd, c), {}, name + "_patches")
    else:
        hp, wp, cp = h + t + b, wd + left + r, c + 1  # one zero channel for the padding terms
        pads = imp.const(np.array([[0, 0], [t, b], [left, r], [0, 1]], dtype=np.int32), "paddings", "int32")
        padded = imp.emit("PAD", [source, pads], (1, hp, wp, cp), {}, name + "_padded")
        flat = imp.emit("RESHAPE", [padded, imp.shape_const((hp * wp * cp,))], (hp * wp * cp,), {}, name + "_flat")
        index = np.empty((oh * ow, len(terms)), dtype=np.int32)
        for k, (ch, i, j) in enumerate(terms):
            rows = np.arange(oh)[:, None] * sh + i * dh
            cols = np.arange(ow)[None, :] * sw + j * dw
            index[:, k] = ((rows * wp + cols) * cp + (ch if ch >= 0 else c)).reshape(-1)
        indices = imp.const(index, "im2col", "int32")
        patches = imp.emit("GATHER", [flat, indices], index.shape, {"axis": 0, "batch_dims": 0}, name + "_patches")
    options = dict(activation="NONE", keep_num_dims=False, weights_format=0, fma_block=chain)
    rows = imp.emit(
        "FULLY_CONNECTED", [patches, imp.const(weights, "weights"), -1], (oh * ow, m), options, name + "_sum"
    )
    if bias is not None:
        add = {"activation": "NONE", "pot_scale_int16": True}
        rows = imp.emit("ADD", [rows, imp.const(bias.reshape(m), "bias")], (oh * ow, m), add, name + "_bias")
    shape = (1, m, oh, ow)
    return _out(imp, "RESHAPE", [rows, imp.shape_const((1, oh, ow, m))], shape, {}, node, True)
