"""ONNX operators -> IR operators (the TFLite kinds the kernels implement), for ``onnx_import.py``.

Each converter takes the importer, the node, its input values and attributes and returns the values
of its outputs. Spatial operators (Conv, pools, BatchNormalization, GlobalAveragePool) work on NHWC
tensors; elementwise ones keep whatever layout their input has; the rest see ONNX's layout.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from microcompiler.errors import UnsupportedModelError, printable
from microcompiler.frontend import onnx_conv, onnx_more, onnx_rnn
from microcompiler.frontend.onnx_values import MLAS_STRIDE_K, _const_input, _out, _Value  # noqa: F401

IDENTITY = frozenset({"Identity", "Dropout"})
# folded at import when every input is a constant (shape arithmetic); refused on computed values
FOLD_ONLY = frozenset(
    "Constant Shape Gather Cast Slice Squeeze Unsqueeze ConstantOfShape Range Equal Where Expand ReduceProd "
    "Floor Ceil Sqrt Pow Neg Min Max Size".split()
)


def _spatial_pads(imp, node, attrs, in_hw, kernel, strides, dilations) -> tuple[list[int], list[int]]:
    """(pads [top, left, bottom, right], output [h, w]) as ONNX computes them."""
    auto = attrs.get("auto_pad", "NOTSET")
    pads = [0, 0, 0, 0]
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        for k in range(2):
            out = -(-in_hw[k] // strides[k])
            total = max((out - 1) * strides[k] + (kernel[k] - 1) * dilations[k] + 1 - in_hw[k], 0)
            small = total // 2
            pads[k], pads[k + 2] = (small, total - small) if auto == "SAME_UPPER" else (total - small, small)
    elif auto == "NOTSET":
        pads = [int(p) for p in attrs.get("pads", pads)]
    elif auto != "VALID":
        raise UnsupportedModelError(f"{imp.where(node)} has auto_pad {auto!r}")
    if len(pads) != 4 or min(pads) < 0:
        raise UnsupportedModelError(f"{imp.where(node)} has pads {pads}; expected 4 non-negative values (2-D)")
    out = []
    for k in range(2):
        span = in_hw[k] + pads[k] + pads[k + 2] - ((kernel[k] - 1) * dilations[k] + 1)
        if span < 0:
            raise UnsupportedModelError(f"{imp.where(node)}: the kernel is larger than the padded input")
        out.append(span // strides[k] + 1)
    return pads, out


def _tflite_padding(in_hw, kernel, strides, dilations, pads, out) -> str | None:
    """'VALID' or 'SAME' when TFLite's padding of that name is exactly ``pads``, else None."""
    if pads == [0, 0, 0, 0]:
        return "VALID"
    same = []
    for k in range(2):
        want = -(-in_hw[k] // strides[k])
        total = max((want - 1) * strides[k] + (kernel[k] - 1) * dilations[k] + 1 - in_hw[k], 0)
        same.append((total // 2, total - total // 2, want))
    if all(pads[k] == same[k][0] and pads[k + 2] == same[k][1] and out[k] == same[k][2] for k in range(2)):
        return "SAME"
    return None


def _window(imp, node, attrs, x, kernel):
    rank = len(x.shape)
    if rank != 4 or len(kernel) != 2:
        raise UnsupportedModelError(f"{imp.where(node)} works on a {rank}-D input; microcompiler imports 2-D (NCHW)")
    strides = [int(s) for s in attrs.get("strides", [1, 1])]
    dilations = [int(d) for d in attrs.get("dilations", [1, 1])]
    if min(strides + dilations) < 1 or len(strides) != 2 or len(dilations) != 2:
        raise UnsupportedModelError(f"{imp.where(node)} has strides {strides} / dilations {dilations}")
    in_hw = [x.shape[2], x.shape[3]]
    pads, out = _spatial_pads(imp, node, attrs, in_hw, kernel, strides, dilations)
    return in_hw, strides, dilations, pads, out


def conv(imp, node, ins, attrs):
    x, wv = ins[0], ins[1]
    imp.float_input(x, node)
    w = _const_input(imp, node, wv, "weights").astype(np.float32)
    bias = _const_input(imp, node, ins[2], "bias").astype(np.float32) if len(ins) > 2 and ins[2] else None
    if w.ndim != 4 or len(x.shape) != 4:
        raise UnsupportedModelError(f"{imp.where(node)} is a {w.ndim - 2}-D convolution; microcompiler imports 2-D")
    m, cg, kh, kw = w.shape
    c = x.shape[1]
    group = int(attrs.get("group", 1))
    if group < 1 or c != cg * group or m % group or (bias is not None and bias.shape != (m,)):
        raise UnsupportedModelError(f"{imp.where(node)}: weights {list(w.shape)} do not fit input {list(x.shape)}")
    in_hw, strides, dilations, pads, out = _window(imp, node, attrs, x, [kh, kw])
    if group == 1 and node.output[0] in imp.residual_convs:  # computed with its residual Add (binary)
        imp.deferred[node.output[0]] = (node, ins, attrs)
        return [_Value((x.shape[0], m, out[0], out[1]))]
    if group == 1:  # ONNX Runtime's summation order (onnx_conv.py), unless the patches are too large
        geometry = dict(strides=strides, dilations=dilations, pads=pads, out=out)
        exact = onnx_conv.exact_conv(imp, node, x, w, bias, geometry)
        if exact is not None:
            return [exact]
    padding = _tflite_padding(in_hw, [kh, kw], strides, dilations, pads, out)
    source = imp.nhwc(x)
    if padding is None:  # asymmetric or larger padding: an explicit zero PAD, then VALID
        t, left, b, r = pads
        padded = (x.shape[0], in_hw[0] + t + b, in_hw[1] + left + r, c)
        paddings = imp.const(np.array([[0, 0], [t, b], [left, r], [0, 0]], dtype=np.int32), "paddings", "int32")
        source = imp.emit("PAD", [source, paddings], padded, {}, node.output[0] + "_pad")
        padding = "VALID"
    options = dict(padding=padding, stride_h=strides[0], stride_w=strides[1], activation="NONE")
    options.update(dilation_h=dilations[0], dilation_w=dilations[1])
    b = imp.const(bias, "bias") if bias is not None else -1
    shape = (x.shape[0], m, out[0], out[1])
    if group == 1:  # patches too large: the CONV_2D reference loop in ONNX Runtime's order (onnx_conv.py)
        weights = imp.const(np.transpose(w, (0, 2, 3, 1)), "weights")
        options["fma_blocks"] = onnx_conv.mlas_chain_channels(c, kh, kw)
        return [_out(imp, "CONV_2D", [source, weights, b], shape, options, node, True)]
    if group == c:  # depthwise: [C*M, 1, kh, kw] -> [1, kh, kw, C*M]
        weights = imp.const(np.transpose(w, (1, 2, 3, 0)), "weights")
        options = dict(options, depth_multiplier=m // c)
        if m > c or c % 4 == 0 or c == 1:  # ONNX Runtime's order where it is known (docs/onnx.md): per
            # output a fused multiply-add chain over the kernel rows and columns from 0, then the bias
            options["fma_chain"] = 1
        else:  # ONNX Runtime's plain Conv: im2col and MLAS's M=1 SGEMM kernel (groups of 4 taps; docs/onnx.md)
            options["mlas_m1"] = 1
        return [_out(imp, "DEPTHWISE_CONV_2D", [source, weights, b], shape, options, node, True)]
    raise UnsupportedModelError(
        f"{imp.where(node)} is a grouped convolution (group={group}, {c} input channels); microcompiler imports "
        "group=1 and depthwise (group = input channels) convolutions"
    )


def _convert_conv(imp, node, ins, attrs):
    imp.residual_convs.discard(node.output[0])
    return conv(imp, node, ins, attrs)[0]


def pool(imp, node, ins, attrs):
    x = ins[0]
    if not (node.op_type == "MaxPool" and x.const is None and imp.tensors[x.tensor].dtype == "int8"):
        imp.float_input(x, node)  # an int8 MaxPool (a QOperator model's) keeps its quantization
    if node.op_type.startswith("Global"):
        if len(x.shape) != 4:
            raise UnsupportedModelError(f"{imp.where(node)} works on a {len(x.shape)}-D input; expected NCHW")
        axes = imp.const(np.array([1, 2], dtype=np.int32), "axes", "int32")
        shape = (x.shape[0], x.shape[1], 1, 1)
        options: dict = {"keep_dims": True}
        if x.shape[1] % 16:  # ONNX Runtime's plain (not NCHWc) pool: MLAS's 4-lane plane sums (docs/onnx.md)
            options["ort_lanes"] = 4
        return [_out(imp, "MEAN", [imp.nhwc(x), axes], shape, options, node, True)]
    kernel = [int(k) for k in attrs.get("kernel_shape", [])]
    in_hw, strides, dilations, pads, out = _window(imp, node, attrs, x, kernel)
    if dilations != [1, 1] or int(attrs.get("ceil_mode", 0)) or len(node.output) > 1:
        raise UnsupportedModelError(f"{imp.where(node)}: dilations, ceil_mode and Indices are not supported")
    padding = _tflite_padding(in_hw, kernel, strides, dilations, pads, out)
    if padding is None or (padding == "SAME" and int(attrs.get("count_include_pad", 0))):
        raise UnsupportedModelError(
            f"{imp.where(node)} has pads {pads}; microcompiler imports pools with no padding or TFLite's SAME "
            "padding (auto_pad SAME_UPPER, count_include_pad 0)"
        )
    kind = "MAX_POOL_2D" if node.op_type == "MaxPool" else "AVERAGE_POOL_2D"
    options = dict(padding=padding, stride_h=strides[0], stride_w=strides[1], filter_h=kernel[0], filter_w=kernel[1])
    options["activation"] = "NONE"
    if kind == "AVERAGE_POOL_2D" and x.shape[1] % 16:  # ONNX Runtime's plain (not NCHWc) pool: MLAS's order
        options.update(_mlas_pool_order(in_hw, kernel, strides, pads))
    return [_out(imp, kind, [imp.nhwc(x)], (x.shape[0], x.shape[1], out[0], out[1]), options, node, True)]


def _mlas_pool_order(in_hw, kernel, strides, pads) -> dict:
    """MlasPool's kernel for a float AveragePool over channels that are not a multiple of 16 (docs/onnx.md):
    the window over the whole unpadded image is its global kernel (4 lanes), strides up to 2 across and
    kernels up to 32 its vector kernel (columns first); otherwise its generic loop, the IR kernel's order."""
    if list(kernel) == list(in_hw) and strides == [1, 1] and not any(pads):
        return {"ort_lanes": 4}
    if strides[1] <= 2 and max(kernel) <= 32 and in_hw[1] + pads[1] + pads[3] <= 2045:
        return {"mlas_columns": 1}
    return {}


def gemm(imp, node, ins, attrs):
    a, bv = ins[0], ins[1]
    imp.float_input(a, node)
    b = _const_input(imp, node, bv, "B (weights)").astype(np.float32)
    if int(attrs.get("transA", 0)) or float(attrs.get("alpha", 1.0)) != 1.0 or len(a.shape) != 2 or b.ndim != 2:
        raise UnsupportedModelError(f"{imp.where(node)}: microcompiler imports Gemm with alpha 1, no transA, 2-D A")
    weights = b if int(attrs.get("transB", 0)) else b.T
    n, k = weights.shape
    if a.shape[1] != k:
        raise UnsupportedModelError(f"{imp.where(node)}: A {list(a.shape)} does not fit B {list(b.shape)}")
    bias = -1
    if len(ins) > 2 and ins[2] is not None:
        c = _const_input(imp, node, ins[2], "C (bias)").astype(np.float32) * np.float32(attrs.get("beta", 1.0))
        if c.size != n or c.shape not in ((n,), (1, n)):
            raise UnsupportedModelError(f"{imp.where(node)}: C of shape {list(c.shape)} is not a per-output bias")
        bias = imp.const(c.reshape(n), "bias")
    options = dict(activation="NONE", keep_num_dims=False, weights_format=0, fma_block=MLAS_STRIDE_K)
    w = imp.const(np.ascontiguousarray(weights), "weights")
    return [_out(imp, "FULLY_CONNECTED", [imp.plain(a), w, bias], (a.shape[0], n), options, node, False)]


def matmul(imp, node, ins, attrs):
    a, b = ins
    imp.float_input(a, node)
    if len(a.shape) < 2:
        raise UnsupportedModelError(f"{imp.where(node)}: a 1-D first operand is not supported")
    if b.const is not None and b.const.ndim == 2:
        k, n = b.const.shape
        if a.shape[-1] != k:
            raise UnsupportedModelError(f"{imp.where(node)}: {list(a.shape)} @ {list(b.shape)} do not fit")
        w = imp.const(np.ascontiguousarray(b.const.astype(np.float32).T), "weights")
        options = dict(activation="NONE", keep_num_dims=len(a.shape) > 2, weights_format=0, fma_block=MLAS_STRIDE_K)
        shape = (*a.shape[:-1], n)
        value = _out(imp, "FULLY_CONNECTED", [imp.plain(a), w, -1], shape, options, node, False)
        if imp.readers.get(node.output[0], 0) == 1:
            imp.biasless[node.output[0]] = imp.operators[-1]
        return [value]
    if len(a.shape) != len(b.shape) or len(a.shape) < 3 or a.shape[-1] != b.shape[-2]:
        raise UnsupportedModelError(f"{imp.where(node)}: {list(a.shape)} @ {list(b.shape)} is not supported")
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    shape = (*batch, a.shape[-2], b.shape[-1])
    options = dict(adj_x=False, adj_y=False, asymmetric_quantize_inputs=False)
    return [_out(imp, "BATCH_MATMUL", [imp.plain(a), imp.plain(b)], shape, options, node, False)]


_BINARY = {"Add": "ADD", "Sub": "SUB", "Mul": "MUL", "Div": "DIV"}


def binary(imp, node, ins, attrs):
    a, b = ins
    fused = imp.residual_adds.get(node.output[0]) if node.op_type == "Add" else None
    if fused is not None:  # ONNX Runtime's Conv with a Sum input (onnx_conv.conv_with_sum)
        conv_node, conv_ins, conv_attrs = imp.deferred.pop(fused[0])
        if a.shape == b.shape:
            return [onnx_conv.conv_with_sum(imp, node, conv_node, conv_ins, conv_attrs, ins[1 - fused[1]], conv)]
        ins = list(ins)  # not an Add ONNX Runtime fuses: the Conv on its own
        ins[fused[1]] = _convert_conv(imp, conv_node, conv_ins, conv_attrs)
        a, b = ins
    for v in (a, b):
        imp.float_input(v, node)
    fc = imp.biasless.pop(node.input[0], None) if node.op_type == "Add" else None
    if fc is not None and b.const is not None and b.const.shape in ((a.shape[-1],), (1, a.shape[-1])):
        # MatMul + Add of a per-output constant: one FULLY_CONNECTED with a bias, as ONNX Runtime
        # fuses them into a Gemm (MatMulAddFusion) whose sum starts at the bias
        fc.inputs[2] = imp.const(b.const.reshape(-1), "bias")
        imp.tensors[fc.outputs[0]].name = printable(node.output[0])
        return [_Value(a.shape, tensor=a.tensor)]
    shape = tuple(np.broadcast_shapes(a.shape, b.shape))
    nhwc = len(shape) == 4 and any(v.nhwc for v in (a, b))
    nhwc = nhwc and all(v.const is not None or len(v.shape) == 4 or int(np.prod(v.shape)) == 1 for v in (a, b))
    operands = []
    for v in (a, b):
        if v.const is not None and nhwc and v.const.ndim > 0:
            full = v.const.reshape((1,) * (4 - v.const.ndim) + v.const.shape)
            operands.append(imp.const(np.transpose(full, (0, 2, 3, 1))))
        else:
            operands.append(imp.nhwc(v) if nhwc and v.const is None and len(v.shape) == 4 else imp.plain(v))
    options: dict = {"activation": "NONE"}
    if node.op_type in ("Add", "Sub"):
        options["pot_scale_int16"] = True
    return [_out(imp, _BINARY[node.op_type], operands, shape, options, node, nhwc)]


def unary(imp, node, ins, attrs):
    x = ins[0]
    imp.float_input(x, node)
    kind = {"Relu": "RELU", "Sigmoid": "LOGISTIC", "Tanh": "TANH"}[node.op_type]
    source = imp.nhwc(x) if x.nhwc else imp.plain(x)
    options = {} if kind == "RELU" else {"ort_mlas": 1}  # MLAS's approximations (kernel_ort.h)
    return [_out(imp, kind, [source], x.shape, options, node, x.nhwc)]


def clip(imp, node, ins, attrs):
    x = ins[0]
    imp.float_input(x, node)
    bounds = []
    for k, default in ((1, -np.inf), (2, np.inf)):
        v = ins[k] if len(ins) > k else None
        bounds.append(float(_const_input(imp, node, v, "min/max")) if v is not None else default)
    source = imp.nhwc(x) if x.nhwc else imp.plain(x)
    named = {(0.0, 6.0): "RELU6", (0.0, np.inf): "RELU", (-1.0, 1.0): "RELU_N1_TO_1"}  # RELU_0_TO_1 has no kernel
    kind = named.get((bounds[0], bounds[1]))
    if kind:
        return [_out(imp, kind, [source], x.shape, {}, node, x.nhwc)]
    ir_shape = imp.tensors[source].shape
    for op, bound in (("MAXIMUM", bounds[0]), ("MINIMUM", bounds[1])):
        if np.isfinite(bound):
            limit = imp.const(np.array(bound, dtype=np.float32), "clip")
            source = imp.emit(op, [source, limit], ir_shape, {}, f"{node.output[0]}_{op.lower()}")

    return [_Value(x.shape, tensor=source, nhwc=x.nhwc)]


def softmax(imp, node, ins, attrs):
    x = ins[0]
    imp.float_input(x, node)
    axis = int(attrs.get("axis", -1)) % len(x.shape)
    options = {"beta": 1.0, "ort_softmax": True}  # MLAS's exp and summation order (ops/softmax_logistic.py)
    if x.nhwc and axis == 1:
        return [_out(imp, "SOFTMAX", [imp.nhwc(x)], x.shape, options, node, True)]
    if axis != len(x.shape) - 1:
        raise UnsupportedModelError(f"{imp.where(node)}: Softmax over axis {axis} (not the last) is not supported")
    return [_out(imp, "SOFTMAX", [imp.plain(x)], x.shape, options, node, False)]


def reshape(imp, node, ins, attrs):
    x = ins[0]
    size = int(np.prod(x.shape, dtype=np.int64))
    shape: tuple[int, ...]
    if node.op_type == "Flatten":
        axis = int(attrs.get("axis", 1)) % (len(x.shape) + 1)
        shape = (int(np.prod(x.shape[:axis], dtype=np.int64)), int(np.prod(x.shape[axis:], dtype=np.int64)))
    elif node.op_type in ("Squeeze", "Unsqueeze"):
        axes = _const_input(imp, node, ins[1], "axes") if len(ins) > 1 and ins[1] else attrs.get("axes")
        shape = _squeeze(x.shape, axes, node.op_type == "Unsqueeze")
    else:
        spec = [int(d) for d in _const_input(imp, node, ins[1], "shape")]
        if not int(attrs.get("allowzero", 0)):
            spec = [x.shape[k] if d == 0 and k < len(x.shape) else d for k, d in enumerate(spec)]
        if spec.count(-1) == 1:
            known = int(np.prod([d for d in spec if d != -1], dtype=np.int64))
            spec[spec.index(-1)] = size // known if known > 0 else 0
        shape = tuple(spec)
    if min(shape, default=1) < 1 or int(np.prod(shape, dtype=np.int64)) != size:
        raise UnsupportedModelError(f"{imp.where(node)}: {list(x.shape)} cannot become {list(shape)}")
    if x.const is not None:
        return [_Value(tuple(shape), x.const.reshape(shape))]
    return [_out(imp, "RESHAPE", [imp.plain(x), imp.shape_const(tuple(shape))], tuple(shape), {}, node, False)]


def _squeeze(shape, axes, unsqueeze: bool) -> tuple[int, ...]:
    if unsqueeze:
        rank = len(shape) + len(axes)
        spots = sorted(int(a) % rank for a in axes)
        out = list(shape)
        for a in spots:
            out.insert(a, 1)
        return tuple(out)
    drop = {int(a) % len(shape) for a in axes} if axes is not None else {k for k, d in enumerate(shape) if d == 1}
    return tuple(d for k, d in enumerate(shape) if k not in drop)


def transpose(imp, node, ins, attrs):

    x = ins[0]
    perm = [int(p) for p in attrs.get("perm", list(range(len(x.shape)))[::-1])]
    if sorted(perm) != list(range(len(x.shape))):
        raise UnsupportedModelError(f"{imp.where(node)}: perm {perm} does not fit a {len(x.shape)}-D input")
    shape = tuple(x.shape[p] for p in perm)
    if x.nhwc and perm == [0, 2, 3, 1]:  # NCHW -> NHWC of an NHWC tensor: the tensor itself
        return [_Value(shape, tensor=x.tensor)]
    if x.const is None and not x.nhwc and perm == [0, 3, 1, 2]:  # NHWC -> NCHW: this tensor, seen as NHWC
        return [_Value(shape, tensor=x.tensor, nhwc=True)]
    p = imp.const(np.array(perm, dtype=np.int32), "perm", "int32")
    return [_out(imp, "TRANSPOSE", [imp.plain(x), p], shape, {}, node, False)]


def concat(imp, node, ins, attrs):
    for v in ins:
        imp.float_input(v, node)
    rank = len(ins[0].shape)
    axis = int(attrs.get("axis", 0)) % rank
    shape = list(ins[0].shape)
    shape[axis] = sum(v.shape[axis] for v in ins)
    nhwc = rank == 4 and any(v.nhwc for v in ins)
    sources = [imp.nhwc(v) if nhwc else imp.plain(v) for v in ins]
    ir_axis = {0: 0, 1: 3, 2: 1, 3: 2}[axis] if nhwc else axis
    return [_out(imp, "CONCATENATION", sources, tuple(shape), dict(axis=ir_axis, activation="NONE"), node, nhwc)]


def batch_norm(imp, node, ins, attrs):
    """A BatchNormalization not folded into a Conv: MUL and ADD per channel (as folded by ONNX Runtime)."""
    x = ins[0]
    imp.float_input(x, node)
    scale, shift = _bn_scale_shift(imp, node, ins, attrs)
    if len(x.shape) != 4:
        raise UnsupportedModelError(f"{imp.where(node)}: BatchNormalization of a {len(x.shape)}-D value")
    source = imp.nhwc(x)
    ir_shape = imp.tensors[source].shape
    mul = imp.emit("MUL", [source, imp.const(scale)], ir_shape, {"activation": "NONE"}, node.output[0] + "_scale")
    shift_t = imp.const(shift)
    return [_out(imp, "ADD", [mul, shift_t], x.shape, {"activation": "NONE", "pot_scale_int16": True}, node, True)]


def _bn_scale_shift(imp, node, ins, attrs) -> tuple[np.ndarray, np.ndarray]:
    gamma, beta, mean, var = (_const_input(imp, node, v, "parameters").astype(np.float32) for v in ins[1:5])
    # ONNX Runtime's ConvBNFusion, operation by operation in float32
    scale = gamma / np.sqrt(var + np.float32(attrs.get("epsilon", 1e-5)))
    return scale.astype(np.float32), (beta - mean * scale).astype(np.float32)


def fold_batch_norms(imp) -> None:
    """Fold BatchNormalization into the Conv before it (constant weights, the Conv's only reader), as
    ONNX Runtime's ConvBNFusion does; the BatchNormalization becomes an Identity."""
    nodes = list(imp.model.graph.node)
    producer = {o: n for n in nodes for o in n.output}
    for bn in nodes:
        if bn.op_type != "BatchNormalization" or len(bn.input) != 5 or len(bn.output) != 1:
            continue
        conv = producer.get(bn.input[0])
        params = [imp.values.get(i) for i in bn.input[1:]]
        if conv is None or conv.op_type != "Conv" or imp.readers.get(bn.input[0], 0) != 1:
            continue
        weights = [imp.values.get(i) for i in conv.input[1:]]
        if any(v is None or v.const is None for v in params + weights) or len(conv.input) < 2:
            continue
        if imp.readers.get(conv.input[1], 0) != 1:
            continue  # weights shared with another Conv
        gamma, beta, mean, var = (v.const.astype(np.float32) for v in params)
        w = weights[0].const.astype(np.float32)
        if w.ndim < 2 or any(p.shape != (w.shape[0],) for p in (gamma, beta, mean, var)):
            continue
        eps = np.float32(next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5))
        scale = (gamma / np.sqrt((var + eps).astype(np.float32))).astype(np.float32)
        weights[0].const = (w * scale.reshape((-1,) + (1,) * (w.ndim - 1))).astype(np.float32)
        if len(weights) > 1 and weights[1].const is not None:
            b = weights[1].const.astype(np.float32)
            weights[1].const = (((b - mean).astype(np.float32) * scale).astype(np.float32) + beta).astype(np.float32)
        else:
            bias_name = conv.output[0] + "_folded_bias"

            imp.values[bias_name] = _Value(beta.shape, (beta - (mean * scale).astype(np.float32)).astype(np.float32))
            del conv.input[2:]
            conv.input.append(bias_name)
        bn.op_type = "Identity"
        del bn.input[1:]


CONVERTERS: dict[str, Callable] = {
    "Conv": conv,
    "MaxPool": pool,
    "AveragePool": pool,
    "GlobalAveragePool": pool,
    "Gemm": gemm,
    "MatMul": matmul,
    "Add": binary,
    "Sub": binary,
    "Mul": binary,
    "Div": binary,
    "Relu": unary,
    "Sigmoid": unary,
    "Tanh": unary,
    "Clip": clip,
    "Softmax": softmax,
    "Reshape": reshape,
    "Flatten": reshape,
    "Squeeze": reshape,
    "Unsqueeze": reshape,
    "Transpose": transpose,
    "Concat": concat,
    "BatchNormalization": batch_norm,
}
CONVERTERS.update(onnx_more.CONVERTERS)
CONVERTERS.update(onnx_rnn.CONVERTERS)
SUPPORTED = frozenset(CONVERTERS) | IDENTITY | FOLD_ONLY
