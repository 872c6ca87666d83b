"""Fold a standalone RELU/RELU6 into the operator before it (as its fused activation).

Allowed when the producer supports fused activations, its output feeds only the activation and is
not a model output, and the activation does not change the quantization (so the clamp alone is the
whole operator).
"""

from __future__ import annotations

from dataclasses import replace

from microcompiler.ir import Graph

_FUSIBLE_PRODUCERS = {
    "CONV_2D",
    "DEPTHWISE_CONV_2D",
    "FULLY_CONNECTED",
    "ADD",
    "MUL",
    "AVERAGE_POOL_2D",
    "MAX_POOL_2D",
    "CONCATENATION",
}
_ACTIVATIONS = {"RELU": "RELU", "RELU6": "RELU6"}


def fuse_activations(graph: Graph) -> Graph:
    g = graph.copy()
    removed = set()
    producer_of, readers = g.producers_and_readers()  # one lookup per operator, not one scan
    for act in g.operators:
        if act.kind not in _ACTIVATIONS:
            continue
        src, dst = act.inputs[0], act.outputs[0]
        producer = producer_of.get(src)
        if producer is None or producer.kind not in _FUSIBLE_PRODUCERS or id(producer) in removed:
            continue
        if producer.options.get("activation", "NONE") != "NONE" or src in g.outputs:
            continue
        if readers.get(src, 0) != 1:
            continue
        a, b = g.tensors[src], g.tensors[dst]
        if a.dtype != b.dtype or a.shape != b.shape or a.quant != b.quant:
            continue
        producer.options["activation"] = _ACTIVATIONS[act.kind]
        producer.notes = replace(producer.notes, activation_fused=True)
        producer.outputs = [dst if o == src else o for o in producer.outputs]
        producer_of.pop(src, None)
        producer_of[dst] = producer
        removed.add(id(act))
    g.operators = [op for op in g.operators if id(op) not in removed]
    return g
