"""ONNX LSTM and GRU (forward, batch 1, the default activations) unrolled into IR operators.

The IR's recurrent operator (UNIDIRECTIONAL_SEQUENCE_LSTM) keeps its state across inferences, as
TFLite's does; ONNX's LSTM and GRU start every inference from ``initial_h``/``initial_c`` (zeros by
default). So the recurrence is unrolled over the sequence's T steps: the input projection of every step
is one FULLY_CONNECTED over the whole sequence, then each step is a FULLY_CONNECTED of the previous
hidden state, a SPLIT_V into the gates, LOGISTIC/TANH and the elementwise MUL/ADD/SUB of ONNX's
equations (gate orders: LSTM i, o, f, c; GRU z, r, h). The hidden states are concatenated into Y.

In ONNX Runtime's order and with its activation approximations (docs/onnx.md, "LSTM, GRU"): bit for bit
with it up to a hidden size of 256.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from microcompiler.errors import UnsupportedModelError
from microcompiler.frontend.onnx_values import MLAS_STRIDE_K, _const_input, _Value
from microcompiler.ops.requant_float import ORT_GRU, ORT_MLAS

F = np.float32
MAX_STEPS = 512  # unrolled steps: each is about a dozen operators
_ADD = {"activation": "NONE", "pot_scale_int16": True}
_MUL = {"activation": "NONE"}


class _Emitter:
    def __init__(self, imp: Any, node: Any):
        self.imp, self.name, self.count = imp, node.output[0] or node.name or "rnn", 0

    def op(self, kind: str, inputs: list[int], shape: tuple[int, ...], options: dict | None = None) -> int:
        self.count += 1
        if kind in ("LOGISTIC", "TANH") and not options:  # MLAS's approximations, as ONNX Runtime's kernels
            options = {ORT_MLAS: 1}
        return self.imp.emit(kind, inputs, shape, options or {}, f"{self.name}_{kind.lower()}{self.count}")

    def fc(self, x: int, weights: np.ndarray, bias: np.ndarray | None, rows: int) -> int:
        options = dict(activation="NONE", keep_num_dims=False, weights_format=0, fma_block=MLAS_STRIDE_K)
        b = self.imp.const(bias, "bias") if bias is not None else -1
        return self.op("FULLY_CONNECTED", [x, self.imp.const(weights, "weights"), b], (rows, weights.shape[0]), options)

    def split(self, x: int, parts: int, size: int, axis: int, rows: int = 1) -> list[int]:
        outputs = []
        for _ in range(parts):
            shape = (size, rows) if axis == 0 else (rows, size)
            outputs.append(self.imp.add_tensor(f"{self.name}_part{len(self.imp.tensors)}", shape, "float32"))
        sizes = self.imp.const(np.full(parts, size, dtype=np.int32), "sizes", "int32")
        axis_t = self.imp.const(np.array([axis], dtype=np.int32), "axis", "int32")
        from microcompiler.ir import Operator

        self.imp.operators.append(
            Operator("SPLIT_V", [x, sizes, axis_t], outputs, {"num_splits": parts}, len(self.imp.operators))
        )
        return outputs


def _check(imp, node, ins, attrs, gates: int):
    x = ins[0]
    imp.float_input(x, node)
    w = _const_input(imp, node, ins[1], "W").astype(F)
    r = _const_input(imp, node, ins[2], "R").astype(F)
    if w.ndim != 3 or w.shape[0] != 1 or attrs.get("direction", "forward") != "forward":
        raise UnsupportedModelError(
            f"{imp.where(node)}: {node.op_type} direction {attrs.get('direction', 'forward')!r}; microcompiler "
            "imports forward recurrences (export a reverse or bidirectional one as two forward ones)"
        )
    hidden = int(attrs.get("hidden_size", r.shape[-1]))
    layout = int(attrs.get("layout", 0))
    if layout != 0:
        raise UnsupportedModelError(
            f"{imp.where(node)}: layout 1 (batch first) is not supported; ONNX Runtime refuses it too"
        )
    if len(x.shape) != 3 or (x.shape[1] if layout == 0 else x.shape[0]) != 1:
        raise UnsupportedModelError(f"{imp.where(node)}: input {list(x.shape)}; microcompiler imports batch size 1")
    steps, width = (x.shape[0] if layout == 0 else x.shape[1]), x.shape[2]
    if w.shape[1:] != (gates * hidden, width) or r.shape != (1, gates * hidden, hidden):
        raise UnsupportedModelError(f"{imp.where(node)}: W {list(w.shape)} / R {list(r.shape)} do not fit")
    if "activations" in attrs or "clip" in attrs or int(attrs.get("input_forget", 0)):
        raise UnsupportedModelError(
            f"{imp.where(node)}: {node.op_type} with activations, clip or input_forget is not supported yet"
        )
    if steps > MAX_STEPS:
        raise UnsupportedModelError(f"{imp.where(node)}: {steps} steps; microcompiler unrolls up to {MAX_STEPS}")
    bias = np.zeros(2 * gates * hidden, dtype=F)
    if len(ins) > 3 and ins[3] is not None:
        bias = _const_input(imp, node, ins[3], "B").astype(F).reshape(-1)
        if bias.size != 2 * gates * hidden:
            raise UnsupportedModelError(f"{imp.where(node)}: B has {bias.size} values, not {2 * gates * hidden}")
    if len(ins) > 4 and ins[4] is not None:
        lens = np.asarray(_const_input(imp, node, ins[4], "sequence_lens")).reshape(-1)
        if not np.all(lens == steps):
            raise UnsupportedModelError(f"{imp.where(node)}: sequence_lens {lens.tolist()} differ from {steps} steps")
    state = []
    for k in (5, 6):
        v = ins[k] if len(ins) > k else None
        state.append(None if v is None else _const_input(imp, node, v, "initial state").astype(F).reshape(1, hidden))
    return x, w[0], r[0], bias, hidden, steps, width, layout, state


def _outputs(imp, node, e: _Emitter, hiddens: list[int], last_c: int | None, steps: int, hidden: int, layout: int):
    y_shape = (steps, 1, 1, hidden) if layout == 0 else (1, steps, 1, hidden)
    joined = (
        e.op("CONCATENATION", hiddens, (steps, hidden), dict(axis=0, activation="NONE")) if steps > 1 else hiddens[0]
    )
    y = e.op("RESHAPE", [joined, imp.shape_const(y_shape)], y_shape)
    results = [_Value(y_shape, tensor=y)]
    for state in (hiddens[-1], last_c):
        if state is not None:
            results.append(
                _Value((1, 1, hidden), tensor=e.op("RESHAPE", [state, imp.shape_const((1, 1, hidden))], (1, 1, hidden)))
            )
    return results


def _sequence(imp, e: _Emitter, x, w, bias, steps: int, width: int) -> list[int]:
    rows = e.op("RESHAPE", [imp.plain(x), imp.shape_const((steps, width))], (steps, width))
    projected = e.fc(rows, w, bias, steps)
    return e.split(projected, steps, 1, 0, w.shape[0]) if steps > 1 else [projected]


def lstm(imp: Any, node: Any, ins: list, attrs: dict):
    x, w, r, bias, hidden, steps, width, layout, (h0, c0) = _check(imp, node, ins, attrs, 4)
    has_bias = len(ins) > 3 and ins[3] is not None
    if len(ins) > 7 and ins[7] is not None:
        raise UnsupportedModelError(f"{imp.where(node)}: LSTM peepholes (P) are not supported yet")
    e = _Emitter(imp, node)
    four = 4 * hidden
    steps_in = _sequence(imp, e, x, w, None, steps, width)
    fused = imp.const((bias[:four] + bias[four:]).reshape(1, four), "bias") if has_bias else None
    h = imp.const(h0, "initial_h") if h0 is not None else None
    c = imp.const(c0, "initial_c") if c0 is not None else None
    hiddens = []
    for t in range(steps):
        gates = steps_in[t]
        if h is not None:  # ONNX Runtime: x W, then + h R (MLAS's beta 1), then + (Wb + Rb)
            gates = e.op("ADD", [gates, e.fc(h, r, None, 1)], (1, four), _ADD)
        if fused is not None:
            gates = e.op("ADD", [gates, fused], (1, four), _ADD)
        i, o, f, cand = e.split(gates, 4, hidden, 1)
        i, o, f = (e.op("LOGISTIC", [g], (1, hidden)) for g in (i, o, f))
        cand = e.op("TANH", [cand], (1, hidden))
        new = e.op("MUL", [i, cand], (1, hidden), _MUL)
        if c is not None:
            new = e.op("ADD", [e.op("MUL", [f, c], (1, hidden), _MUL), new], (1, hidden), _ADD)
        c = new
        h = e.op("MUL", [o, e.op("TANH", [c], (1, hidden))], (1, hidden), _MUL)
        hiddens.append(h)
    return _outputs(imp, node, e, hiddens, c, steps, hidden, layout)[: len(node.output)]


def gru(imp: Any, node: Any, ins: list, attrs: dict):
    """ONNX Runtime's order (deep_cpu_gru.cc): x W; + h R[zr]; + (Wb + Rb)[zr]; z by MLAS's logistic, r by
    its GRU's own rational logistic (``ort_gru``); r times h (or times h Rh + Rbh with linear_before_reset),
    then + x Wh (after h Rh without it); + Wbh (+ Rbh without linear_before_reset); its GRU's rational tanh;
    (1 - z) h~ + z h."""
    x, w, r, bias, hidden, steps, width, layout, (h0, _) = _check(imp, node, ins, attrs, 3)
    has_bias = len(ins) > 3 and ins[3] is not None
    e = _Emitter(imp, node)
    wb, rb = bias[: 3 * hidden], bias[3 * hidden :]
    before = int(attrs.get("linear_before_reset", 0))

    def vector(values: np.ndarray) -> int | None:
        return imp.const(values.astype(F).reshape(1, hidden), "bias") if has_bias else None

    bz, br = vector(wb[:hidden] + rb[:hidden]), vector(wb[hidden : 2 * hidden] + rb[hidden : 2 * hidden])
    bh = vector(wb[2 * hidden :] if before else wb[2 * hidden :] + rb[2 * hidden :])
    rbh = vector(rb[2 * hidden :]) if before else None
    steps_in = _sequence(imp, e, x, w, None, steps, width)
    ones = imp.const(np.ones((1, hidden), dtype=F), "ones")
    h = imp.const(h0, "initial_h") if h0 is not None else None
    hiddens = []

    def add(a: int, b: int | None) -> int:
        return a if b is None else e.op("ADD", [a, b], (1, hidden), _ADD)

    for t in range(steps):
        xz, xr, xh = e.split(steps_in[t], 3, hidden, 1)
        rh = None
        if h is not None:  # a zero state: R's products are 0
            products = e.split(e.fc(h, r if before else r[: 2 * hidden], None, 1), 3 if before else 2, hidden, 1)
            rz, rr, rh = products[0], products[1], (products[2] if before else None)
            xz, xr = add(xz, rz), add(xr, rr)
        z = e.op("LOGISTIC", [add(xz, bz)], (1, hidden))
        reset = e.op("LOGISTIC", [add(xr, br)], (1, hidden), {ORT_GRU: 1})
        if before:
            linear = rbh if rh is None else add(rh, rbh)
            if linear is not None:
                xh = add(xh, e.op("MUL", [linear, reset], (1, hidden), _MUL))
        elif h is not None:
            xh = add(xh, e.fc(e.op("MUL", [h, reset], (1, hidden), _MUL), r[2 * hidden :], None, 1))
        cand = e.op("TANH", [add(xh, bh)], (1, hidden), {ORT_GRU: 1})
        new = e.op("MUL", [e.op("SUB", [ones, z], (1, hidden), _ADD), cand], (1, hidden), _MUL)
        if h is not None:
            new = add(new, e.op("MUL", [z, h], (1, hidden), _MUL))
        h = new
        hiddens.append(h)
    return _outputs(imp, node, e, hiddens, None, steps, hidden, layout)[: len(node.output)]


CONVERTERS = {"LSTM": lstm, "GRU": gru}
