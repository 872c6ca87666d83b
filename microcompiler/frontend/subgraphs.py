"""Models with several subgraphs: check the control-flow calls and resolve resource variables.

Called by the importer once every subgraph is a Graph (``Graph.subgraphs`` of the main graph):

- every IF / WHILE / CALL_ONCE names existing subgraphs (never the main graph, never itself through
  a chain of calls: TFLM cannot run recursion either) whose inputs and outputs match the operator's
  in number, type and size, as TFLM's Prepare checks them;
- resource variables (``VAR_HANDLE`` -> ``READ_VARIABLE`` / ``ASSIGN_VARIABLE``) become persistent
  tensors keyed by container and shared name, as TFLM's MicroResourceVariables keys them: the same
  key in two subgraphs is the same memory. ``VAR_HANDLE`` disappears; ``READ_VARIABLE`` reads the
  state tensor and ``ASSIGN_VARIABLE`` writes it (its output). A variable starts, and is reset to,
  what TFLM fills it with: every byte the int8 zero point of the first assigned value (0 without
  quantization);
- ``CALL_ONCE`` gets a persistent one-byte flag as its output: it runs its subgraph while the flag
  is 0 and sets it; ``<model>_reset()`` clears it with the rest of the state (docs/state.md).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from microcompiler.errors import ModelFormatError, UnsupportedModelError
from microcompiler.ir import Graph, Operator, Tensor, called_subgraphs, np_dtype

_RESERVED = {"run", "arena", "scratch", "graph", "registry", "fingerprint", "reset", "state", "init"}


def subgraph_name(raw: bytes | None, k: int, taken: set[str]) -> str:
    """A unique C identifier for subgraph ``k`` from its name in the file (``subgraph<k>`` when it
    has none)."""
    import re

    text = (raw or b"").decode("utf-8", "replace")
    name = re.sub(r"[^0-9a-zA-Z]+", "_", text).strip("_").lower()[:32] or f"subgraph{k}"
    if name[0].isdigit() or name in _RESERVED:
        name = "sg_" + name
    base, n = name, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def link_subgraphs(main: Graph) -> Graph:
    graphs = {0: main, **main.subgraphs}
    for k, g in graphs.items():
        for op in g.operators:
            _check_call(op, g, graphs, k)
    _check_no_recursion(graphs)
    _resolve_variables(graphs)
    for k, g in graphs.items():
        for op in g.operators:
            if op.kind == "CALL_ONCE":
                where = "" if k == 0 else f"{g.name}_"
                flag = Tensor(
                    f"{where}call_once_{op.index}_done",
                    (1,),
                    "uint8",
                    persistent=True,
                    initial=np.zeros(1, np.uint8),
                    variable=f"#{where}call_once_{op.index}",
                )
                g.tensors.append(flag)
                op.outputs = [len(g.tensors) - 1]
    return main


def _io(g: Graph, tensors: list[int]) -> list[tuple[str, int]]:
    return [(g.tensors[t].dtype, g.tensors[t].nbytes) for t in tensors]


_CALLS = {"IF": 2, "WHILE": 2, "CALL_ONCE": 1}  # how many subgraphs each control-flow operator names


def _check_call(op: Operator, g: Graph, graphs: dict[int, Graph], k: int) -> None:
    called = called_subgraphs(op)
    if op.kind in _CALLS and len(called) != _CALLS[op.kind]:
        raise ModelFormatError(
            f"operator {op.index} ({op.kind}) of '{g.name}' has no options naming the "
            f"{_CALLS[op.kind]} subgraph(s) it calls; the file is corrupted"
        )
    if not called:
        return
    where = f"operator {op.index} ({op.kind})"
    if any(t < 0 for t in [*op.inputs, *op.outputs]):
        raise ModelFormatError(
            f"{where} of '{g.name}' has an omitted (-1) input or output, but {op.kind} hands every one to its "
            "subgraphs (TFLM reads each); the file is corrupted"
        )
    for s in called:
        if s == 0 or s not in graphs:
            raise ModelFormatError(
                f"{where} calls subgraph {s}, but the model's subgraphs are 1 to "
                f"{len(graphs) - 1} (0 is the main graph); the file is corrupted"
            )
    subs = [graphs[s] for s in called]
    args, results = _io(g, [i for i in op.inputs if i >= 0]), _io(g, op.outputs)

    def same(a, b, what):
        if a != b:
            raise UnsupportedModelError(
                f"{where}: {what} do not match in number, type or size ({a} vs {b}); re-export the model"
            )

    if op.kind == "IF":
        if not args or args[0] != ("bool", 1):  # TFLM's if.cc checks the same
            raise UnsupportedModelError(f"{where}: the condition (input 0) must be a bool tensor of one element")
        for sub in subs:
            same(args[1:], _io(sub, sub.inputs), f"its inputs and subgraph '{sub.name}''s inputs")
            same(results, _io(sub, sub.outputs), f"its outputs and subgraph '{sub.name}''s outputs")
    elif op.kind == "WHILE":
        cond, body = subs
        same(args, results, "its inputs and outputs")
        same(args, _io(cond, cond.inputs), f"its inputs and subgraph '{cond.name}''s inputs")
        same(args, _io(body, body.inputs), f"its inputs and subgraph '{body.name}''s inputs")
        same(args, _io(body, body.outputs), f"its inputs and subgraph '{body.name}''s outputs")
        if _io(cond, cond.outputs) != [("bool", 1)]:  # exactly one (TFLM: the condition has one output)
            raise UnsupportedModelError(f"{where}: condition subgraph '{cond.name}' must output one bool")
    elif op.kind == "CALL_ONCE":
        if args or results or subs[0].inputs or subs[0].outputs:
            raise ModelFormatError(
                f"{where} or its subgraph '{subs[0].name}' has inputs or outputs; "
                "CALL_ONCE takes none; the file is corrupted"
            )


def _check_no_recursion(graphs: dict[int, Graph]) -> None:
    def visit(k: int, path: tuple[int, ...]) -> None:
        for op in graphs[k].operators:
            for s in called_subgraphs(op):
                if s in path:
                    raise UnsupportedModelError(
                        f"subgraph {s} ('{graphs[s].name}') calls itself (through {op.kind} operator "
                        f"{op.index}); recursion cannot run on a microcontroller (nor in TFLite Micro)"
                    )
                visit(s, path + (s,))

    visit(0, (0,))


def _variable_key(op: Operator) -> str:
    return f"{op.options.get('container') or ''}/{op.options.get('shared_name') or ''}"


def _resolve_variables(graphs: dict[int, Graph]) -> None:
    handles: dict[int, dict[int, str]] = {}  # graph -> resource tensor -> key
    specs: dict[str, Tensor] = {}  # key -> the tensor that fixes shape, type and fill value
    assigned: set[str] = set()  # keys whose spec comes from an ASSIGN_VARIABLE (TFLM allocates there)
    for k in sorted(graphs):  # TFLM prepares subgraphs in index order: the first ASSIGN decides
        g = graphs[k]
        handles[k] = {o: _variable_key(op) for op in g.operators if op.kind == "VAR_HANDLE" for o in op.outputs}
        for op in g.operators:
            if op.kind in ("READ_VARIABLE", "ASSIGN_VARIABLE"):
                key = handles[k].get(op.inputs[0])
                handle_type = g.tensors[op.inputs[0]].dtype if op.inputs and op.inputs[0] >= 0 else None
                if key is not None and (handle_type not in ("resource", "int32") or g.tensors[op.inputs[0]].size != 1):
                    raise ModelFormatError(
                        f"operator {op.index} ({op.kind}) of '{g.name}': its resource handle tensor is "
                        f"{handle_type} {list(g.tensors[op.inputs[0]].shape)}, not one resource (TFLM refuses it too); the model is damaged: re-export it"
                    )
                if key is None:
                    raise UnsupportedModelError(
                        f"operator {op.index} ({op.kind}) of '{g.name}' reads a resource that no VAR_HANDLE of "
                        "the same subgraph makes; resources passed between subgraphs are not supported yet"
                    )
                value = g.tensors[op.inputs[1] if op.kind == "ASSIGN_VARIABLE" else op.outputs[0]]
                known = specs.get(key)
                if known is not None and (known.dtype, known.nbytes) != (value.dtype, value.nbytes):
                    raise UnsupportedModelError(
                        f"operator {op.index} ({op.kind}): resource variable '{key}' is used as "
                        f"{known.dtype} {list(known.shape)} and as {value.dtype} {list(value.shape)}"
                    )
                if known is None or (op.kind == "ASSIGN_VARIABLE" and key not in assigned):
                    specs[key] = Tensor(value.name, value.shape, value.dtype, value.quant)
                    if op.kind == "ASSIGN_VARIABLE":
                        assigned.add(key)
    for k, g in graphs.items():
        state_tensor = _state_tensors(g, specs)
        kept = []
        for op in g.operators:
            if op.kind == "VAR_HANDLE":
                continue
            if op.kind == "READ_VARIABLE":
                op.inputs = [state_tensor(handles[k][op.inputs[0]])]
            elif op.kind == "ASSIGN_VARIABLE":
                op.inputs, op.outputs = [op.inputs[1]], [state_tensor(handles[k][op.inputs[0]])]
            elif any(i in handles[k] for i in op.inputs):
                raise UnsupportedModelError(
                    f"operator {op.index} ({op.kind}) of '{g.name}' takes a resource handle; only READ_VARIABLE "
                    "and ASSIGN_VARIABLE may use one (resources passed between subgraphs are not supported yet)"
                )
            kept.append(op)
        g.operators = kept
        for t in g.inputs + g.outputs:
            if g.tensors[t].dtype == "resource":
                raise UnsupportedModelError(
                    f"'{g.name}' has a resource handle as input or output; resources passed between "
                    "subgraphs are not supported yet"
                )


def _state_tensors(g: Graph, specs: dict[str, Tensor]) -> Callable[[str], int]:
    """``state_tensor(key)``: the index of the graph's persistent tensor of resource variable ``key``,
    added to the graph on first use."""
    state: dict[str, int] = {}

    def state_tensor(key: str) -> int:
        if key not in state:
            spec = specs[key]
            g.tensors.append(
                Tensor(
                    key.strip("/") or "variable",
                    spec.shape,
                    spec.dtype,
                    spec.quant,
                    persistent=True,
                    initial=_fill(spec),
                    variable=key,
                )
            )
            state[key] = len(g.tensors) - 1
        return state[key]

    return state_tensor


def _fill(spec: Tensor) -> np.ndarray:
    """TFLM's start (and reset) value of a resource variable: every byte the zero point cast to int8
    (memset), 0 without quantization."""
    byte = np.int8(spec.quant.zero_point[0]).view(np.uint8) if spec.quant is not None else np.uint8(0)
    return np.full(spec.nbytes, byte, np.uint8).view(np_dtype(spec.dtype)).reshape(spec.shape)
