"""ONNX Runtime's float leftovers of a QDQ model as per-channel int8 tables (onnx_qdq.py).

Where ONNX Runtime does not fuse an operator (tf2onnx's BatchNormalization after a depthwise Conv is a
Mul and an Add by per-channel constants), it runs ``QuantizeLinear(Mul(DequantizeLinear(x), c))`` in
float32. Each int8 output is then a function of the int8 input and its channel alone, so the importer
computes that function at compile time with ONNX Runtime's float32 arithmetic (dequantize, multiply or
add, divide by the output scale, clamp, round half to even, add the zero point) for the 256 inputs of
each channel: one MC_TABLE_CHANNELS_INT8 (ops/table_channels.py), one load per element. Two such tables
in a row (the Mul, then the Add) become one. Tables are made up to TABLE_BUDGET bytes per operator (16
channels); a wider layer keeps the three operators (as exact, slower), or its tables would fill the flash.

``fuse_tables`` rewrites the optimized graph: DequantizeLinear -> Mul/Add (the other input a constant)
-> QuantizeLinear, each value read once, becomes one node ``MicrocompilerQTable`` (inputs: x, its scale
and zero point, the constant, the output scale and zero point; attribute ``function``). Its converter
falls back to the three operators when the constant is not per channel or per tensor.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from microcompiler.errors import UnsupportedModelError
from microcompiler.frontend import onnx_integer, onnx_layers, onnx_qdq, onnx_qdq_more
from microcompiler.frontend.onnx_layers import _Value
from microcompiler.frontend.onnx_read import onnx_module
from microcompiler.ir import Operator
from microcompiler.ops.requant_float import POST_TABLE_INPUT, float_requant, has_post_table
from microcompiler.ops.table_channels import TABLE_CHANNELS_INT8

QTABLE = "MicrocompilerQTable"
QPAD = "MicrocompilerQPad"  # DequantizeLinear -> Pad (zeros) -> QuantizeLinear of one quantization: an int8 PAD
_FUNCTIONS = ("Mul", "Add")
TABLE_BUDGET = 4096  # bytes of tables per operator (16 channels); wider layers keep the float operators
_BYTES = np.arange(256).astype(np.uint8).view(np.int8).astype(np.int32)  # table index (unsigned byte) -> int8


def fuse_tables(model: Any) -> None:
    """Rewrite DQ -> Mul/Add(constant) -> Q chains of the optimized model into QTABLE nodes, in place."""
    onnx = onnx_module()
    g = model.graph
    nodes = list(g.node)
    producer = {o: n for n in nodes for o in n.output}
    readers: dict[str, list] = {}
    for n in nodes:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    outputs = {o.name for o in g.output}
    initializers = {t.name for t in g.initializer}

    def constant(name: str) -> bool:
        p = producer.get(name)
        return name in initializers or (
            p is not None and p.op_type == "DequantizeLinear" and p.input[0] in initializers
        )

    def single(name: str) -> Any:
        r = readers.get(name, [])
        return r[0] if len(r) == 1 and name not in outputs else None

    replaced: dict[int, Any] = {}  # id of the QuantizeLinear -> the new node
    dropped: set[int] = set()
    for op in nodes:
        if op.op_type == "Pad" and op.domain in ("", "ai.onnx") and len(op.input) >= 2:
            dq, q = producer.get(op.input[0]), single(op.output[0])
            zero_value = len(op.input) < 3 or not op.input[2] or op.input[2] in initializers
            mode = next((a.s for a in op.attribute if a.name == "mode"), b"constant")
            if dq is None or dq.op_type != "DequantizeLinear" or q is None or q.op_type != "QuantizeLinear":
                continue
            if single(op.input[0]) is not op or mode != b"constant" or not zero_value or id(dq) in dropped:
                continue
            inputs = [dq.input[0], *dq.input[1:3], *q.input[1:3], op.input[1], op.input[2] if len(op.input) > 2 else ""]
            replaced[id(q)] = onnx.helper.make_node(QPAD, inputs, [q.output[0]], name=f"{op.name or op.output[0]}_pad")
            dropped.update({id(dq), id(op)})
        if op.op_type not in _FUNCTIONS or op.domain not in ("", "ai.onnx") or len(op.input) != 2:
            continue
        for k in (0, 1):
            dq, other = producer.get(op.input[k]), op.input[1 - k]
            if dq is None or dq.op_type != "DequantizeLinear" or constant(op.input[k]) or not constant(other):
                continue
            q = single(op.output[0])
            if single(op.input[k]) is not op or q is None or q.op_type != "QuantizeLinear" or id(dq) in dropped:
                continue
            zp_x = dq.input[2] if len(dq.input) > 2 else ""
            zp_y = q.input[2] if len(q.input) > 2 else ""
            node = onnx.helper.make_node(
                QTABLE,
                [dq.input[0], dq.input[1], zp_x, other, q.input[1], zp_y],
                [q.output[0]],
                name=f"{op.name or op.output[0]}_table",
                function=op.op_type,
            )
            replaced[id(q)] = node
            dropped.update({id(dq), id(op)})
            break
    if not replaced:
        return
    kept = [replaced.get(id(n), n) for n in nodes if id(n) not in dropped]
    del g.node[:]
    g.node.extend(kept)


def qpad(imp, node, ins, attrs):
    """A QPAD node: an int8 PAD with the zero point (ONNX Runtime's float Pad of zeros between a
    DequantizeLinear and a QuantizeLinear of one scale and zero point gives back every int8 input and
    the zero point around them)."""
    x, xs, xzp, ys, yzp, pads_v, value_v = (list(ins) + [None] * 7)[:7]
    x_q, y_q = onnx_qdq._quant(imp, node, xs, xzp, "input"), onnx_qdq._quant(imp, node, ys, yzp, "output")
    onnx_qdq._int8_activation(imp, node, x, "input", x_q)
    pads = onnx_qdq._param(imp, node, pads_v, "pads").astype(np.int64).reshape(-1)
    value = value_v.const if value_v is not None and value_v.const is not None else np.zeros(1)
    same = (x_q.scale, x_q.zero_point) == (y_q.scale, y_q.zero_point)
    if len(x.shape) != 4 or pads.size != 8 or pads[[0, 1, 4, 5]].any() or pads.min() < 0 or np.any(value) or not same:
        raise UnsupportedModelError(
            f"{imp.where(node)}: a Pad between DequantizeLinear and QuantizeLinear is imported for zeros around "
            "the height and width of an NCHW value, quantized alike on both sides; this one is not supported yet"
        )
    t, left, b, r = (int(p) for p in pads[[2, 3, 6, 7]])
    n, c, h, w = x.shape
    paddings = imp.const(np.array([[0, 0], [t, b], [left, r], [0, 0]], dtype=np.int32), "paddings", "int32")
    shape = (n, h + t + b, w + left + r, c)
    out = onnx_qdq._emit_int8(imp, "PAD", [imp.nhwc(x), paddings], shape, {}, node.output[0], y_q)
    return [_Value((n, c, shape[1], shape[2]), tensor=out, nhwc=True)]


def table_values(function: str, x_q, y_q, constants: np.ndarray) -> np.ndarray:
    """int8 tables [channels, 256]: QuantizeLinear(function(DequantizeLinear(x), constants[c])) for each
    int8 x (indexed as an unsigned byte), in float32 as ONNX Runtime computes it."""
    xs, xz = np.float32(x_q.scale[0]), x_q.zero_point[0]
    ys, yz = np.float32(y_q.scale[0]), y_q.zero_point[0]
    real = ((_BYTES - xz).astype(np.float32) * xs).astype(np.float32)[None, :]
    c = constants.astype(np.float32).reshape(-1, 1)
    with np.errstate(all="ignore"):
        f = (real * c if function == "Mul" else real + c).astype(np.float32)
        scaled = (f / ys).astype(np.float32)
    clamped = np.clip(scaled, np.float32(-128 - yz), np.float32(127 - yz))
    return (np.rint(clamped).astype(np.int32) + yz).astype(np.int8)


def qtable(imp, node, ins, attrs):
    """A QTABLE node: MC_TABLE_CHANNELS_INT8 (composed with the table before it where that is its only
    reader), or the three operators when the constant is neither per tensor nor per channel."""
    x, xs, xzp, cv, ys, yzp = ins
    function = str(attrs.get("function", ""))
    x_q, y_q = onnx_qdq._quant(imp, node, xs, xzp, "input"), onnx_qdq._quant(imp, node, ys, yzp, "output")
    onnx_qdq._int8_activation(imp, node, x, "input", x_q)
    c = cv.const.astype(np.float32) if cv is not None and cv.const is not None else None
    rank = len(x.shape)
    per_channel = (
        c is not None and rank == 4 and c.size == x.shape[1] and c.size > 1 and c.shape[-2:] == (1, 1) and c.ndim >= 3
    )
    fits = c is not None and c.size * 256 <= TABLE_BUDGET
    if c is None or not fits or not np.all(np.isfinite(c)) or len(y_q.scale) > 1 or not (c.size == 1 or per_channel):
        onnx = onnx_module()
        mid, real = f"{node.output[0]}_dq", f"{node.output[0]}_f"
        dq = onnx.helper.make_node("DequantizeLinear", node.input[:3], [mid], name=f"{node.name}_dq")
        fn = onnx.helper.make_node(function, [mid, node.input[3]], [real], name=f"{node.name}_{function}")
        q = onnx.helper.make_node("QuantizeLinear", [real, *node.input[4:]], list(node.output), name=node.name)
        v = onnx_qdq.dequantize(imp, dq, [x, xs, xzp], {})[0]
        v = onnx_layers.binary(imp, fn, [v, cv], {})[0]
        return onnx_qdq.quantize(imp, q, [v, ys, yzp], {})
    tables = table_values(function, x_q, y_q, c.reshape(-1))
    source = imp.nhwc(x) if per_channel else (imp.nhwc(x) if x.nhwc else imp.plain(x))
    nhwc = per_channel or x.nhwc
    what = f"QuantizeLinear({function}(DequantizeLinear(x), c))"
    before = imp.operators[-1] if imp.operators else None
    alone = before is not None and before.outputs[0] == source and imp.readers.get(node.input[0], 0) == 1
    earlier = _earlier_table(before) if alone and before is not None else None
    if earlier is not None and before is not None:  # compose with the table before (a Mul's, then this Add's)
        first = imp.tensors[earlier].data
        if first.shape[0] in (1, tables.shape[0]) or tables.shape[0] == 1:
            channels = max(first.shape[0], tables.shape[0])
            a = np.broadcast_to(first, (channels, 256)).astype(np.uint8).astype(np.int64)
            b = np.broadcast_to(tables, (channels, 256))
            composed = np.take_along_axis(b, a, axis=1).astype(np.int8)
            imp.tensors[earlier].data = np.ascontiguousarray(composed)
            imp.tensors[earlier].shape = composed.shape
            imp.tensors[source].quant = y_q
            if before.kind == TABLE_CHANNELS_INT8:
                before.options["functions"] = f"{before.options['functions']} then {what}"
            return [_Value(x.shape, tensor=source, nhwc=nhwc)]
    if before is not None and alone and (per_channel or (c.size == 1 and x.nhwc)):
        channels = imp.tensors[source].shape[-1]
        if _post_table_fits(before, channels):  # the layer's epilogue looks the table up (ops/requant_float.py)
            full = np.ascontiguousarray(np.broadcast_to(tables, (channels, 256)))
            lut = imp.add_tensor(f"post_table_{len(imp.tensors)}", full.shape, "int8", full)
            imp.tensors[lut].quant = imp.tensors[source].quant  # the requantization's own output
            before.inputs.append(lut)
            imp.tensors[source].quant = y_q
            return [_Value(x.shape, tensor=source, nhwc=nhwc)]
    lut = imp.add_tensor(f"tables_{len(imp.tensors)}", tables.shape, "int8", np.ascontiguousarray(tables))
    out = onnx_qdq._int8_tensor(imp, node.output[0], imp.tensors[source].shape, y_q)
    imp.operators.append(Operator(TABLE_CHANNELS_INT8, [source, lut], [out], {"functions": what}, len(imp.operators)))
    return [_Value(x.shape, tensor=out, nhwc=nhwc)]


def _earlier_table(op) -> int | None:
    """The index of the table tensor ``op`` ends with: a MC_TABLE_CHANNELS_INT8's, or a layer's post table."""
    if op.kind == TABLE_CHANNELS_INT8:
        return op.inputs[1]
    return op.inputs[POST_TABLE_INPUT] if has_post_table(op) else None


def _post_table_fits(op, channels: int) -> bool:
    """An int8 depthwise QLinearConv (ONNX Runtime's requantization, no fused activation, no post table
    yet) whose epilogue can apply a [channels, 256] table (tf2onnx's BatchNorm after it)."""
    return (
        op.kind == "DEPTHWISE_CONV_2D"
        and float_requant(op)
        and not has_post_table(op)
        and len(op.inputs) == POST_TABLE_INPUT
        and op.options.get("activation") == "NONE"
        and channels * 256 <= TABLE_BUDGET
    )


# the QDQ importer's converters, the tables' included (onnx_import.py)
CONVERTERS = {**onnx_qdq.CONVERTERS, **onnx_qdq_more.CONVERTERS, **onnx_integer.CONVERTERS, QTABLE: qtable, QPAD: qpad}
SUPPORTED = onnx_qdq.SUPPORTED | onnx_qdq_more.SUPPORTED | onnx_integer.SUPPORTED | {QTABLE, QPAD}
