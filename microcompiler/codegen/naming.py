"""Readable C names for the generated code: one per layer, made from the TFLite tensor names.

A converter names an operator's output after every layer fused into it, e.g.
``functional_1/activation_3/Relu;functional_1/conv2d_3/BiasAdd``; the C function is named after the
layer that owns the weights (``conv2d_3``), the full name stays in the comment and metadata.json.
Names are C identifiers, at most ``MAX_LAYER_NAME`` characters, unique within the model.
"""

from __future__ import annotations

import re

from microcompiler.ir import Graph, Operator, called_subgraphs

MAX_LAYER_NAME = 32
# Layer scopes that name a fused activation or normalisation rather than the layer itself.
_SECONDARY = re.compile(r"^(activation|batch_normalization|re_lu|relu|bn|dropout|tf\.|fused)", re.I)
_MODEL_SCOPE = re.compile(r"^(model|sequential|functional)(_\d+)?$")
# Names used by the model library itself (<model>_run, <model>_arena, ...).
_RESERVED = {
    "run",
    "arena",
    "shared_arena",
    "scratch",
    "graph",
    "graph_bytes",
    "registry",
    "fingerprint",
    "reset",
    "state",
}


def c_identifier(text: str) -> str:
    """``text`` as a lower-case C identifier (possibly empty)."""
    name = re.sub(r"[^0-9a-zA-Z]+", "_", text).strip("_").lower()
    return "l_" + name if name[:1].isdigit() else name


def _candidate(full_name: str) -> str:
    """The layer's own name inside a converter's (possibly fused) tensor name."""
    scopes = []
    for part in full_name.split(";"):
        pieces = [p for p in part.split("/") if p]
        if len(pieces) >= 3 or (len(pieces) == 2 and _MODEL_SCOPE.match(pieces[0])):
            scopes.append(pieces[1])  # <model>/<layer>/<tf op>/...
        elif pieces:
            scopes.append(pieces[0])
    primary = [s for s in scopes if not _SECONDARY.match(s)]
    chosen = (primary or scopes or [""])[0]
    return c_identifier(chosen.split(":")[0])


def layer_names(graph: Graph) -> dict[int, str]:
    """operator index -> a short, unique C name for the layer it implements."""
    names: dict[int, str] = {}
    used = set(_RESERVED) | {s.name for s in graph.subgraphs.values()}  # <model>_<subgraph> is a function too
    for op in graph.operators:
        base = _candidate(graph.tensors[op.outputs[0]].name) if op.outputs else ""
        if (op.outputs and graph.tensors[op.outputs[0]].persistent) or called_subgraphs(op):
            base = ""  # ASSIGN_VARIABLE (the state array takes the tensor's name), IF, WHILE, CALL_ONCE
        if not base or base in ("statefulpartitionedcall", "identity", "serving_default"):
            base = f"{op.kind.lower()}_{op.index}"
        suffix = op.notes.layer_suffix  # e.g. an operator a pass split off a layer
        if suffix:
            base = f"{base[: MAX_LAYER_NAME - len(suffix) - 1].rstrip('_')}_{suffix}"
        base = base[:MAX_LAYER_NAME].rstrip("_")
        name, n = base, 2
        while name in used:
            suffix = f"_{n}"
            name = base[: MAX_LAYER_NAME - len(suffix)] + suffix
            n += 1
        used.add(name)
        names[op.index] = name
    return names


def full_layer_name(graph: Graph, op: Operator) -> str:
    return graph.tensors[op.outputs[0]].name
