"""More ONNX operators -> IR operators (issue 36): activations, reductions, slicing, padding, Resize and
ConvTranspose, for ``onnx_import.py`` (registered into ``onnx_layers.CONVERTERS``).

Each converter keeps the layout of its input where it can: a value living as NHWC (``_Value.nhwc``)
is sliced, padded, split and reduced on its NHWC tensor with the axes moved to NHWC's places.
Arithmetic is written the way ONNX Runtime's CPU kernels compute it (float32, operation by operation),
so that the generated C gives ONNX Runtime's bits where that is possible (docs/onnx.md).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from microcompiler.errors import UnsupportedModelError
from microcompiler.frontend.onnx_resize import resize
from microcompiler.frontend.onnx_values import MLAS_STRIDE_K, _const_input, _out, _Value, check_elements
from microcompiler.ir import Operator

F = np.float32
NCHW_TO_NHWC_AXIS = {0: 0, 1: 3, 2: 1, 3: 2}


def _source(imp, x):
    return imp.nhwc(x) if x.nhwc else imp.plain(x)


def _ir_axis(x, axis: int) -> int:
    return NCHW_TO_NHWC_AXIS[axis] if x.nhwc else axis


def _ints(imp, node, ins, k: int, attrs: dict, name: str, what: str) -> list[int] | None:
    """An int list given as input ``k`` (newer opsets) or as attribute ``name`` (older ones)."""
    if len(ins) > k and ins[k] is not None:
        return [int(v) for v in np.asarray(_const_input(imp, node, ins[k], what)).reshape(-1)]
    if name in attrs:
        return [int(v) for v in attrs[name]]
    return None


def _scale_shift(imp, node, x, source, alpha: float, beta: float) -> int:
    """MUL by alpha then ADD beta, float32 step by step (no fused multiply-add, as ONNX Runtime)."""
    shape = imp.tensors[source].shape
    a = imp.const(np.array(alpha, dtype=F), "alpha")
    scaled = imp.emit("MUL", [source, a], shape, {"activation": "NONE"}, node.output[0] + "_scaled")
    b = imp.const(np.array(beta, dtype=F), "beta")
    options = {"activation": "NONE", "pot_scale_int16": True}
    return imp.emit("ADD", [scaled, b], shape, options, node.output[0] + "_shifted")


def leaky_relu(imp, node, ins, attrs):
    x = ins[0]
    imp.float_input(x, node)
    alpha = float(F(attrs.get("alpha", 0.01)))
    return [_out(imp, "LEAKY_RELU", [_source(imp, x)], x.shape, {"alpha": alpha}, node, x.nhwc)]


def hard_sigmoid(imp, node, ins, attrs):
    """max(0, min(1, alpha * x + beta)); HardSwish is x * HardSigmoid(x) with alpha 1/6, beta 0.5 (ONNX's
    function body, which ONNX Runtime runs)."""
    x = ins[0]
    imp.float_input(x, node)
    swish = node.op_type == "HardSwish"
    alpha = float(F(1.0 / 6.0)) if swish else float(F(attrs.get("alpha", 0.2)))
    beta = 0.5 if swish else float(F(attrs.get("beta", 0.5)))
    source = _source(imp, x)
    shape = imp.tensors[source].shape
    value = _scale_shift(imp, node, x, source, alpha, beta)
    for op, bound in (("MINIMUM", 1.0), ("MAXIMUM", 0.0)):  # ONNX Runtime: min(., 1), then max(., 0)
        limit = imp.const(np.array(bound, dtype=F), "bound")
        if op == "MAXIMUM" and not swish:
            return [_out(imp, op, [value, limit], x.shape, {}, node, x.nhwc)]
        value = imp.emit(op, [value, limit], shape, {}, f"{node.output[0]}_{op.lower()}")
    return [_out(imp, "MUL", [source, value], x.shape, {"activation": "NONE"}, node, x.nhwc)]


def reduce_mean(imp, node, ins, attrs):
    x = ins[0]
    imp.float_input(x, node)
    rank = len(x.shape)
    axes = _ints(imp, node, ins, 1, attrs, "axes", "axes")
    if not axes:
        if int(attrs.get("noop_with_empty_axes", 0)):
            return [x]
        axes = list(range(rank))
    axes = sorted({a % rank for a in axes})
    keep = bool(int(attrs.get("keepdims", 1)))
    shape = (
        tuple(1 if k in axes else d for k, d in enumerate(x.shape))
        if keep
        else tuple(d for k, d in enumerate(x.shape) if k not in axes)
    )
    exact = _ort_reduce(imp, node, x, axes, keep, shape)
    if exact is not None:
        return [exact]
    use_nhwc = x.nhwc
    if x.nhwc and not keep:  # the kept dimensions must come out in ONNX's order
        kept = [k for k in range(4) if k not in axes]
        use_nhwc = [k for k in (0, 2, 3, 1) if k in kept] == kept
    source = imp.nhwc(x) if use_nhwc else imp.plain(x)
    ir_axes = [NCHW_TO_NHWC_AXIS[a] for a in axes] if use_nhwc else axes
    const = imp.const(np.array(ir_axes, dtype=np.int32), "axes", "int32")
    return [_out(imp, "MEAN", [source, const], shape, {"keep_dims": keep}, node, use_nhwc and keep)]


def _ort_reduce(imp, node, x, axes: list[int], keep: bool, shape: tuple[int, ...]):
    """ReduceMean in ONNX Runtime's order (docs/onnx.md): its reduction drops the dimensions of 1 and
    sorts the rest into kept (K) and reduced (R) blocks. KR (trailing axes): each output's values a row
    summed by Eigen's SSE reduction, whose split depends on the row's offset from the 16-byte aligned
    buffer; RK (leading axes): in order from the first; KRK (a middle block): a GEMM of a row of ones,
    MLAS's M=1 kernel (groups of 4); RKR (reduced, kept, reduced: a batch above 1): per kept value the
    Eigen sums of its rows added in order from 0. MEAN with ``ort_reduce`` [mode, outputs, values, output
    stride, value stride] in the IR tensor's layout (RKR: [mode, outputs, values, row length, rows]); None
    for the others."""
    flags = [k in axes for k, d in enumerate(x.shape) if d > 1]
    values = int(np.prod([x.shape[k] for k in axes]))
    outputs = int(np.prod(x.shape)) // values
    runs = [f for k, f in enumerate(flags) if k == 0 or f != flags[k - 1]]
    if values == 1 or runs not in ([True], [False, True], [True, False], [False, True, False], [True, False, True]):
        return None
    if runs == [True, False, True]:
        return _ort_reduce_rkr(imp, node, x, axes, shape, flags, outputs, values)
    mode = {(False, True): "kr", (True, False): "rk", (False, True, False): "krk"}.get(tuple(runs), "kr")
    nhwc = x.nhwc and x.shape[0] == 1 and axes in ([2, 3], [1]) and x.shape[1] > 1 and mode != "krk"
    if nhwc:  # the NHWC tensor as it is: a channel's pixels C apart, or a pixel's channels in a row
        c = x.shape[1]
        js, rs = (1, c) if axes == [2, 3] else (c, 1)
        options = {"keep_dims": keep, "ort_reduce": [mode, outputs, values, js, rs]}
        const = imp.const(np.array([NCHW_TO_NHWC_AXIS[a] for a in axes], dtype=np.int32), "axes", "int32")
        return _out(imp, "MEAN", [imp.nhwc(x), const], shape, options, node, keep)
    inner = int(np.prod(x.shape[max(axes) + 1 :]))  # KRK: the values of one output are this far apart
    rows = {"kr": (outputs, values), "rk": (values, outputs), "krk": (outputs // inner, values, inner)}[mode]
    js, rs = {"kr": (values, 1), "rk": (1, outputs), "krk": (inner, inner)}[mode]
    source = imp.emit("RESHAPE", [imp.plain(x), imp.shape_const(rows)], rows, {}, f"{node.output[0]}_rows")
    const = imp.const(np.array([0 if mode == "rk" else 1], dtype=np.int32), "axes", "int32")
    options = {"keep_dims": False, "ort_reduce": [mode, outputs, values, js, rs]}
    reduced = tuple(d for k, d in enumerate(rows) if k != (0 if mode == "rk" else 1))
    mean = imp.emit("MEAN", [source, const], reduced, options, f"{node.output[0]}_mean")
    return _Value(shape, tensor=imp.emit("RESHAPE", [mean, imp.shape_const(shape)], shape, {}, node.output[0]))


def _ort_reduce_rkr(imp, node, x, axes, shape, flags, outputs: int, values: int):
    """RKR: the ONNX tensor as (d0, d1, d2) (the dimensions of 1 dropped), MEAN over axes 0 and 2."""
    dims = [d for d in x.shape if d > 1]
    first_kept = flags.index(False)
    d0 = int(np.prod(dims[:first_kept]))
    d2 = values // d0
    rows = (d0, outputs, d2)
    source = imp.emit("RESHAPE", [imp.plain(x), imp.shape_const(rows)], rows, {}, f"{node.output[0]}_rows")
    const = imp.const(np.array([0, 2], dtype=np.int32), "axes", "int32")
    options = {"keep_dims": False, "ort_reduce": ["rkr", outputs, values, d2, d0]}
    mean = imp.emit("MEAN", [source, const], (outputs,), options, f"{node.output[0]}_mean")
    return _Value(shape, tensor=imp.emit("RESHAPE", [mean, imp.shape_const(shape)], shape, {}, node.output[0]))


def split(imp, node, ins, attrs):
    x = ins[0]
    imp.float_input(x, node)
    rank = len(x.shape)
    axis = int(attrs.get("axis", 0)) % rank
    n = len(node.output)
    sizes = _ints(imp, node, ins, 1, attrs, "split", "split sizes")
    extent = x.shape[axis]
    if sizes is None:
        part = -(-extent // n)  # num_outputs (opset 18): the last part may be smaller
        sizes = [min(part, extent - k * part) for k in range(n)]
    if len(sizes) != n or sum(sizes) != extent or min(sizes) < 1:
        raise UnsupportedModelError(f"{imp.where(node)}: split sizes {sizes} do not cut {extent} into {n} parts")
    source = _source(imp, x)
    ir_shape = imp.tensors[source].shape
    ir_axis = _ir_axis(x, axis)
    values, outputs = [], []
    for name, size in zip(node.output, sizes):
        shape = list(x.shape)
        shape[axis] = size
        part = list(ir_shape)
        part[ir_axis] = size
        outputs.append(imp.add_tensor(name, tuple(part), "float32"))
        values.append(_Value(tuple(shape), tensor=outputs[-1], nhwc=x.nhwc))
    sizes_t = imp.const(np.array(sizes, dtype=np.int32), "sizes", "int32")
    axis_t = imp.const(np.array([ir_axis], dtype=np.int32), "axis", "int32")
    inputs = [source, sizes_t, axis_t]
    imp.operators.append(Operator("SPLIT_V", inputs, outputs, {"num_splits": n}, len(imp.operators)))
    return values


def slice_(imp, node, ins, attrs):
    x = ins[0]
    imp.float_input(x, node)
    rank = len(x.shape)
    starts = _ints(imp, node, ins, 1, attrs, "starts", "starts") or []
    ends = _ints(imp, node, ins, 2, attrs, "ends", "ends") or []
    axes = _ints(imp, node, ins, 3, attrs, "axes", "axes") or list(range(len(starts)))
    steps = _ints(imp, node, ins, 4, {}, "", "steps") or [1] * len(starts)
    if not (len(starts) == len(ends) == len(axes) == len(steps)) or 0 in steps:
        raise UnsupportedModelError(f"{imp.where(node)}: starts, ends, axes and steps do not fit together")
    begin, end, stride, shape = [0] * rank, list(x.shape), [1] * rank, list(x.shape)
    end_mask = 0
    for s, e, a, st in zip(starts, ends, axes, steps):
        a %= rank
        lo, hi, step = slice(s, e, st).indices(x.shape[a])  # ONNX clamps as Python's slices do
        shape[a] = len(range(lo, hi, step))
        begin[a], end[a], stride[a] = lo, hi, step
        if hi < 0:  # a negative step through index 0
            end_mask |= 1 << (_ir_axis(x, a) if rank == 4 else a)
    if min(shape) < 1:
        raise UnsupportedModelError(f"{imp.where(node)} makes an empty tensor {shape}; not supported")
    if rank > 4:
        raise UnsupportedModelError(f"{imp.where(node)} slices a {rank}-D value; microcompiler slices up to 4-D")
    source = _source(imp, x)
    if x.nhwc:
        order = (0, 2, 3, 1)
        begin, end, stride = ([v[k] for k in order] for v in (begin, end, stride))
    end = [v if v >= 0 else 0 for v in end]
    tensors = [imp.const(np.array(v, dtype=np.int32), name, "int32") for v, name in ((begin, "begin"), (end, "end"))]
    tensors.append(imp.const(np.array(stride, dtype=np.int32), "strides", "int32"))
    options = dict(begin_mask=0, end_mask=end_mask, ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0)
    options["offset"] = False
    return [_out(imp, "STRIDED_SLICE", [source, *tensors], tuple(shape), options, node, x.nhwc)]


def pad(imp, node, ins, attrs):
    x = ins[0]
    imp.float_input(x, node)
    rank = len(x.shape)
    pads = _ints(imp, node, ins, 1, attrs, "pads", "pads")
    if pads is None or len(pads) % 2:
        raise UnsupportedModelError(f"{imp.where(node)}: its pads must be a constant of even length")
    axes = _ints(imp, node, ins, 3, {}, "", "axes") or list(range(len(pads) // 2))
    if len(axes) * 2 != len(pads):
        raise UnsupportedModelError(f"{imp.where(node)}: {len(pads)} pads for {len(axes)} axes")
    pairs = [[0, 0] for _ in range(rank)]
    for k, a in enumerate(axes):
        pairs[a % rank] = [pads[k], pads[k + len(axes)]]
    mode = attrs.get("mode", "constant")
    if min(min(p) for p in pairs) < 0 or mode not in ("constant", "reflect"):
        raise UnsupportedModelError(
            f"{imp.where(node)}: mode {mode!r} with pads {pads}; microcompiler imports Pad with non-negative pads, "
            "mode constant or reflect (edge and wrap: not supported yet)"
        )
    shape = tuple(d + a + b for d, (a, b) in zip(x.shape, pairs))
    if mode == "reflect" and any(max(p) >= d for p, d in zip(pairs, x.shape)):
        raise UnsupportedModelError(f"{imp.where(node)}: reflect pads {pads} reach past the input {list(x.shape)}")
    source = _source(imp, x)
    ir_pairs = [pairs[k] for k in (0, 2, 3, 1)] if x.nhwc else pairs
    paddings = imp.const(np.array(ir_pairs, dtype=np.int32), "paddings", "int32")
    if mode == "reflect":
        return [_out(imp, "MIRROR_PAD", [source, paddings], shape, {"mode": 0}, node, x.nhwc)]
    value = ins[2] if len(ins) > 2 else None
    if value is not None:
        fill = F(np.asarray(_const_input(imp, node, value, "constant_value")).reshape(-1)[0])
        value_t = imp.const(np.array([fill], dtype=F), "pad_value")
        return [_out(imp, "PADV2", [source, paddings, value_t], shape, {}, node, x.nhwc)]
    return [_out(imp, "PAD", [source, paddings], shape, {}, node, x.nhwc)]


def conv_transpose(imp, node, ins, attrs):
    """ONNX Runtime's ConvTranspose: a GEMM (MLAS: fused multiply-add chains over the input channels in blocks
    of 256) into columns [pixel, (row, column, channel)], then col2im: each output adds its kernel taps in
    (row, column) order to 0, then the bias. Here: FULLY_CONNECTED with ``fma_block``, one GATHER of the
    columns per tap (a zero where the tap does not reach), ADDs in that order."""
    x = ins[0]
    imp.float_input(x, node)
    w = _const_input(imp, node, ins[1], "weights").astype(F)
    bias = _const_input(imp, node, ins[2], "bias").astype(F) if len(ins) > 2 and ins[2] else None
    if w.ndim != 4 or len(x.shape) != 4 or w.shape[0] != x.shape[1] or x.shape[0] != 1:
        raise UnsupportedModelError(f"{imp.where(node)}: weights {list(w.shape)} do not fit input {list(x.shape)}")
    c, m, kh, kw = w.shape
    strides = [int(s) for s in attrs.get("strides", [1, 1])]
    if int(attrs.get("group", 1)) != 1 or [int(d) for d in attrs.get("dilations", [1, 1])] != [1, 1]:
        raise UnsupportedModelError(f"{imp.where(node)}: grouped or dilated ConvTranspose is not supported yet")
    if "output_shape" in attrs or attrs.get("auto_pad", "NOTSET") != "NOTSET" or min(strides) < 1:
        raise UnsupportedModelError(
            f"{imp.where(node)}: ConvTranspose with output_shape or auto_pad is not supported yet; export explicit pads"
        )
    pads = [int(p) for p in attrs.get("pads", [0, 0, 0, 0])]
    extra = [int(p) for p in attrs.get("output_padding", [0, 0])]
    if bias is not None and bias.shape != (m,):
        raise UnsupportedModelError(f"{imp.where(node)}: bias {list(bias.shape)} does not fit {m} output channels")
    h, wd = x.shape[2], x.shape[3]
    out = [
        (h - 1) * strides[0] + kh + extra[0] - pads[0] - pads[2],
        (wd - 1) * strides[1] + kw + extra[1] - pads[1] - pads[3],
    ]
    if min(pads) < 0 or min(extra) < 0 or min(out) < 1 or len(pads) != 4:
        raise UnsupportedModelError(f"{imp.where(node)}: pads {pads} with output_padding {extra} are not supported")
    name = node.output[0]
    check_elements(name, (1, m, *out))  # before the tap tables, which are as large
    check_elements(name, (h * wd, kh * kw * m))
    taps = kh * kw * m
    rows = imp.emit("RESHAPE", [imp.nhwc(x), imp.shape_const((h * wd, c))], (h * wd, c), {}, name + "_rows")
    weights = np.ascontiguousarray(np.transpose(w, (2, 3, 1, 0)).reshape(taps, c))  # [(row, column, M), C]
    options = dict(activation="NONE", keep_num_dims=False, weights_format=0, fma_block=MLAS_STRIDE_K)
    cols = imp.emit(
        "FULLY_CONNECTED", [rows, imp.const(weights, "weights"), -1], (h * wd, taps), options, name + "_cols"
    )
    flat = imp.emit("RESHAPE", [cols, imp.shape_const((h * wd * taps,))], (h * wd * taps,), {}, name + "_flat")
    zero = h * wd * taps  # one zero after the columns: the taps that do not reach an output
    paddings = imp.const(np.array([[0, 1]], dtype=np.int32), "paddings", "int32")
    flat = imp.emit("PAD", [flat, paddings], (zero + 1,), {}, name + "_zero")
    oy = np.arange(out[0])[:, None] + pads[0]
    ox = np.arange(out[1])[None, :] + pads[1]
    ir_shape = (1, out[0], out[1], m)
    add = {"activation": "NONE", "pot_scale_int16": True}
    total = -1
    for i in range(kh):
        for j in range(kw):
            y, rem_y = np.divmod(oy - i, strides[0])
            xx, rem_x = np.divmod(ox - j, strides[1])
            hit = (rem_y == 0) & (rem_x == 0) & (y >= 0) & (y < h) & (xx >= 0) & (xx < wd)
            base = ((y * wd + xx) * taps + (i * kw + j) * m) * hit + zero * ~hit
            index = base[:, :, None] + np.arange(m)[None, None, :] * hit[:, :, None]
            indices = imp.const(index.reshape(ir_shape).astype(np.int32), "taps", "int32")
            tap = imp.emit("GATHER", [flat, indices], ir_shape, {"axis": 0, "batch_dims": 0}, f"{name}_tap{i}_{j}")
            total = tap if total < 0 else imp.emit("ADD", [total, tap], ir_shape, add, f"{name}_sum{i}_{j}")
    shape = (1, m, out[0], out[1])
    if bias is None:
        return [_Value(shape, tensor=total, nhwc=True)]
    return [_out(imp, "ADD", [total, imp.const(bias, "bias")], shape, add, node, True)]


CONVERTERS: dict[str, Callable] = {
    "LeakyRelu": leaky_relu,
    "HardSigmoid": hard_sigmoid,
    "HardSwish": hard_sigmoid,
    "ReduceMean": reduce_mean,
    "Split": split,
    "Slice": slice_,
    "Pad": pad,
    "ConvTranspose": conv_transpose,
    "Resize": resize,
}
