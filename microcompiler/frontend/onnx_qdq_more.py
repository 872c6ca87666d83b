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
    tables = np.ascontiguousarray(table.reshape(-1, 256))
    lut = imp.add_tensor(f"tables_{len(imp.tensors)}", tables.shape, "int8", tables)
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


TABLES_LIMIT = 65536  # bytes of per-channel tables for a QLinearMul by a constant (256 channels)


def _tables_axis(c: np.ndarray, shape: tuple[int, ...]) -> int | None:
    """The one axis of ``shape`` along which the constant ``c`` (broadcast to it) varies: -1 where it is
    one value, None where it varies along more than one axis."""
    full = np.broadcast_to(c, shape)
    varying = [k for k in range(len(shape)) if shape[k] > 1 and not np.all(full == full.take([0], axis=k))]
    if not varying:
        return -1
    return varying[0] if len(varying) == 1 else None


def _const_tables(imp, node, x, ins, which: int, axis: int, zp_dtype) -> np.ndarray:
    """ONNX Runtime's QLinearMul/QLinearAdd (``node.op_type``) of the 256 possible activation bytes and
    the constant, per value along ``axis`` (-1: one table): int8 [channels, 256] indexed by the byte
    read as unsigned."""
    c = ins[3 * (1 - which)].const
    values = np.broadcast_to(c, x.shape)
    column = values.reshape(-1)[:1] if axis < 0 else np.moveaxis(values, axis, 0).reshape(x.shape[axis], -1)[:, 0]
    channels = column.size
    # the operands as the model broadcasts them: where each value of the constant meets a run of
    # activation values (a channel's pixels), ONNX Runtime runs its scalar kernel: so here, a row of the
    # 256 bytes per value; where they meet one by one, its vector kernel: the values along a row
    scalar_runs = axis < 0 or int(np.prod(x.shape[axis + 1 :])) > 1
    grid = np.arange(256, dtype=np.uint8).view(zp_dtype)
    if scalar_runs:
        feed = np.ascontiguousarray(np.broadcast_to(grid, (channels, 256)))
        constant = np.ascontiguousarray(column.reshape(channels, 1)).astype(c.dtype)
    else:
        feed = np.repeat(grid.reshape(256, 1), channels, axis=1)
        constant = np.ascontiguousarray(column.reshape(1, channels)).astype(c.dtype)
    zeros = [np.zeros((), zp_dtype) if ins[k] is None else ins[k].const for k in (2, 5, 7)]
    operands = [("a", ins[1].const, zeros[0]), (constant, ins[4].const, zeros[1])]
    if which == 1:  # the activation is the second input
        operands = [(constant, ins[1].const, zeros[0]), ("a", ins[4].const, zeros[1])]
    inputs = [*operands[0], *operands[1], ins[6].const, zeros[2]]
    y = _run_alone(imp, node, node.op_type, inputs, {"a": feed}, {}, _DTYPES[np.dtype(zp_dtype)])
    y = y.reshape(channels, 256) if scalar_runs else y.reshape(256, channels).T
    v = np.arange(256, dtype=np.uint8).view(np.int8).astype(np.int32)
    if np.dtype(zp_dtype) == np.uint8:  # ONNX Runtime's uint8 values are the IR's int8 ones plus 128
        return (y.astype(np.int32)[:, v + 128] - 128).astype(np.int8)
    return np.ascontiguousarray(y).view(np.int8)[:, v & 0xFF].astype(np.int8)


def _by_constant(imp, node, ins, shape, y_q, zp_dtype) -> _Value | None:
    """QLinearMul/QLinearAdd of an activation and a constant that is one value or varies along one axis
    (the channels, or the last axis): MC_TABLE_CHANNELS_INT8 of ONNX Runtime's own outputs; None for
    other operands."""
    a, b = ins[0], ins[3]
    if (a.const is None) == (b.const is None):
        return None
    which = 0 if a.const is None else 1
    x = (a, b)[which]
    constant = (a, b)[1 - which].const
    axis = _tables_axis(constant, shape) if constant is not None and shape == x.shape else None
    nhwc_ok = axis is not None and (
        axis == -1 or (len(shape) == 4 and axis == 1) or (not x.nhwc and axis == len(shape) - 1)
    )
    channels = 1 if axis is None or axis < 0 else shape[axis]
    if constant is not None and axis is not None and nhwc_ok and channels * 256 <= TABLES_LIMIT:
        tables = _const_tables(imp, node, x, ins, which, axis, zp_dtype)
        per_channel = axis == 1 and len(shape) == 4
        source = imp.nhwc(x) if per_channel or x.nhwc else imp.plain(x)
        out = _emit_table(
            imp, source, tables, node.output[0], y_q, f"ONNX Runtime's {node.op_type} tables (by a constant)"
        )
        return _Value(x.shape, tensor=out, nhwc=per_channel or x.nhwc)
    return None


def qlinear_add(imp, node, ins, attrs):
    """ONNX Runtime's QLinearAdd: by a constant (QOperator models' BatchNorm) as tables
    (``_by_constant``); of two activations, of one shape or where one broadcasts: ``_activations_add``."""
    full = (list(ins) + [None] * 8)[:8]
    a, b = full[0], full[3]
    if a is not None and b is not None and a.const is None and b.const is None:
        return _activations_add(imp, node, full)
    if a is not None and b is not None and (a.const is None) != (b.const is None):
        x = a if a.const is None else b
        zp_dtype = _zp_dtype(full[2])
        for v, s_, z_, what in ((a, full[1], full[2], "first input"), (b, full[4], full[5], "second input")):
            q = onnx_qdq._quant(imp, node, s_, z_, what)
            if v.const is None:
                onnx_qdq._int8_activation(imp, node, v, what, q)
            elif v.const.dtype != zp_dtype:
                raise UnsupportedModelError(
                    f"{imp.where(node)}: its constant {what} is {v.const.dtype}, not its zero point's type"
                )
        y_q = onnx_qdq._quant(imp, node, full[6], full[7], "output")
        if _broadcastable(a.shape, b.shape) and tuple(np.broadcast_shapes(a.shape, b.shape)) == x.shape:
            tabled = _by_constant(imp, node, full, x.shape, y_q, zp_dtype)
            if tabled is not None:
                return [tabled]
    return onnx_qdq.qlinear_add(imp, node, ins, attrs)


def _activations_add(imp, node, ins):
    """QLinearAdd of two int8 activations: MC_QLINEAR_ADD_INT8, in ONNX Runtime's zero points (its
    optimizer makes QDQ models' int8 uint8; a model's own int8 QLinearAdd stays int8: ``zero_point_bias``),
    on both operands broadcast to the output's shape where one broadcasts (BROADCAST_TO). ONNX Runtime's broadcast loop calls MLAS's kernel per
    innermost span; where the first input is one value over that span (it is 1 on the output's last axis
    that is not, and the second input is not) it passes the second input as MLAS's A: then MLAS's formula
    holds with the operands exchanged (its fixed part ``zp_c - (ratio_b zp_b + ratio_a zp_a)`` and the
    fused multiply-adds in that order), so the operator gets them in that order. Checked against ONNX
    Runtime on all 65,536 input pairs of each layout, int8 and uint8 (tests/test_onnx_qoperator.py)."""
    from microcompiler.ops.qlinear_add import QLINEAR_ADD_INT8

    a, a_s, a_zp, b, b_s, b_zp, c_s, c_zp = ins
    if not _broadcastable(a.shape, b.shape):
        raise UnsupportedModelError(
            f"{imp.where(node)}: inputs {list(a.shape)} and {list(b.shape)} do not broadcast; the file is damaged"
        )
    a_q = onnx_qdq._quant(imp, node, a_s, a_zp, "first input")
    b_q = onnx_qdq._quant(imp, node, b_s, b_zp, "second input")
    onnx_qdq._int8_activation(imp, node, a, "first input", a_q)
    onnx_qdq._int8_activation(imp, node, b, "second input", b_q)
    y_q = onnx_qdq._quant(imp, node, c_s, c_zp, "output")
    shape = tuple(np.broadcast_shapes(a.shape, b.shape))
    padded = [(1,) * (len(shape) - len(v.shape)) + tuple(v.shape) for v in (a, b)]
    last = max((k for k, n in enumerate(shape) if n != 1), default=None)
    exchanged = last is not None and padded[0][last] == 1 and padded[1][last] != 1
    nhwc = len(shape) == 4 and (a.nhwc or b.nhwc)
    zp_dtype = _zp_dtype(a_zp)
    sources = [_full_operand(imp, v, shape, nhwc, q, zp_dtype) for v, q in ((a, a_q), (b, b_q))]
    if exchanged:
        sources.reverse()
    options = {"zero_point_bias": 128 if np.dtype(zp_dtype) == np.uint8 else 0}  # ONNX Runtime's zero points
    out = onnx_qdq._emit_int8(
        imp, QLINEAR_ADD_INT8, sources, imp.tensors[sources[0]].shape, options, node.output[0], y_q
    )
    return [_Value(shape, tensor=out, nhwc=nhwc)]


def qlinear_mul(imp, node, ins, attrs):
    """ONNX Runtime's QLinearMul. By a constant that is one value, or varies along one axis (the channels
    of an NHWC value, or the last axis): one int8 table per value, computed by ONNX Runtime itself
    (MC_TABLE_CHANNELS_INT8). Otherwise MC_QLINEAR_MUL_INT8 (ops/qlinear_mul.py) on two operands of one
    shape (a constant broadcast at import, an activation by BROADCAST_TO), after checking its formula
    against ONNX Runtime on all 65,536 input pairs, as ONNX Runtime runs them (same shape, or one side
    broadcast)."""
    from microcompiler.ops.qlinear_mul import QLINEAR_MUL_INT8, qlinear_mul_outputs

    ins = (list(ins) + [None] * 8)[:8]
    a, a_s, a_zp, b, b_s, b_zp, c_s, c_zp = ins
    if a is None or b is None or (a.const is not None and b.const is not None):
        raise UnsupportedModelError(f"{imp.where(node)}: QLinearMul needs an int8 activation input")
    a_q = onnx_qdq._quant(imp, node, a_s, a_zp, "first input")
    b_q = onnx_qdq._quant(imp, node, b_s, b_zp, "second input")
    y_q = onnx_qdq._quant(imp, node, c_s, c_zp, "output")
    shape = tuple(np.broadcast_shapes(a.shape, b.shape)) if _broadcastable(a.shape, b.shape) else None
    if shape is None:
        raise UnsupportedModelError(
            f"{imp.where(node)}: inputs {list(a.shape)} and {list(b.shape)} do not broadcast; the file is damaged"
        )
    zp_dtype = _zp_dtype(a_zp)
    for v, q, what in ((a, a_q, "first input"), (b, b_q, "second input")):
        if v.const is None:
            onnx_qdq._int8_activation(imp, node, v, what, q)
        elif v.const.dtype != zp_dtype:
            raise UnsupportedModelError(
                f"{imp.where(node)}: its constant {what} is {v.const.dtype}, not its zero point's type"
            )
    tabled = _by_constant(imp, node, ins, shape, y_q, zp_dtype)
    if tabled is not None:
        return [tabled]
    _check_mul_formula(imp, node, ins, a_q, b_q, y_q, zp_dtype, a.shape != b.shape, qlinear_mul_outputs)
    nhwc = len(shape) == 4 and any(v.const is None and v.nhwc for v in (a, b))
    sources = [_full_operand(imp, v, shape, nhwc, q, zp_dtype) for v, q in ((a, a_q), (b, b_q))]
    options = {"zero_point_bias": 128 if np.dtype(zp_dtype) == np.uint8 else 0}  # ONNX Runtime's zero points
    out = onnx_qdq._emit_int8(
        imp, QLINEAR_MUL_INT8, sources, imp.tensors[sources[0]].shape, options, node.output[0], y_q
    )
    return [_Value(shape, tensor=out, nhwc=nhwc)]


def _broadcastable(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


def _full_operand(imp, v, shape, nhwc: bool, q, zp_dtype) -> int:
    """An operand as an int8 IR tensor of the output's full shape (NHWC where ``nhwc``)."""
    ir_shape = (shape[0], shape[2], shape[3], shape[1]) if nhwc else shape
    if v.const is not None:
        ints = v.const.astype(np.int32) - (128 if np.dtype(zp_dtype) == np.uint8 else 0)
        full = np.broadcast_to(ints.reshape((1,) * (len(shape) - ints.ndim) + ints.shape), shape)
        data = np.ascontiguousarray(np.transpose(full, (0, 2, 3, 1)) if nhwc else full).astype(np.int8)
        return onnx_qdq._int8_tensor(imp, f"constant_{len(imp.tensors)}", ir_shape, q, data)
    source = imp.nhwc(v) if nhwc else imp.plain(v)
    if imp.tensors[source].shape == ir_shape:
        return source
    if len(v.shape) != len(shape):  # a lower-rank activation: ONNX's broadcast aligns it to the right
        padded = (1,) * (len(shape) - len(v.shape)) + tuple(v.shape)
        padded = (padded[0], padded[2], padded[3], padded[1]) if nhwc else padded
        source = imp.emit("RESHAPE", [source, imp.shape_const(padded)], padded, {}, f"{imp.tensors[source].name}_rank")
    target = imp.const(np.array(ir_shape, dtype=np.int32), "shape", "int32")
    name = f"{imp.tensors[source].name}_broadcast"
    return onnx_qdq._emit_int8(imp, "BROADCAST_TO", [source, target], ir_shape, {}, name, q)


def _check_mul_formula(imp, node, ins, a_q, b_q, y_q, zp_dtype, broadcast: bool, formula) -> None:
    """MLAS's x86 QLinearMul formula (ops/qlinear_mul.py) against ONNX Runtime on all 65,536 input pairs:
    both of one shape, and (where the model broadcasts) each side as the scalar of a row."""
    a_s, b_s, c_s = ins[1], ins[4], ins[6]
    zeros = [np.zeros((), zp_dtype) if ins[k] is None else ins[k].const for k in (2, 5, 7)]
    inputs = ["a", a_s.const, zeros[0], "b", b_s.const, zeros[1], c_s.const, zeros[2]]
    grid = np.arange(256, dtype=np.uint8)
    ua, ub = np.repeat(grid, 256).reshape(256, 256), np.tile(grid, 256).reshape(256, 256)
    layouts = [(ua, ub)]
    if broadcast:  # one side a scalar per row: ONNX Runtime's broadcast kernels
        layouts += [(ua, grid.reshape(256, 1)), (grid.reshape(256, 1), ub.T)]
    shift = 128 if np.dtype(zp_dtype) == np.uint8 else 0  # ONNX Runtime's uint8 values are the IR's int8 + 128
    for fa, fb in layouts:
        feeds = {"a": np.ascontiguousarray(fa).view(zp_dtype), "b": np.ascontiguousarray(fb).view(zp_dtype)}
        theirs = _run_alone(imp, node, "QLinearMul", inputs, feeds, {}, _DTYPES[np.dtype(zp_dtype)]).astype(np.int32)
        ia, ib = (np.broadcast_to(f, (256, 256)).view(zp_dtype).astype(np.int32) - shift for f in (fa, fb))
        ours = formula(ia, ib, a_q, b_q, y_q, shift).astype(np.int32)
        if not np.array_equal(ours, theirs - shift):
            raise UnsupportedModelError(
                f"{imp.where(node)}: this ONNX Runtime's QLinearMul computes otherwise than MLAS's x86 kernel "
                "that microcompiler reproduces; not supported on this machine"
            )


CONVERTERS = {
    "QLinearSigmoid": qlinear_unary,
    "QLinearLeakyRelu": qlinear_unary,
    "QLinearConcat": qlinear_concat,
    "QLinearMul": qlinear_mul,
    "QLinearAdd": qlinear_add,
}
SUPPORTED = frozenset(
    {
        "com.microsoft.QLinearSigmoid",
        "com.microsoft.QLinearLeakyRelu",
        "com.microsoft.QLinearConcat",
        "com.microsoft.QLinearMul",
    }
)
