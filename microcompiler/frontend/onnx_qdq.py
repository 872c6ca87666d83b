"""QDQ int8 ONNX models (ONNX Runtime's ``quantize_static``) -> the graph IR, computing what ONNX
Runtime computes (docs/onnx.md, "QDQ int8").

What ONNX Runtime runs is not the QDQ graph as written: its graph optimizer fuses
DequantizeLinear -> Conv -> QuantizeLinear into QLinearConv, DQ -> MatMul -> Q into QLinearMatMul, and
so on, where its selectors allow it (a DequantizeLinear read by two operators, for example, is not
fused, and the operator then runs in float32 between a lone DequantizeLinear and QuantizeLinear). Those
decisions fix the arithmetic, so the importer lets ONNX Runtime make them: it runs ONNX Runtime's
optimizer (level "extended": the fusions, not the machine-specific NCHWc/NHWC layouts) on the model
and imports the optimized graph, whose quantized operators become the IR's int8 operators:

* QuantizeLinear -> QUANTIZE rounding half to even (``rounding: half_even``), DequantizeLinear ->
  DEQUANTIZE; a DequantizeLinear of a constant is evaluated at import as ONNX Runtime evaluates it;
* QLinearConv -> int8 CONV_2D or DEPTHWISE_CONV_2D, QLinearMatMul -> int8 FULLY_CONNECTED, both with
  ONNX Runtime's float-scale requantization (``requant: float``, ops/requant_float.py).

Every other operator of the optimized graph is a float32 operator of the float front end
(onnx_layers.py). Quantized operators not handled are listed all at once ("not supported yet").
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from microcompiler.errors import UnsupportedModelError, printable
from microcompiler.frontend import onnx_layers
from microcompiler.frontend.onnx_layers import _tflite_padding, _Value, _window
from microcompiler.frontend.onnx_read import onnx_module
from microcompiler.ir import Quantization

# ONNX Runtime's quantized operators the importer converts (after its graph optimizer)
QDQ_SUPPORTED = frozenset(
    {
        "QuantizeLinear",
        "DequantizeLinear",
        "QLinearConv",
        "QLinearMatMul",
        "com.microsoft.QLinearGlobalAveragePool",
        "com.microsoft.QLinearSoftmax",
        "com.microsoft.QLinearAdd",
        "com.microsoft.QLinearAveragePool",
    }
)


def is_qdq(model: Any) -> bool:
    """Whether the model has quantized operators (QDQ or QOperator format)."""
    from microcompiler.frontend.onnx_read import QDQ_OPERATORS

    return any(n.op_type in QDQ_OPERATORS or n.op_type.startswith("QLinear") for n in model.graph.node)


def ort_optimized(model: Any) -> Any:
    """The model as ONNX Runtime's CPU session runs it: its graph optimizer at level "extended" (the QDQ
    fusions; without the machine-specific NCHWc and NHWC rewrites of level "all", which compute the same)."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise UnsupportedModelError(
            "importing a quantized (QDQ) ONNX model needs the 'onnxruntime' package, whose graph optimizer decides "
            "which operators run in int8: pip install onnxruntime"
        ) from None
    onnx = onnx_module()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.log_severity_level = 3
    with tempfile.TemporaryDirectory(prefix="microcompiler-onnx-") as folder:
        target = Path(folder) / "optimized.onnx"
        options.optimized_model_filepath = str(target)
        try:
            ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            first = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            raise UnsupportedModelError(
                f"ONNX Runtime cannot load the quantized model ({printable(first)}); check it with onnxruntime first"
            ) from None
        return onnx.load(str(target))


_WARNED: set[str] = set()


def warn_unfused_convs(model: Any, where: str) -> None:
    """One stderr line (once per model and process) when ONNX Runtime's optimized graph ``model`` keeps
    Convs in float32 between DequantizeLinear and QuantizeLinear: computed exactly, but slowly."""
    produced = {out: n.op_type for n in model.graph.node for out in n.output}
    convs = [n for n in model.graph.node if n.op_type in ("Conv", "QLinearConv")]
    unfused = [n for n in convs if n.op_type == "Conv" and produced.get(n.input[0]) == "DequantizeLinear"]
    if not unfused or where in _WARNED:
        return
    _WARNED.add(where)
    line = (
        f"microcompiler: warning: {printable(where)}: ONNX Runtime leaves {len(unfused)} of its {len(convs)} Convs "
        "in float32 between DequantizeLinear and QuantizeLinear (int8 activations read by two operators); they "
        "are computed as it computes them, slowly. Quantize with quantize_static(..., "
        "activation_type=QuantType.QUInt8) to have every Conv fused into QLinearConv (extra_options "
        "DedicatedQDQPair does not fuse them)"
    )
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def _param(imp, node, v: _Value | None, what: str) -> np.ndarray:
    if v is None or v.const is None:
        raise UnsupportedModelError(f"{imp.where(node)}: its {what} must be a constant (an initializer)")
    return v.const


def _quant(imp, node, scale_v, zp_v, what: str, channels: int = 1, axis: int = 0) -> Quantization:
    """(scale, zero point) of an int8 value; per channel only where ``channels`` > 1 allows it."""
    scale = _param(imp, node, scale_v, f"{what} scale").astype(np.float32).reshape(-1)
    zp = _param(imp, node, zp_v, f"{what} zero point").reshape(-1) if zp_v is not None else np.zeros(1, np.int8)
    if zp.dtype == np.uint8 and what != "weights":
        # ONNX Runtime's x86 optimizer turns int8 activations into uint8 ones (QDQS8ToU8Transformer):
        # q + 128 with zero point + 128, the same real values and the same clamps; back to int8 here
        zp = zp.astype(np.int32) - 128
    elif zp.dtype != np.int8:
        raise UnsupportedModelError(
            f"{imp.where(node)}: its {what} zero point is {zp.dtype}; microcompiler imports int8 QDQ models "
            "(quantize_static with activation_type and weight_type QInt8): uint8 weights are not supported yet"
        )
    if scale.size not in (1, channels) or zp.size not in (1, scale.size):
        raise UnsupportedModelError(f"{imp.where(node)}: its {what} has {scale.size} scales; expected 1 or {channels}")
    if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
        raise UnsupportedModelError(f"{imp.where(node)}: its {what} scale is not a positive finite number")
    zps = [int(z) for z in np.broadcast_to(zp, scale.shape)]
    return Quantization([float(s) for s in scale], zps, axis, scale.size)


def _int8_tensor(imp, name: str, shape: tuple[int, ...], quant: Quantization, data: np.ndarray | None = None) -> int:
    index = imp.add_tensor(name, shape, "int8", data)
    imp.tensors[index].quant = quant
    return index


def _emit_int8(imp, kind, inputs, ir_shape, options, name, quant) -> int:
    from microcompiler.ir import Operator

    out = _int8_tensor(imp, name, ir_shape, quant)
    imp.operators.append(Operator(kind, inputs, [out], dict(options), len(imp.operators)))
    return out


def dequantize_constant(q: np.ndarray, scale: np.ndarray, zp: np.ndarray | None, axis: int) -> np.ndarray:
    """ONNX Runtime's DequantizeLinear of a constant: float32(int32(q) - zero point) * scale."""
    scale = scale.astype(np.float32)
    zp = np.zeros_like(scale, dtype=np.int32) if zp is None else zp.astype(np.int32)
    if scale.size > 1:
        shape = [1] * q.ndim
        shape[axis % q.ndim] = scale.size
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    return ((q.astype(np.int32) - zp).astype(np.float32) * scale).astype(np.float32)


def dequantize(imp, node, ins, attrs):
    x = ins[0]
    if x.const is not None:
        scale = _param(imp, node, ins[1], "scale")
        zp = ins[2].const if len(ins) > 2 and ins[2] is not None else None
        return [_Value(x.shape, dequantize_constant(x.const, scale, zp, int(attrs.get("axis", 1))))]
    quant = imp.tensors[x.tensor].quant
    if imp.tensors[x.tensor].dtype != "int8" or quant is None:
        raise UnsupportedModelError(f"{imp.where(node)} reads a value that is not int8 (uint8 is not supported yet)")
    want = _quant(imp, node, ins[1], ins[2] if len(ins) > 2 else None, "input")
    if (want.scale, want.zero_point) != (quant.scale, quant.zero_point):  # a reinterpretation: not from ORT
        imp.tensors[x.tensor].quant = want
    shape = imp.tensors[x.tensor].shape
    # from 64 values on, a table of the 256 results (1 KB of flash): one load per value instead of a conversion
    options = {"table": True} if int(np.prod(shape)) >= 64 else {}
    out = imp.emit("DEQUANTIZE", [x.tensor], shape, options, node.output[0])
    return [_Value(x.shape, tensor=out, nhwc=x.nhwc)]


def quantize(imp, node, ins, attrs):
    x = ins[0]
    imp.float_input(x, node)
    quant = _quant(imp, node, ins[1], ins[2] if len(ins) > 2 else None, "output")
    if len(quant.scale) > 1:
        raise UnsupportedModelError(
            f"{imp.where(node)} quantizes per axis; activations per tensor only (not supported yet)"
        )
    source = imp.nhwc(x) if x.nhwc else imp.plain(x)
    ir_shape = imp.tensors[source].shape
    out = _emit_int8(imp, "QUANTIZE", [source], ir_shape, {"rounding": "half_even"}, node.output[0], quant)
    return [_Value(x.shape, tensor=out, nhwc=x.nhwc)]


def _int8_activation(imp, node, v: _Value, what: str, quant: Quantization | None = None) -> None:
    """``v`` is an int8 activation (and, given ``quant``, quantized as the operator reads it)."""
    if v.const is not None or imp.tensors[v.tensor].dtype != "int8":
        raise UnsupportedModelError(f"{imp.where(node)}: its {what} must be an int8 activation")
    have = imp.tensors[v.tensor].quant
    if quant is not None and (have.scale, have.zero_point) != (quant.scale, quant.zero_point):
        raise UnsupportedModelError(
            f"{imp.where(node)} reads its {what} with another scale or zero point than it was written with; "
            "not supported yet"
        )


def _bias(imp, node, v: _Value | None, channels: int, x_q: Quantization, w_q: Quantization) -> int:
    if v is None:
        return -1
    b = _param(imp, node, v, "bias")
    if b.dtype != np.int32 or b.size != channels:
        raise UnsupportedModelError(f"{imp.where(node)}: its bias must be {channels} int32 values")
    scales = [float(np.float32(x_q.scale[0]) * np.float32(s)) for s in w_q.scale]
    quant = Quantization(scales, [0] * len(scales), 0, len(scales))
    index = imp.add_tensor(f"bias_{len(imp.tensors)}", (channels,), "int32", b.reshape(channels).astype(np.int32))
    imp.tensors[index].quant = quant
    return index


def qlinear_conv(imp, node, ins, attrs):
    x, xs, xzp, wv, ws, wzp, ys, yzp = ins[:8]
    w = _param(imp, node, wv, "weights")
    if w.dtype != np.int8 or w.ndim != 4 or len(x.shape) != 4:
        raise UnsupportedModelError(f"{imp.where(node)}: int8 2-D convolutions only (uint8 not supported yet)")
    m, cg, kh, kw = w.shape
    c = x.shape[1]
    group = int(attrs.get("group", 1))
    x_q = _quant(imp, node, xs, xzp, "input")
    _int8_activation(imp, node, x, "input", x_q)
    w_q = _quant(imp, node, ws, wzp, "weights", channels=m)
    y_q = _quant(imp, node, ys, yzp, "output")
    if any(w_q.zero_point):
        raise UnsupportedModelError(f"{imp.where(node)}: weights with a zero point other than 0 are not supported yet")
    if group < 1 or c != cg * group or m % group:
        raise UnsupportedModelError(f"{imp.where(node)}: weights {list(w.shape)} do not fit input {list(x.shape)}")
    in_hw, strides, dilations, pads, out = _window(imp, node, attrs, x, [kh, kw])
    padding = _tflite_padding(in_hw, [kh, kw], strides, dilations, pads, out)
    source = imp.nhwc(x)
    if padding is None:  # an explicit PAD with the input zero point, then VALID
        t, left, b, r = pads
        padded = (x.shape[0], in_hw[0] + t + b, in_hw[1] + left + r, c)
        paddings = imp.const(np.array([[0, 0], [t, b], [left, r], [0, 0]], dtype=np.int32), "paddings", "int32")
        x_quant = imp.tensors[source].quant
        source = _emit_int8(imp, "PAD", [source, paddings], padded, {}, node.output[0] + "_pad", x_quant)
        padding = "VALID"
    options = dict(padding=padding, stride_h=strides[0], stride_w=strides[1], activation="NONE", requant="float")
    options.update(dilation_h=dilations[0], dilation_w=dilations[1])
    bias = _bias(imp, node, ins[8] if len(ins) > 8 else None, m, x_q, w_q)
    shape = (x.shape[0], out[0], out[1], m)
    if group == 1:
        w_q.axis = 0
        weights = _int8_tensor(imp, f"weights_{len(imp.tensors)}", (m, kh, kw, cg), w_q, np.transpose(w, (0, 2, 3, 1)))
        kind = "CONV_2D"
    elif group == c:  # depthwise: [C*M, 1, kh, kw] -> [1, kh, kw, C*M]
        w_q.axis = 3
        weights = _int8_tensor(imp, f"weights_{len(imp.tensors)}", (1, kh, kw, m), w_q, np.transpose(w, (1, 2, 3, 0)))
        kind = "DEPTHWISE_CONV_2D"
        options["depth_multiplier"] = m // c
    else:
        raise UnsupportedModelError(f"{imp.where(node)} is a grouped convolution (group={group}); not supported yet")
    out_t = _emit_int8(imp, kind, [source, weights, bias], shape, options, node.output[0], y_q)
    return [_Value((x.shape[0], m, out[0], out[1]), tensor=out_t, nhwc=True)]


def qlinear_matmul(imp, node, ins, attrs):
    a, a_s, a_zp, bv, b_s, b_zp, ys, yzp = ins[:8]
    b = _param(imp, node, bv, "second operand (weights)")
    if b.dtype != np.int8 or b.ndim != 2 or a.shape[-1] != b.shape[0]:
        raise UnsupportedModelError(f"{imp.where(node)}: int8 activations times constant 2-D int8 weights only")
    k, n = b.shape
    _int8_activation(imp, node, a, "first operand", _quant(imp, node, a_s, a_zp, "input"))
    w_q = _quant(imp, node, b_s, b_zp, "weights", channels=n)
    y_q = _quant(imp, node, ys, yzp, "output")
    if any(w_q.zero_point):
        raise UnsupportedModelError(f"{imp.where(node)}: weights with a zero point other than 0 are not supported yet")
    weights = _int8_tensor(imp, f"weights_{len(imp.tensors)}", (n, k), w_q, np.ascontiguousarray(b.T))
    options = dict(activation="NONE", keep_num_dims=len(a.shape) > 2, weights_format=0, requant="float")
    shape = (*a.shape[:-1], n)
    out = _emit_int8(imp, "FULLY_CONNECTED", [imp.plain(a), weights, -1], shape, options, node.output[0], y_q)
    return [_Value(shape, tensor=out)]


def qlinear_global_average_pool(imp, node, ins, attrs):
    """ONNX Runtime's QLinearGlobalAveragePool: sum(x - x_zp) over the image, times x_scale / (y_scale *
    pixels) in float32, rounded half to even: an int8 DEPTHWISE_CONV_2D of ones over the whole image with
    that scale (``requant_scales``)."""
    x, xs, xzp, ys, yzp = ins[:5]
    _int8_activation(imp, node, x, "input", _quant(imp, node, xs, xzp, "input"))
    if len(x.shape) != 4 or not int(attrs.get("channels_last", 0)) == 0:
        raise UnsupportedModelError(f"{imp.where(node)}: a 2-D NCHW input only")
    n, c, h, w = x.shape
    x_q, y_q = _quant(imp, node, xs, xzp, "input"), _quant(imp, node, ys, yzp, "output")
    scale = np.float32(x_q.scale[0]) / (np.float32(y_q.scale[0]) * np.float32(h * w))
    ones = Quantization([1.0], [0], 3, 1)
    weights = _int8_tensor(imp, f"ones_{len(imp.tensors)}", (1, h, w, c), ones, np.ones((1, h, w, c), np.int8))
    options = dict(padding="VALID", stride_h=1, stride_w=1, activation="NONE", depth_multiplier=1)
    options.update(dilation_h=1, dilation_w=1, requant="float", requant_scales=[float(scale)])
    out = _emit_int8(imp, "DEPTHWISE_CONV_2D", [imp.nhwc(x), weights, -1], (n, 1, 1, c), options, node.output[0], y_q)
    return [_Value((n, c, 1, 1), tensor=out, nhwc=True)]


def qlinear_softmax(imp, node, ins, attrs):
    """ONNX Runtime's QLinearSoftmax (com.microsoft, opset 13 semantics): SOFTMAX with ``ort_softmax``."""
    x, xs, xzp, ys, yzp = ins[:5]
    _int8_activation(imp, node, x, "input", _quant(imp, node, xs, xzp, "input"))
    axis = int(attrs.get("axis", -1)) % len(x.shape)
    if int(attrs.get("opset", 13)) < 13 or axis != len(x.shape) - 1 or x.nhwc:
        raise UnsupportedModelError(f"{imp.where(node)}: QLinearSoftmax over the last axis (opset 13) only")
    y_q = _quant(imp, node, ys, yzp, "output")
    options = {"beta": 1.0, "ort_softmax": True}
    out = _emit_int8(imp, "SOFTMAX", [x.tensor], imp.tensors[x.tensor].shape, options, node.output[0], y_q)
    return [_Value(x.shape, tensor=out)]


def qlinear_add(imp, node, ins, attrs):
    """ONNX Runtime's QLinearAdd of two int8 activations of one shape: MC_QLINEAR_ADD_INT8
    (ops/qlinear_add.py, its x86 arithmetic)."""
    a, a_s, a_zp, b, b_s, b_zp, c_s, c_zp = (list(ins) + [None] * 8)[:8]
    if a is None or b is None or a.const is not None or b.const is not None or a.shape != b.shape:
        raise UnsupportedModelError(
            f"{imp.where(node)}: QLinearAdd of these operands (a constant, or shapes that do not "
            "broadcast one into the other) is not supported yet"
        )
    _int8_activation(imp, node, a, "first input", _quant(imp, node, a_s, a_zp, "first input"))
    _int8_activation(imp, node, b, "second input", _quant(imp, node, b_s, b_zp, "second input"))
    y_q = _quant(imp, node, c_s, c_zp, "output")
    nhwc = len(a.shape) == 4 and (a.nhwc or b.nhwc)
    sources = [imp.nhwc(v) if nhwc else imp.plain(v) for v in (a, b)]
    shape = imp.tensors[sources[0]].shape
    out = _emit_int8(imp, "MC_QLINEAR_ADD_INT8", sources, shape, {}, node.output[0], y_q)
    return [_Value(a.shape, tensor=out, nhwc=nhwc)]


def qlinear_average_pool(imp, node, ins, attrs):
    """ONNX Runtime's QLinearAveragePool (2-D, NCHW): MC_QLINEAR_AVG_POOL_INT8 (ops/qlinear_avg_pool.py)."""
    x, xs, xzp, ys, yzp = (list(ins) + [None] * 5)[:5]
    if x is None or x.const is not None or len(x.shape) != 4 or int(attrs.get("channels_last", 0)):
        raise UnsupportedModelError(f"{imp.where(node)}: QLinearAveragePool of a 4-D NCHW activation only")
    _int8_activation(imp, node, x, "input", _quant(imp, node, xs, xzp, "input"))
    y_q = _quant(imp, node, ys, yzp, "output")
    kernel = [int(k) for k in attrs.get("kernel_shape", [])]
    in_hw, strides, dilations, pads, out = _window(imp, node, attrs, x, kernel)
    if list(in_hw) == kernel and not any(pads):
        # ONNX Runtime's kernel falls back to its global average pool when the window is the whole image
        return qlinear_global_average_pool(imp, node, ins, {})
    if dilations != [1, 1] or int(attrs.get("ceil_mode", 0)):
        raise UnsupportedModelError(f"{imp.where(node)}: dilations and ceil_mode are not supported yet")
    options = dict(filter_h=kernel[0], filter_w=kernel[1], stride_h=strides[0], stride_w=strides[1])
    options.update(pad_top=pads[0], pad_left=pads[1], count_include_pad=int(attrs.get("count_include_pad", 0)))
    shape = (x.shape[0], out[0], out[1], x.shape[1])
    t = _emit_int8(imp, "MC_QLINEAR_AVG_POOL_INT8", [imp.nhwc(x)], shape, options, node.output[0], y_q)
    return [_Value((x.shape[0], x.shape[1], out[0], out[1]), tensor=t, nhwc=True)]


CONVERTERS = {
    "QLinearAveragePool": qlinear_average_pool,
    "QLinearAdd": qlinear_add,
    "QLinearGlobalAveragePool": qlinear_global_average_pool,
    "QLinearSoftmax": qlinear_softmax,
    "QuantizeLinear": quantize,
    "DequantizeLinear": dequantize,
    "QLinearConv": qlinear_conv,
    "QLinearMatMul": qlinear_matmul,
}
SUPPORTED = onnx_layers.SUPPORTED | QDQ_SUPPORTED
