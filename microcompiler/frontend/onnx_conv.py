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

from microcompiler.frontend.onnx_values import _out, _Value

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


def mlas_chain_channels(c: int, kh: int, kw: int) -> int:
    """The input channels of one fused multiply-add chain in mlas_order (for CONV_2D's ``fma_blocks``):
    each chain runs over (kernel row, kernel column, channel of its block)."""
    if kh == kw == 1 and c >= NCHWC_BLOCK:
        return POINTWISE_CHAIN
    return 1 if c < NCHWC_BLOCK else NCHWC_BLOCK


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


def _fold_shape(c: np.ndarray, w: np.ndarray, allow_scalar: bool) -> np.ndarray | None:
    """A Mul/Add constant ONNX Runtime's ConvMulFusion/ConvAddFusion folds into a Conv with weights
    ``w`` [M, ...]: one value per output channel as [M, 1, 1] or [1, M, 1, 1] (or a scalar for Mul),
    as an [M] vector (a scalar stays 0-D); None when its shape is not one of those."""
    if c.ndim == 0:
        return c if allow_scalar else None
    axis = {w.ndim: 1, w.ndim - 1: 0}.get(c.ndim)
    if axis is None or c.shape[axis] != w.shape[0] or any(d != 1 for i, d in enumerate(c.shape) if i != axis):
        return None
    return c.reshape(-1)


def fold_conv_mul_add(imp) -> None:
    """Fold a Mul, then an Add, by per-channel constants (tf2onnx's BatchNormalization after a depthwise
    Conv) into the float Conv before it, as ONNX Runtime's ConvMulFusion and ConvAddFusion do (its
    default session runs them): the Conv's only reader, the constant its second input; weights times the
    Mul's constant and bias times it, then bias plus the Add's, each in float32. The folded node becomes
    the Conv's output (the Conv takes its output name)."""
    g = imp.model.graph
    nodes = list(g.node)
    outputs = {o.name for o in g.output}
    producer = {o: n for n in nodes for o in n.output}
    dropped: set[int] = set()
    for node in nodes:
        if node.op_type not in ("Mul", "Add") or len(node.input) != 2 or node.domain not in ("", "ai.onnx"):
            continue
        conv = producer.get(node.input[0])
        if conv is None or conv.op_type != "Conv" or conv.output[0] in outputs or id(conv) in dropped:
            continue
        if imp.readers.get(conv.output[0], 0) != 1 or node.input[1] == node.input[0]:
            continue
        const = imp.values.get(node.input[1])
        params = [imp.values.get(i) for i in conv.input[1:]]
        if const is None or const.const is None or any(v is None or v.const is None for v in params):
            continue
        w = params[0].const
        c = const.const
        if w.dtype != np.float32 or c.dtype != np.float32 or w.ndim <= 2:
            continue
        c = _fold_shape(c, w, node.op_type == "Mul")
        b = params[1].const if len(params) > 1 else None
        if c is None or (b is not None and (b.dtype != np.float32 or b.shape != (w.shape[0],))):
            continue
        name = f"{conv.output[0]}_{node.op_type.lower()}_folded"
        if node.op_type == "Mul":
            scale = np.broadcast_to(c, (w.shape[0],)).reshape((-1,) + (1,) * (w.ndim - 1))
            imp.values[name + "_w"] = _Value(w.shape, (w * scale).astype(np.float32))
            conv.input[1] = name + "_w"
            if b is not None:
                imp.values[name + "_b"] = _Value(b.shape, (b * c).astype(np.float32))
                conv.input[2] = name + "_b"
        else:
            new_b = (b + c).astype(np.float32) if b is not None else np.ascontiguousarray(c, np.float32)
            imp.values[name + "_b"] = _Value(new_b.shape, new_b)
            if len(conv.input) > 2:
                conv.input[2] = name + "_b"
            else:
                conv.input.append(name + "_b")
        imp.readers[conv.output[0]] = 0
        conv.output[0] = node.output[0]
        producer[node.output[0]] = conv
        dropped.add(id(node))
    if dropped:
        kept = [n for n in nodes if id(n) not in dropped]
        del g.node[:]
        g.node.extend(kept)


def find_residual_adds(imp) -> dict[str, tuple[str, int]]:
    """Add output -> (the Conv output it is fused with, which input of the Add that Conv is), where ONNX
    Runtime's NchwcTransformer fuses the Add into the Conv before it (TransformAdd): of the Add's two
    inputs, the first made by a group-1 Conv read only by this Add and not fused with an activation; the
    other input (the Conv's "Sum") made by another NCHWc operator."""
    g = imp.model.graph
    producers = {out: n for n in g.node for out in n.output}
    fused: dict[str, tuple[str, int]] = {}
    for node in g.node:
        if node.op_type != "Add" or len(node.input) != 2 or node.domain not in ("", "ai.onnx"):
            continue
        for k in (0, 1):
            conv, other = producers.get(node.input[k]), producers.get(node.input[1 - k])
            if conv is None or other is None or conv.op_type != "Conv" or imp.readers.get(node.input[k]) != 1:
                continue
            group = next((a.i for a in conv.attribute if a.name == "group"), 1)
            w = imp.values.get(conv.input[1]) if len(conv.input) > 1 else None
            dims: tuple[int, ...] = w.const.shape if w is not None and w.const is not None else ()
            if group == 1 and len(dims) == 4 and other.op_type in _NCHWC_MAKERS:
                fused[node.output[0]] = (node.input[k], k)
                break
    return fused


_NCHWC_MAKERS = frozenset({"Conv", "Relu", "Add", "MaxPool", "AveragePool", "GlobalAveragePool"})


def conv_with_sum(imp, add, conv_node, conv_ins, conv_attrs, total, convert) -> Any:
    """ONNX Runtime's Conv fused with a residual Add (MLAS's NCHWc kernel with a Sum input): the output
    starts at the Sum, each chain of mlas_order (from 0) is added to it in turn, then the bias. Each chain
    is the Conv (``convert``, the float Conv converter) of that chain's input channels alone, without a
    bias: a GATHER of those channels where there are several chains. A last block of fewer than 16
    channels takes the 16 channels that end it, the weights of those before it 0 (a fused multiply-add
    of 0 leaves a chain as it is; MLAS pads the block with zeros after it)."""
    x, wv = conv_ins[0], conv_ins[1]
    w = wv.const.astype(np.float32)
    bias = conv_ins[2].const if len(conv_ins) > 2 and conv_ins[2] else None
    m, c, kh, kw = w.shape
    step = mlas_chain_channels(c, kh, kw)
    acc = imp.nhwc(total)
    add_options = {"activation": "NONE", "pot_scale_int16": True}
    shape: tuple[int, ...] = ()
    for k, c0 in enumerate(range(0, c, step)):
        lo, hi = c0, min(c0 + step, c)
        if hi - lo < NCHWC_BLOCK <= c and step > 1:
            lo = hi - NCHWC_BLOCK
        part = w[:, lo:hi].copy()
        part[:, : c0 - lo] = 0
        source = x
        if hi - lo < c:
            channels = imp.const(np.arange(lo, hi, dtype=np.int32), "channels", "int32")
            ir = (x.shape[0], x.shape[2], x.shape[3], hi - lo)
            name = f"{conv_node.output[0]}_channels{k}"
            gathered = imp.emit("GATHER", [imp.nhwc(x), channels], ir, {"axis": 3, "batch_dims": 0}, name)
            source = _Value((x.shape[0], hi - lo, x.shape[2], x.shape[3]), tensor=gathered, nhwc=True)
        chain_node = type(conv_node)()
        chain_node.CopyFrom(conv_node)
        chain_node.output[0] = f"{conv_node.output[0]}_chain{k}"
        chain = convert(imp, chain_node, [source, _Value(part.shape, const=part)], conv_attrs)[0]
        shape = chain.shape
        ir_shape = (shape[0], shape[2], shape[3], shape[1])
        acc = imp.emit("ADD", [acc, imp.nhwc(chain)], ir_shape, add_options, f"{add.output[0]}_residual{k}")
    if bias is not None:
        acc = imp.emit(
            "ADD", [acc, imp.const(bias.reshape(m).astype(np.float32), "bias")], ir_shape, add_options, add.output[0]
        )
    return _Value(shape, tensor=acc, nhwc=True)
