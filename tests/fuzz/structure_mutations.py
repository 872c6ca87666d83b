"""Structure-aware model mutants: edits of the flatbuffer's fields, not of its bytes.

Each mutant is a seed model (tests/fuzz/model_mutations.py) with one to three edits of its parsed
structure (the flatbuffer object API of the pinned TFLM schema): a tensor's shape (a dimension
changed, added or removed), its type, an operator's input or output index, quantization fields
(the number of scales, a scale, a zero point, the quantized dimension), an operator code's two
fields, the input and output lists of the model or of another subgraph, a numeric builtin option,
or a custom operator's option (a value of its flexbuffer map changed or removed). The model is packed
again, so every mutant is a well-formed flatbuffer that says something else: what the importer and
the kernels' checks must refuse or compute exactly as TFLM does.
"""

from __future__ import annotations

import random

import flatbuffers
import numpy as np
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

STRUCTURE_KINDS = ("shape", "type", "index", "quant", "opcode", "io", "option", "custom")
TYPES = (
    fb.TensorType.FLOAT32,
    fb.TensorType.INT8,
    fb.TensorType.INT16,
    fb.TensorType.INT32,
    fb.TensorType.INT64,
    fb.TensorType.UINT8,
    fb.TensorType.BOOL,
)
OPCODES = [v for k, v in vars(fb.BuiltinOperator).items() if not k.startswith("_") and isinstance(v, int)]
ODD_SCALES = (0.0, float("nan"), float("inf"), -0.5, 1e-30, 1e38, 3e38, 1.0, 2.0**-20)


def _dim(rng: random.Random, d: int) -> int:
    return rng.choice([0, 1, 2, 3, d - 1, d + 1, 2 * d, max(1, d // 2), 7, 16])


def mutate_structure(rng: random.Random, data: bytes, edits: int | None = None) -> tuple[bytes, list[str]]:
    """The seed ``data`` with 1 to 3 structural edits, and a description of each."""
    model = fb.ModelT.InitFromPackedBuf(data, 0)
    done = []
    for _ in range(edits or rng.choice((1, 1, 1, 2, 3))):
        kind = rng.choice(STRUCTURE_KINDS)
        note = _EDITS[kind](rng, model)
        if note:
            done.append(f"{kind}: {note}")
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output()), done


def _subgraph(rng, model):
    return rng.choice(model.subgraphs)


def _tensor(rng, model):
    sub = _subgraph(rng, model)
    if not sub.tensors:
        return None, None
    k = rng.randrange(len(sub.tensors))
    return k, sub.tensors[k]


def _shape(rng, model):
    k, t = _tensor(rng, model)
    if t is None:
        return None
    shape = list(t.shape if t.shape is not None else [])
    how = rng.choice(("dim", "dim", "add", "drop"))
    if how == "dim" and shape:
        i = rng.randrange(len(shape))
        shape[i] = _dim(rng, int(shape[i]))
    elif how == "add":
        shape.insert(rng.randrange(len(shape) + 1), rng.choice((1, 1, 2, 3)))
    elif shape:
        shape.pop(rng.randrange(len(shape)))
    t.shape = shape
    return f"tensor {k} shape {shape}"


def _type(rng, model):
    k, t = _tensor(rng, model)
    if t is None:
        return None
    t.type = rng.choice(TYPES)
    return f"tensor {k} type {t.type}"


def _index(rng, model):
    sub = _subgraph(rng, model)
    if not sub.operators:
        return None
    o = rng.randrange(len(sub.operators))
    op = sub.operators[o]
    lists = [name for name in ("inputs", "outputs") if getattr(op, name) is not None and len(getattr(op, name))]
    if not lists:
        return None
    name = rng.choice(lists)
    values = list(getattr(op, name))
    i = rng.randrange(len(values))
    how = rng.choice(("other", "other", "absent", "repeat", "drop"))
    n = len(sub.tensors)
    if how == "other":
        values[i] = rng.randrange(n)
    elif how == "absent":
        values[i] = -1
    elif how == "repeat":
        values.append(values[i])
    else:
        values.pop(i)
    setattr(op, name, values)
    return f"operator {o} {name} {values}"


def _quant(rng, model):
    sub = _subgraph(rng, model)
    quantized = [
        (k, t)
        for k, t in enumerate(sub.tensors)
        if t.quantization is not None and t.quantization.scale is not None and len(t.quantization.scale)
    ]
    if not quantized:
        return None
    k, t = rng.choice(quantized)
    q = t.quantization
    scale = [float(s) for s in q.scale]
    zp = [int(z) for z in (q.zeroPoint if q.zeroPoint is not None else [0])]
    how = rng.choice(("count", "scale", "zero_point", "axis"))
    if how == "count":
        n = rng.choice((1, max(1, len(scale) - 1), len(scale) + 1, 3))
        scale = (scale * n)[:n] if scale else [1.0] * n
        scale = [s * (1 + 0.01 * j) for j, s in enumerate(scale)]
        zp = (zp * n)[:n]
    elif how == "scale":
        scale[rng.randrange(len(scale))] = rng.choice(ODD_SCALES)
    elif how == "zero_point":
        zp[rng.randrange(len(zp))] = rng.choice((-129, -128, -1, 1, 127, 128, 32767, 1 << 20))
    else:
        q.quantizedDimension = rng.choice((0, 1, 2, 3, 4, 7))
    q.scale, q.zeroPoint = scale, zp
    return f"tensor {k} quantization {how}: scale {scale[:4]} zero point {zp[:4]} axis {q.quantizedDimension}"


def _opcode(rng, model):
    if not model.operatorCodes:
        return None
    k = rng.randrange(len(model.operatorCodes))
    code = model.operatorCodes[k]
    value = rng.choice(OPCODES)
    if rng.random() < 0.5:
        code.builtinCode = value
        return f"opcode {k} builtin_code {value}"
    code.deprecatedBuiltinCode = min(value, 127)
    return f"opcode {k} deprecated_builtin_code {min(value, 127)}"


def _io(rng, model):
    s = 0 if len(model.subgraphs) == 1 or rng.random() < 0.5 else rng.randrange(1, len(model.subgraphs))
    sub = model.subgraphs[s]
    name = rng.choice(("inputs", "outputs"))
    values = list(getattr(sub, name) if getattr(sub, name) is not None else [])
    how = rng.choice(("repeat", "other", "drop"))
    if how == "repeat" and values:
        values.append(rng.choice(values))
    elif how == "other" and values and sub.tensors:
        values[rng.randrange(len(values))] = rng.randrange(len(sub.tensors))
    elif values and len(values) > 1:
        values.pop(rng.randrange(len(values)))
    else:
        return None
    setattr(sub, name, values)
    return f"subgraph {s} {name} {values}"


def _option(rng, model):
    sub = _subgraph(rng, model)
    ops = [(o, op) for o, op in enumerate(sub.operators) if op.builtinOptions is not None]
    if not ops:
        return None
    o, op = rng.choice(ops)
    fields = [
        (name, v)
        for name, v in vars(op.builtinOptions).items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    ]
    if not fields:
        return None
    name, value = rng.choice(fields)
    if isinstance(value, float):
        new = rng.choice((0.0, -1.0, float("nan"), 1e-8, 1e30, value * 2))
    else:
        new = rng.choice((-1, 0, 1, 2, 3, 4, 5, 6, 100, value + 1, value - 1))
    setattr(op.builtinOptions, name, new)
    return f"operator {o} option {name} {value} -> {new}"


def _custom(rng, model):
    """One value of a custom operator's flexbuffer options changed (an odd int, float or the other
    bool) or removed."""
    from flatbuffers import flexbuffers

    sub = _subgraph(rng, model)
    ops = [(o, op) for o, op in enumerate(sub.operators) if op.customOptions is not None and len(op.customOptions)]
    if not ops:
        return None
    o, op = rng.choice(ops)
    try:
        options = flexbuffers.Loads(bytes(bytearray(op.customOptions)))
    except Exception:  # noqa: BLE001 - not a flexbuffer map: nothing to edit
        return None
    if not isinstance(options, dict) or not options:
        return None
    key = rng.choice(sorted(options))
    value = options[key]
    if rng.random() < 0.15:
        del options[key]
        new = "removed"
    elif isinstance(value, bool):
        new = options[key] = not value
    elif isinstance(value, int):
        new = options[key] = rng.choice((-1, 0, 1, 2, 3, 7, 100, 2**31 - 1, -(2**31), value + 1, value - 1, 2 * value))
    elif isinstance(value, float):
        new = options[key] = rng.choice((0.0, -1.0, float("nan"), float("inf"), 1e-8, 1e30, value * 2))
    else:
        return None
    op.customOptions = list(bytes(flexbuffers.Dumps(options)))
    return f"operator {o} custom option {key} {value} -> {new}"


_EDITS = {
    "shape": _shape,
    "type": _type,
    "index": _index,
    "quant": _quant,
    "opcode": _opcode,
    "io": _io,
    "option": _option,
    "custom": _custom,
}


def outputs_agree(ours: np.ndarray, theirs: np.ndarray, defined: np.ndarray | None = None) -> bool:
    """Integers bit-exact; floats bit-exact up to 1e-5 relative (NaN where TFLM has NaN); only the
    elements ``defined`` marks (flat; all when None: see tflm_defined)."""
    theirs = np.asarray(theirs)
    if ours.size != theirs.size:
        return False
    ours, theirs = ours.reshape(-1), theirs.reshape(-1)
    if defined is not None and defined.size == ours.size:
        ours, theirs = ours[defined], theirs[defined]
    if ours.dtype.kind == "f":
        return bool(np.allclose(ours, theirs, rtol=1e-5, atol=1e-6, equal_nan=True))
    return bool(np.array_equal(ours, theirs))


def tflm_defined(model: bytes, tflm_outputs: list[np.ndarray]) -> list[np.ndarray | None]:
    """For each model output, the (flat) elements TFLM defines, or None for all of them. TFLM
    leaves some outputs unwritten, so they hold whatever its arena held: a SignalFramer's or
    SignalStacker's data when its valid flag is false (or not a model output), SignalEnergy's bins
    outside [start_index, end_index), and the fast path of TFLite_Detection_PostProcess past its
    detection count (or all of them when the count is not a model output)."""
    from flatbuffers import flexbuffers

    m = fb.ModelT.InitFromPackedBuf(model, 0)
    main = m.subgraphs[0]
    outputs = [int(t) for t in (main.outputs if main.outputs is not None else [])]
    masks: list[np.ndarray | None] = [None] * len(outputs)

    def restrict(tensor: int, keep) -> None:
        for k, t in enumerate(outputs):
            if t == tensor and k < len(tflm_outputs):
                size = np.asarray(tflm_outputs[k]).size
                mask = np.zeros(size, bool)
                mask[keep(size)] = True
                masks[k] = mask if masks[k] is None else masks[k] & mask

    def value(tensor: int):
        if tensor in outputs and outputs.index(tensor) < len(tflm_outputs):
            return np.asarray(tflm_outputs[outputs.index(tensor)]).reshape(-1)
        return None

    for op in main.operators or []:
        code = m.operatorCodes[op.opcodeIndex] if 0 <= op.opcodeIndex < len(m.operatorCodes) else None
        name = code.customCode.decode(errors="replace") if code is not None and code.customCode else ""
        outs = [int(t) for t in (op.outputs if op.outputs is not None else [])]
        try:
            options = flexbuffers.Loads(bytes(bytearray(op.customOptions))) if op.customOptions is not None else {}
        except Exception:  # noqa: BLE001 - unreadable options: TFLM refuses the operator
            options = {}
        options = options if isinstance(options, dict) else {}
        if name in ("SignalFramer", "SignalStacker") and len(outs) == 2:
            valid = value(outs[1])
            if valid is None or valid.size != 1 or not valid[0]:
                restrict(outs[0], lambda n: slice(0, 0))
        elif name == "SignalEnergy" and outs:
            start, end = int(options.get("start_index", 0)), int(options.get("end_index", 0))
            restrict(outs[0], lambda n, a=start, b=end: slice(max(0, a), max(0, b)))
        elif name == "TFLite_Detection_PostProcess" and len(outs) == 4 and not options.get("use_regular_nms"):
            count = value(outs[3])
            n = int(count[0]) if count is not None and count.size and np.isfinite(count[0]) else 0
            for t, per in zip(outs[:3], (4, 1, 1)):
                restrict(t, lambda size, w=per, n=n: slice(0, max(0, w * n)))
    return masks
