"""Operator signatures: what a tuning result is keyed by, so that it is reused across models.

Two operators with the same signature run the same kernel on tensors of the same shapes and types,
so the fastest knob setting of one is the fastest of the other on the same CPU. The signature is
the operator kind, its options (strides, padding, dilation, depth multiplier, fused activation),
and each input's and output's shape, type, constness and quantization granularity (per-tensor or
per-channel). Weight values are not part of it: a reused setting is a hint the kernel still checks
(a knob that does not apply to the weights falls back to what does, and bit-exactness never depends
on it).
"""

from __future__ import annotations

import json

from microcompiler.ir import Graph, Operator


def _tensor(graph: Graph, index: int) -> list | None:
    if index < 0:
        return None
    t = graph.tensors[index]
    quant = None if t.quant is None else ("per-channel" if len(t.quant.scale) > 1 else "per-tensor")
    return [list(t.shape), t.dtype, "const" if t.data is not None else "act", quant]


def _plain(value):
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):  # a numpy scalar
        return value.item()
    return value


def operator_signature(op: Operator, graph: Graph) -> dict:
    """The operator's signature as a JSON-able dict."""
    return {
        "kind": op.kind,
        "options": {k: _plain(v) for k, v in sorted(op.options.items())},
        "inputs": [_tensor(graph, i) for i in op.inputs],
        "outputs": [_tensor(graph, o) for o in op.outputs],
    }


def signature_key(signature: dict) -> str:
    """One line that names the signature: its canonical JSON (the tuning log's key)."""
    return json.dumps(signature, sort_keys=True, separators=(",", ":"))


def cpu_key(cpu) -> str:
    """The CPU a timing holds for: the core and the features the kernels use, e.g. 'cortex-m4+dsp'."""
    return "+".join([cpu.core, *sorted(cpu.features)])
