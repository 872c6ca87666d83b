"""QLinearSigmoid, QLinearLeakyRelu and QLinearConcat (com.microsoft operators ONNX Runtime's QDQ
optimizer makes of DQ -> Sigmoid/LeakyRelu/Concat -> Q) -> int8 table lookups and CONCATENATION.

Each of them is, per int8 input value, a fixed int8 output: ONNX Runtime itself computes them from
256-entry lookup tables it builds when it loads the model (its QLinearLookupBase: the float function
with MLAS's logistic approximation, then QuantizeLinear; QLinearConcat's per-input requantization
tables). The importer gets those tables from ONNX Runtime (which importing a QDQ model needs anyway,
onnx_qdq.ort_optimized): it runs the operator alone, with the model's own scales, zero points and
attributes, on the 256 possible inputs; the outputs are the table, bit for bit what ONNX Runtime
computes on this machine. Sigmoid and LeakyRelu become one MC_TABLE_CHANNELS_INT8 (ops/table_channels.py,
one table); QLinearConcat maps each input whose quantization differs from the output's through its
table, then concatenates bytes (CONCATENATION of equally quantized int8 values).
"""

from __future__ import annotations

import numpy as np

from microcompiler.errors import UnsupportedModelError, printable
from microcompiler.frontend import onnx_qdq
from microcompiler.frontend.onnx_layers import _Value
from microcompiler.frontend.onnx_read import onnx_module
from microcompiler.ir import Operator
from microcompiler.ops.table_channels import TABLE_CHANNELS_INT8

_DTYPES = {np.dtype(np.uint8): 2, np.dtype(np.int8): 3}  # TensorProto UINT8, INT8


def _run_alone(imp, node, op_type: str, inputs: list, feeds: dict, attrs: dict, elem: int) -> np.ndarray:
    """ONNX Runtime's output of one ``op_type`` node (domain com.microsoft): ``inputs`` names of ``feeds``
    or constant arrays."""
    onnx = onnx_module()
    import onnxruntime as ort

    names, inits = [], []
    for k, value in enumerate(inputs):
        if isinstance(value, str):
            names.append(value)
            continue
        name = f"c{k}"
        names.append(name)
        inits.append(onnx.numpy_helper.from_array(np.asarray(value), name))
    n = onnx.helper.make_node(op_type, names, ["y"], domain="com.microsoft", **attrs)
    graph = onnx.helper.make_graph(
        [n],
        "alone",
        [onnx.helper.make_tensor_value_info(k, elem, list(v.shape)) for k, v in feeds.items()],
        [onnx.helper.make_tensor_value_info("y", elem, None)],
        inits,
    )
    opsets = [onnx.helper.make_opsetid("", 17), onnx.helper.make_opsetid("com.microsoft", 1)]
    model = onnx.helper.make_model(graph, opset_imports=opsets)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        return session.run(None, feeds)[0]
    except Exception as exc:
        first = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise UnsupportedModelError(
            f"{imp.where(node)}: ONNX Runtime cannot run it alone ({printable(first)})"
        ) from None


def _ort_outputs(imp, node, op_type: str, inputs: list, attrs: dict, zp_dtype: np.dtype) -> np.ndarray:
    """ONNX Runtime's int8 output of ``op_type`` (domain com.microsoft) for the 256 possible inputs,
    indexed by the input byte as unsigned. ``inputs``: the node's inputs, "x" where the 256 values go,
    else constant arrays."""
    x = np.arange(256, dtype=np.uint8).view(zp_dtype)  # byte b at index b
    y = _run_alone(imp, node, op_type, inputs, {"x": x}, attrs, _DTYPES[np.dtype(zp_dtype)])
    # ONNX Runtime's uint8 values are the IR's int8 ones plus 128 (onnx_qdq._quant): input byte b of the
    # IR is the int8 value v = int8(b), i.e. ONNX Runtime's v + 128
    v = np.arange(256, dtype=np.uint8).view(np.int8).astype(np.int32)
    if np.dtype(zp_dtype) == np.uint8:
        return (y.astype(np.int32)[v + 128] - 128).astype(np.int8)
    return y.view(np.int8)[v & 0xFF].astype(np.int8)


def _zp_dtype(v: _Value | None) -> np.dtype:
    return np.dtype(v.const.dtype) if v is not None and v.const is not None else np.dtype(np.int8)


def _emit_table(imp, source: int, table: np.ndarray, name: str, y_q, what: str) -> int:
    lut = imp.add_tensor(f"tables_{len(imp.tensors)}", (1, 256), "int8", table.reshape(1, 256))
    out = onnx_qdq._int8_tensor(imp, name, imp.tensors[source].shape, y_q)
    imp.operators.append(Operator(TABLE_CHANNELS_INT8, [source, lut], [out], {"functions": what}, len(imp.operators)))
    return out


def qlinear_unary(imp, node, ins, attrs):
    """QLinearSigmoid, QLinearLeakyRelu: one int8 table computed by ONNX Runtime."""
    x, xs, xzp, ys, yzp = (list(ins) + [None] * 5)[:5]
    if x is None or x.const is not None:
        raise UnsupportedModelError(f"{imp.where(node)}: its input must be an int8 activation")
    x_q = onnx_qdq._quant(imp, node, xs, xzp, "input")
    onnx_qdq._int8_activation(imp, node, x, "input", x_q)
    y_q = onnx_qdq._quant(imp, node, ys, yzp, "output")
    extra = {"alpha": float(attrs.get("alpha", 0.01))} if node.op_type == "QLinearLeakyRelu" else {}
    inputs = ["x", xs.const, xzp.const if xzp is not None else np.zeros((), np.int8), ys.const]
    inputs.append(yzp.const if yzp is not None else np.zeros((), np.int8))
    table = _ort_outputs(imp, node, node.op_type, inputs, extra, _zp_dtype(xzp))
    source = imp.nhwc(x) if x.nhwc else imp.plain(x)
    out = _emit_table(imp, source, table, node.output[0], y_q, f"ONNX Runtime's {node.op_type} table")
    return [_Value(x.shape, tensor=out, nhwc=x.nhwc)]


def qlinear_concat(imp, node, ins, attrs):
    """QLinearConcat: each input requantized to the output's scale and zero point by ONNX Runtime's
    table (none where they are equal), then CONCATENATION."""
    ys, yzp, rest = ins[0], ins[1], list(ins[2:])
    if len(rest) % 3 or not rest:
        raise UnsupportedModelError(f"{imp.where(node)}: inputs must be (value, scale, zero point) triples")
    y_q = onnx_qdq._quant(imp, node, ys, yzp, "output")
    triples = [rest[k : k + 3] for k in range(0, len(rest), 3)]
    values = [t[0] for t in triples]
    if any(v is None or v.const is not None for v in values) or len({len(v.shape) for v in values}) != 1:
        raise UnsupportedModelError(f"{imp.where(node)}: QLinearConcat of int8 activations of one rank only")
    rank = len(values[0].shape)
    axis = int(attrs.get("axis", 0)) % rank
    nhwc = rank == 4 and any(v.nhwc for v in values)
    sources = []
    for k, (v, s, z) in enumerate(triples):
        q = onnx_qdq._quant(imp, node, s, z, f"input {k}")
        onnx_qdq._int8_activation(imp, node, v, f"input {k}", q)
        source = imp.nhwc(v) if nhwc else imp.plain(v)
        if (q.scale, q.zero_point) != (y_q.scale, y_q.zero_point):
            inputs = [ys.const, yzp.const if yzp is not None else np.zeros((), np.int8), "x", s.const]
            inputs.append(z.const if z is not None else np.zeros((), np.int8))
            table = _ort_outputs(imp, node, "QLinearConcat", inputs, {"axis": 0}, _zp_dtype(z))
            source = _emit_table(
                imp, source, table, f"{node.output[0]}_in{k}", y_q, "ONNX Runtime's QLinearConcat table"
            )
        sources.append(source)
    shape = list(values[0].shape)
    shape[axis] = sum(v.shape[axis] for v in values)
    ir_axis = {0: 0, 1: 3, 2: 1, 3: 2}[axis] if nhwc else axis
    ir_shape = list(imp.tensors[sources[0]].shape)
    ir_shape[ir_axis] = sum(imp.tensors[s].shape[ir_axis] for s in sources)
    options = dict(axis=ir_axis, activation="NONE")
    out = onnx_qdq._emit_int8(imp, "CONCATENATION", sources, tuple(ir_shape), options, node.output[0], y_q)
    return [_Value(tuple(shape), tensor=out, nhwc=nhwc)]


def qlinear_mul(imp, node, ins, attrs):
    """ONNX Runtime's QLinearMul of two int8 activations of one shape: MC_QLINEAR_MUL_INT8
    (ops/qlinear_mul.py), after checking its formula against ONNX Runtime on all 65,536 input pairs."""
    from microcompiler.ops.qlinear_mul import QLINEAR_MUL_INT8, qlinear_mul_outputs

    a, a_s, a_zp, b, b_s, b_zp, c_s, c_zp = (list(ins) + [None] * 8)[:8]
    if a is None or b is None or a.const is not None or b.const is not None or a.shape != b.shape:
        raise UnsupportedModelError(
            f"{imp.where(node)}: QLinearMul of two activations of one shape only (not supported yet)"
        )
    a_q = onnx_qdq._quant(imp, node, a_s, a_zp, "first input")
    b_q = onnx_qdq._quant(imp, node, b_s, b_zp, "second input")
    onnx_qdq._int8_activation(imp, node, a, "first input", a_q)
    onnx_qdq._int8_activation(imp, node, b, "second input", b_q)
    y_q = onnx_qdq._quant(imp, node, c_s, c_zp, "output")
    zp_dtype = _zp_dtype(a_zp)
    pairs = np.arange(65536, dtype=np.uint32)
    ua, ub = (pairs >> 8).astype(np.uint8), (pairs & 0xFF).astype(np.uint8)
    zeros = [np.zeros((), zp_dtype) if v is None else v.const for v in (a_zp, b_zp, c_zp)]
    inputs = ["a", a_s.const, zeros[0], "b", b_s.const, zeros[1], c_s.const, zeros[2]]
    feeds = {"a": ua.view(zp_dtype), "b": ub.view(zp_dtype)}
    theirs = _run_alone(imp, node, "QLinearMul", inputs, feeds, {}, _DTYPES[zp_dtype]).astype(np.int32)
    shift = 128 if zp_dtype == np.uint8 else 0  # ONNX Runtime's uint8 values are the IR's int8 ones + 128
    ia, ib = (u.view(zp_dtype).astype(np.int32) - shift for u in (ua, ub))
    ours = qlinear_mul_outputs(ia, ib, a_q, b_q, y_q).astype(np.int32)
    if not np.array_equal(ours, theirs - shift):
        raise UnsupportedModelError(
            f"{imp.where(node)}: this ONNX Runtime's QLinearMul computes otherwise than MLAS's x86 kernel "
            "that microcompiler reproduces; not supported on this machine"
        )
    nhwc = len(a.shape) == 4 and (a.nhwc or b.nhwc)
    sources = [imp.nhwc(v) if nhwc else imp.plain(v) for v in (a, b)]
    shape = imp.tensors[sources[0]].shape
    out = onnx_qdq._emit_int8(imp, QLINEAR_MUL_INT8, sources, shape, {}, node.output[0], y_q)
    return [_Value(a.shape, tensor=out, nhwc=nhwc)]


CONVERTERS = {
    "QLinearSigmoid": qlinear_unary,
    "QLinearLeakyRelu": qlinear_unary,
    "QLinearConcat": qlinear_concat,
    "QLinearMul": qlinear_mul,
}
SUPPORTED = frozenset(
    {
        "com.microsoft.QLinearSigmoid",
        "com.microsoft.QLinearLeakyRelu",
        "com.microsoft.QLinearConcat",
        "com.microsoft.QLinearMul",
    }
)
