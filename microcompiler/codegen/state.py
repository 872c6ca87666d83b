"""The state section of a model library: persistent tensors as named static arrays, and
``<model>_reset()``.

A persistent tensor (``Tensor.persistent``: a TFLite variable tensor such as SVDF's activation
state) keeps its values from one inference to the next. It never lives in the arena; each one is a
``static`` array of its own in ``src/<model>_ops.c``, named after the layer that first uses it
(``<model>_<layer>_<role>``, e.g. ``kws_svdf_1_state``), so both executors (``<model>_run`` and
the graph executor, which call the same operator functions) update the same memory in place.
The arrays start from the tensor's initial values (zero-initialised ``.bss`` when those are all
zero) and ``<model>_reset()`` restores them: a ``memset`` when every byte is the same, else a copy
from a ``static const`` array of initial values in flash. See docs/state.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from microcompiler.codegen.c_arrays import c_initializer, comment_text
from microcompiler.codegen.naming import c_identifier
from microcompiler.ir import Graph, Tensor, c_type
from microcompiler.ops.base import KERNELS


@dataclass
class StateArray:
    tensor: int
    name: str  # the C array
    ctype: str
    count: int  # elements
    nbytes: int
    offset: int  # in the state section (metadata.json, the graph description)
    initial: np.ndarray
    comment: str
    source: Tensor | None = None  # the tensor (of whichever subgraph first holds it)

    @property
    def fill_byte(self) -> int | None:
        """The byte every byte of the initial value is, or None when they differ (then the reset
        copies from ``<name>_initial``)."""
        raw = np.ascontiguousarray(self.initial).view(np.uint8)
        return int(raw[0]) if raw.size and np.all(raw == raw[0]) else None


def _role(graph: Graph, tensor: int) -> tuple[int, str]:
    """(operator index, role name) of the first operator that uses a persistent tensor."""
    for op in graph.operators:
        for role, t in op.state.items():
            if t == tensor:
                return op.index, role
        if tensor in op.inputs:
            roles = KERNELS[op.kind].input_roles if op.kind in KERNELS else ()
            pos = op.inputs.index(tensor)
            return op.index, roles[pos] if pos < len(roles) else "state"
        if tensor in op.outputs:
            return op.index, "state"
    return -1, "state"


def state_arrays(
    graph: Graph, layers: dict[int, str], sub_layers: dict[int, dict[int, str]] | None = None
) -> tuple[list[StateArray], dict[int, dict[int, str]]]:
    """The model's state arrays in state-section order, and per graph (``id(graph)``) each persistent
    tensor's array. Subgraphs' state follows the main graph's; a resource variable
    (``Tensor.variable``) or a CALL_ONCE flag is named after itself (``<model>_<variable>``) and a
    variable used by several subgraphs is one array."""
    arrays: list[StateArray] = []
    taken: set[str] = set()
    by_key: dict[str, str] = {}
    names: dict[int, dict[int, str]] = {}
    for n, g in enumerate(graph.all_graphs()):
        glayers = layers if n == 0 else (sub_layers or {}).get(id(g), {})
        where = graph.name if n == 0 else f"{graph.name}_{g.name}"
        names[id(g)] = gnames = {}
        for i in g.state_tensors:
            t = g.tensors[i]
            if t.variable is not None and t.variable in by_key:
                gnames[i] = by_key[t.variable]
                continue
            op_index, role = _role(g, i)
            if t.variable is not None:  # a resource variable or a CALL_ONCE flag
                base = f"{graph.name}_{c_identifier(t.name) or 'variable'}"
            elif op_index >= 0:
                base = f"{where}_{glayers.get(op_index, f't{i}')}_{role}"
            else:
                base = f"{where}_t{i}_state"
            name, k = base, 2
            while name in taken:
                name, k = f"{base}_{k}", k + 1
            taken.add(name)
            gnames[i] = name
            if t.variable is not None:
                by_key[t.variable] = name
            offset = g.state_offsets.get(i, 0)
            scope = "" if n == 0 else f" of subgraph '{g.name}'"
            comment = comment_text(
                f"tensor {i}{scope}: '{t.name}' {t.dtype} {list(t.shape)}, {t.nbytes} B at offset "
                f"{offset} of the state section"
            )
            arrays.append(
                StateArray(
                    i, name, c_type(t.dtype), t.size, t.nbytes, offset, np.asarray(t.initial).reshape(-1), comment, t
                )
            )
    arrays.sort(key=lambda a: a.offset)
    return arrays, names


def state_definitions(arrays: list[StateArray]) -> str:
    """The C definitions of the state arrays (and of the initial values a reset copies)."""
    parts = []
    for a in arrays:
        fill = a.fill_byte
        init = "" if fill == 0 else f" = {c_initializer(a.initial)}"
        parts.append(f"/* {a.comment} */\nstatic {a.ctype} {a.name}[{a.count}]{init};\n")
        if fill is None:
            parts.append(f"static const {a.ctype} {a.name}_initial[{a.count}] = {c_initializer(a.initial)};\n")
    return "".join(parts)


def reset_body(arrays: list[StateArray]) -> str:
    """The statements of ``<model>_reset()``."""
    if not arrays:
        return "  /* this model keeps no state across inferences */\n"
    lines = []
    for a in arrays:
        fill = a.fill_byte
        if fill is None:
            lines.append(f"  memcpy({a.name}, {a.name}_initial, sizeof({a.name}));\n")
        else:
            lines.append(f"  memset({a.name}, {fill}, sizeof({a.name}));\n")
    return "".join(lines)


def state_metadata(arrays: list[StateArray]) -> list[dict]:
    return [
        {
            "tensor": a.source.name,
            "c_name": a.name,
            "dtype": a.source.dtype,
            "shape": list(a.source.shape),
            "bytes": a.nbytes,
            "offset": a.offset,
        }
        for a in arrays
    ]
