"""ONNX Runtime's dynamic quantization (``quantize_dynamic``) -> float32 operators of the IR that compute
exactly what ONNX Runtime computes (docs/onnx.md, "MatMulInteger, ConvInteger: quantize_dynamic").

``quantize_dynamic`` writes DynamicQuantizeLinear (the activation's uint8 scale and zero point computed
from its minimum and maximum at run time) before MatMulInteger / ConvInteger (exact int32 sums of
(x - x_zp) * (w - w_zp)), then Cast to float, a Mul by x_scale * w_scale and the bias Add; ONNX Runtime's
optimizer fuses DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul (-> Add) into
com.microsoft.DynamicQuantizeMatMul and leaves the ConvInteger chain as it is. The importer computes:

* DynamicQuantizeLinear as ONNX Runtime does (GetQuantizationParameter and MlasQuantizeLinear): min and
  max of the tensor, each widened to include 0; scale = (max - min) / 255 in float32 (1 where max ==
  min); zero point = round half to even of clamp(0 - min / scale, 0, 255); q - zp = round half to even
  of clamp(x / scale, -zp, 255 - zp). The value kept is q - zp (an integer in float32), which is what
  the integer operators read: REDUCE_MIN/MAX, MINIMUM/MAXIMUM, SUB, DIV, EQUAL, CAST, ADD, ROUND, NEG.
* MatMulInteger / ConvInteger as FULLY_CONNECTED / CONV_2D in float32 of those integers with weights
  w - w_zp: every partial sum is an integer; the importer admits a layer only where 255 * sum |w - w_zp|
  (each output) is below 2^24, so every partial sum is exact in float32 in any order and the result is
  ONNX Runtime's int32 sum exactly. Zero padding of q - zp is ONNX Runtime's padding with the zero point.
* Cast of that sum to float: the same value (exact below 2^24); the Mul and Add after it are float32
  operators, as ONNX Runtime runs them (DynamicQuantizeMatMul: float(sum) * (a_scale * b_scale), then +
  bias, each rounded: checked against ONNX Runtime).
"""

from __future__ import annotations

import numpy as np

from microcompiler.errors import UnsupportedModelError
from microcompiler.frontend import onnx_layers
from microcompiler.frontend.onnx_values import _Value
from microcompiler.ir import Operator

EXACT = float(1 << 24)  # integers below this are exact in float32, and so is every sum of them
_NONE = {"activation": "NONE"}


def _centered(imp) -> dict[int, int]:
    """IR tensor of a DynamicQuantizeLinear's q - zp -> the IR tensor of its zero point."""
    if not hasattr(imp, "centered"):
        imp.centered = {}
    return imp.centered


def _integers(imp) -> set[int]:
    """IR tensors holding exact integer sums (MatMulInteger/ConvInteger outputs) as float32."""
    if not hasattr(imp, "integer_sums"):
        imp.integer_sums = set()
    return imp.integer_sums


def _scalar(imp, value: float, name: str) -> int:
    return imp.const(np.array(value, dtype=np.float32).reshape(1), name)


def _op(imp, kind: str, inputs: list[int], shape: tuple[int, ...], name: str, options=None, dtype="float32") -> int:
    out = imp.add_tensor(name, shape, dtype)
    imp.operators.append(Operator(kind, inputs, [out], dict(options or {}), len(imp.operators)))
    return out


def quantize_dynamic(imp, name: str, source: int) -> tuple[int, int, int]:
    """(q - zp, scale, zp) of the float32 IR tensor ``source``, as ONNX Runtime's DynamicQuantizeLinear
    computes them (module docstring); scale and zp are one value each (shape (1,) * rank)."""
    shape = imp.tensors[source].shape
    one = (1,) * len(shape)

    def step(kind: str, inputs: list[int], suffix: str, out_shape=one, options=None, dtype="float32") -> int:
        if options is None:
            options = _NONE if kind in ("ADD", "SUB", "DIV") else {}
        return _op(imp, kind, inputs, out_shape, f"{name}_{suffix}", options, dtype)

    def clamp(v: int, low: int, high: int, suffix: str, out_shape=one) -> int:
        return step("MINIMUM", [step("MAXIMUM", [v, low], f"{suffix}_lo", out_shape), high], f"{suffix}_hi", out_shape)

    axes = imp.const(np.arange(len(shape), dtype=np.int32), "axes", "int32")
    zero, top = _scalar(imp, 0.0, "zero"), _scalar(imp, 255.0, "qmax")
    keep = {"keep_dims": True}
    low = step("MINIMUM", [step("REDUCE_MIN", [source, axes], "min", options=keep), zero], "low")
    high = step("MAXIMUM", [step("REDUCE_MAX", [source, axes], "max", options=keep), zero], "high")
    span = step("DIV", [step("SUB", [high, low], "span"), top], "span255")
    same = step("CAST", [step("EQUAL", [high, low], "same", dtype="bool")], "one")
    scale = step("ADD", [span, same], "scale")  # (max - min) / 255, or 1 where max == min
    initial = step("SUB", [zero, step("DIV", [low, scale], "ratio")], "zp0")
    zp = step("ROUND", [clamp(initial, zero, top, "zp1")], "zero_point")
    scaled = step("DIV", [source, scale], "scaled", shape)
    bounds = step("NEG", [zp], "qlo"), step("SUB", [top, zp], "qhi")
    centered = _op(imp, "ROUND", [clamp(scaled, *bounds, "q", shape)], shape, name)
    _centered(imp)[centered] = zp
    return centered, scale, zp


def dynamic_quantize_linear(imp, node, ins, attrs):
    x = ins[0]
    imp.float_input(x, node)
    source = imp.nhwc(x) if x.nhwc else imp.plain(x)
    centered, scale, zp = quantize_dynamic(imp, node.output[0], source)
    one = [
        imp.emit("RESHAPE", [t, imp.shape_const((1,))], (1,), {}, o)
        for t, o in ((scale, node.output[1]), (zp, node.output[2]))
    ]
    _centered(imp)[centered] = one[1]  # read with the reshaped zero point
    return [_Value(x.shape, tensor=centered, nhwc=x.nhwc), _Value((1,), tensor=one[0]), _Value((1,), tensor=one[1])]


def _integer_input(imp, node, x: _Value | None, zp: _Value | None) -> None:
    """``x`` is a DynamicQuantizeLinear's output read with that operator's own zero point."""
    own = _centered(imp).get(x.tensor) if x is not None and x.const is None else None
    if own is None or zp is None or zp.const is not None or zp.tensor != own:
        raise UnsupportedModelError(
            f"{imp.where(node)}: its input must be a DynamicQuantizeLinear's output read with that operator's zero "
            "point (ONNX Runtime's quantize_dynamic); a uint8 model input or another zero point is not supported yet"
        )


def _weights(imp, node, wv: _Value | None, zpv: _Value | None, axis: int, what: str) -> np.ndarray:
    """The constant integer weights minus their zero point (per tensor or per ``axis``), as float32."""
    w = wv.const if wv is not None else None
    if w is None or w.dtype not in (np.int8, np.uint8):
        raise UnsupportedModelError(f"{imp.where(node)}: its {what} must be a constant int8 or uint8 tensor")
    zp = np.zeros((), w.dtype) if zpv is None else zpv.const
    if zp is None or zp.dtype != w.dtype:
        raise UnsupportedModelError(f"{imp.where(node)}: its {what} zero point must be a constant of the weights' type")
    zp = zp.astype(np.int32).reshape(-1)
    if zp.size not in (1, w.shape[axis]):
        raise UnsupportedModelError(
            f"{imp.where(node)}: its {what} zero point has {zp.size} values; expected 1 or {w.shape[axis]} "
            "(the file is damaged)"
        )
    shape = [1] * w.ndim
    shape[axis] = zp.size
    centered = w.astype(np.int32) - zp.reshape(shape)
    reduce = tuple(k for k in range(w.ndim) if k != axis)
    worst = 255.0 * float(np.abs(centered).sum(axis=reduce).max())
    if worst >= EXACT:
        raise UnsupportedModelError(
            f"{imp.where(node)}: its int32 sums can reach {worst:.3g}, beyond 2^24, where microcompiler's float32 "
            "integer arithmetic would round; layers this deep are not supported yet"
        )
    return centered.astype(np.float32)


def conv_integer(imp, node, ins, attrs):
    x, wv, xzp, wzp = (list(ins) + [None] * 4)[:4]
    _integer_input(imp, node, x, xzp)
    if wv is None or wv.const is None or wv.const.ndim != 4:
        raise UnsupportedModelError(f"{imp.where(node)}: its weights must be a constant 4-D tensor (2-D convolution)")
    if wzp is not None and wzp.const is not None and wzp.const.size > 1:
        raise UnsupportedModelError(
            f"{imp.where(node)} has a weights zero point per output channel, which ONNX Runtime's ConvInteger does "
            "not run (one per tensor); not supported yet"
        )
    weights = _weights(imp, node, wv, wzp, 0, "weights")
    out = onnx_layers.conv(imp, node, [x, _Value(weights.shape, weights)], attrs)[0]
    _integers(imp).add(out.tensor)
    return [out]


def matmul_integer(imp, node, ins, attrs):
    a, bv, azp, bzp = (list(ins) + [None] * 4)[:4]
    _integer_input(imp, node, a, azp)
    if bv is None or bv.const is None or bv.const.ndim != 2 or a.shape[-1] != bv.const.shape[0]:
        raise UnsupportedModelError(f"{imp.where(node)}: an activation times constant 2-D weights of its depth only")
    weights = _weights(imp, node, bv, bzp, 1, "second operand")
    out = _fully_connected(imp, a, weights, node.output[0])
    _integers(imp).add(out.tensor)
    return [out]


def _fully_connected(imp, a: _Value, weights: np.ndarray, name: str) -> _Value:
    w = imp.const(np.ascontiguousarray(weights.T), "weights")
    options = dict(activation="NONE", keep_num_dims=len(a.shape) > 2, weights_format=0)
    shape = (*a.shape[:-1], weights.shape[1])
    return _Value(shape, tensor=imp.emit("FULLY_CONNECTED", [imp.plain(a), w, -1], shape, options, name))


def dynamic_quantize_matmul(imp, node, ins, attrs):
    """com.microsoft.DynamicQuantizeMatMul(A, B, b_scale, b_zero_point, bias): A quantized as
    DynamicQuantizeLinear does, the exact integer product, float(sum) * (a_scale * b_scale), + bias."""
    a, bv, bs, bzp, bias = (list(ins) + [None] * 5)[:5]
    if a is None or a.const is not None or len(a.shape) < 2:
        raise UnsupportedModelError(f"{imp.where(node)}: its first input must be a float activation of 2 or more dims")
    imp.float_input(a, node)
    if bv is None or bv.const is None or bv.const.ndim != 2 or a.shape[-1] != bv.const.shape[0]:
        raise UnsupportedModelError(f"{imp.where(node)}: an activation times constant 2-D weights of its depth only")
    n = bv.const.shape[1]
    scale = bs.const if bs is not None else None
    if scale is None or scale.dtype != np.float32 or scale.size not in (1, n) or not np.all(np.isfinite(scale)):
        raise UnsupportedModelError(f"{imp.where(node)}: its weight scale must be 1 or {n} finite float32 constants")
    weights = _weights(imp, node, bv, bzp, 1, "weights")
    centered, a_scale, _ = quantize_dynamic(imp, f"{node.output[0]}_quantized", imp.plain(a))
    sums = _fully_connected(imp, _Value(a.shape, tensor=centered), weights, f"{node.output[0]}_sums")
    b_scale = imp.const(scale.reshape(scale.size).astype(np.float32), "scale")
    a_scale = imp.emit("RESHAPE", [a_scale, imp.shape_const((1,))], (1,), {}, f"{node.output[0]}_a_scale")
    multiplier = _op(imp, "MUL", [a_scale, b_scale], imp.tensors[b_scale].shape, f"{node.output[0]}_scale", _NONE)
    name = node.output[0] if bias is None else f"{node.output[0]}_scaled"
    out = _op(imp, "MUL", [sums.tensor, multiplier], sums.shape, name, _NONE)
    if bias is not None:
        b = bias.const
        if b is None or b.dtype != np.float32 or b.size != n:
            raise UnsupportedModelError(f"{imp.where(node)}: its bias must be {n} float32 constants")
        out = _op(imp, "ADD", [out, imp.const(b.reshape(n), "bias")], sums.shape, node.output[0], _NONE)
    return [_Value(sums.shape, tensor=out)]


def cast(imp, node, ins, attrs):
    """Cast of a computed value: to float of a MatMulInteger/ConvInteger sum (held as float32: the same
    value), or float to float."""
    x = ins[0]
    to = int(attrs.get("to", 0))
    if x is not None and x.const is None and to == 1 and imp.tensors[x.tensor].dtype == "float32":
        return [x]
    raise UnsupportedModelError(
        f"{imp.where(node)} casts a computed value to type {to}; microcompiler imports Cast to float of an "
        "integer MatMul/Conv sum (quantize_dynamic), and Cast of constants"
    )


CONVERTERS = {
    "DynamicQuantizeLinear": dynamic_quantize_linear,
    "ConvInteger": conv_integer,
    "MatMulInteger": matmul_integer,
    "DynamicQuantizeMatMul": dynamic_quantize_matmul,
    "Cast": cast,
}
SUPPORTED = frozenset(
    {"DynamicQuantizeLinear", "ConvInteger", "MatMulInteger", "com.microsoft.DynamicQuantizeMatMul", "Cast"}
)
