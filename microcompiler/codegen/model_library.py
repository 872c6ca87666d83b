"""Write a compiled graph out as a self-contained C model library.

Layout (``DIR`` is the output directory)::

    DIR/include/<name>.h                  the API: <name>_run(), arena size, I/O shapes
    DIR/include/microcompiler/*.h         the fixed-point helpers the kernels use
    DIR/src/<name>_ops.c                  weights (static const, in flash) + one function per operator
    DIR/src/<name>_aot.c                  the static arena and the AOT executor <name>_run()
    DIR/src/<name>_graph.c                graph description + operator registry (graph executor)
    DIR/include/<name>_graph.h            their declarations and the graph executor's pool size
    DIR/metadata.json                     what the model needs and does (see docs/architecture.md)

Persistent tensors (state kept across inferences) are static arrays in <name>_ops.c, restored by
<name>_reset() (codegen/state.py, docs/state.md).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from microcompiler import resources
from microcompiler.codegen.c_arrays import c_array, comment_text
from microcompiler.codegen.graph_description import graph_executor_refusal, graph_sources
from microcompiler.codegen.memory_peak import memory_peak
from microcompiler.codegen.model_info import ModelInfo, OperatorInfo, SharedBodyInfo, SubgraphInfo, TensorInfo
from microcompiler.codegen.naming import full_layer_name, layer_names
from microcompiler.codegen.runtime_headers import HEADER_DIR, library_headers, used_headers
from microcompiler.codegen.shared_bodies import share_bodies
from microcompiler.codegen.state import reset_body, state_arrays, state_definitions, state_metadata
from microcompiler.codegen.subgraphs import subgraph_sources
from microcompiler.errors import UnsupportedModelError
from microcompiler.ir import Graph, Operator, c_type
from microcompiler.ops.base import EmitContext, ParamSink, kernel_for, operator_context
from microcompiler.ops.plan import KernelPlan
from microcompiler.templating import render


@dataclass
class OpFunction:
    op: Operator
    name: str
    params: list[tuple[str, str, int]]  # (C type incl. const and *, parameter name, tensor index)
    body: str
    comment: str
    macs: int
    plan: KernelPlan
    weights_bytes: int = 0  # the flash arrays this operator added (a shared one counts for its first user)
    arrays: list[tuple[str, str]] = field(default_factory=list)  # (name, C type) of those arrays


def _subgraph_operator(sub: Graph, fn: OpFunction) -> OperatorInfo:
    """A subgraph operator's metadata: what the main graph's operators record that analyze's cost model
    reads (shapes, MACs, kernel variant), and its input type."""
    first = fn.op.inputs[0] if fn.op.inputs else -1
    return OperatorInfo(
        index=fn.op.index,
        kind=fn.op.kind,
        function=fn.name,
        macs=fn.macs,
        inputs=tuple(sub.tensors[i].shape for i in fn.op.inputs if i >= 0),
        outputs=tuple(sub.tensors[o].shape for o in fn.op.outputs),
        kernel=fn.plan.as_json(),
        dtype=sub.tensors[first].dtype if first >= 0 else "-",
    )


@dataclass
class ModelLibrary:
    graph: Graph
    functions: list[OpFunction]
    params: ParamSink
    files: dict[str, str] = field(default_factory=dict)  # relative path -> text
    metadata: dict = field(default_factory=dict)

    @property
    def info(self) -> ModelInfo:
        """The metadata, typed (codegen/model_info.py)."""
        return ModelInfo.from_json(self.metadata, "the model's metadata")

    def write(self, out_dir: Path) -> None:
        for rel, text in self.files.items():
            path = out_dir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        (out_dir / "metadata.json").write_text(json.dumps(self.metadata, indent=2) + "\n")


def _layer_comment(graph: Graph, op: Operator) -> str:
    """One line: the operator, its options, its index in the model and the layer's full name."""
    opts = ", ".join(f"{k}={v}" for k, v in op.options.items())
    return comment_text(f"{op.kind}({opts}), operator {op.index}: '{full_layer_name(graph, op)}'")


def _emit_function(
    graph: Graph,
    op: Operator,
    prefix: str,
    params: ParamSink,
    features: frozenset[str],
    tuning: dict | None = None,
    layer: str | None = None,
) -> OpFunction:
    kernel = kernel_for(op)
    with operator_context(op):
        kernel.check(op, graph)
    name = f"{prefix}_{layer or f'{op.kind.lower()}_{op.index}'}"
    tuning = tuning or {}
    # "*" for every operator, then per kind, then per operator index (a patch: its layer's index, then its own)
    of = op.notes.patch.of if op.notes.patch else None
    knobs = {
        **tuning.get("*", {}),
        **tuning.get(op.kind, {}),
        **(tuning.get(of, {}) if of is not None else {}),
        **tuning.get(op.index, {}),
    }
    ctx = EmitContext(graph, op, name, params, features, knobs)
    first_array = len(params.arrays)
    with operator_context(op):
        body = kernel.emit(op, graph, ctx)
    own_arrays = params.arrays[first_array:]
    weights_bytes = sum(int(a.nbytes) for _, _, a, _ in own_arrays)
    fparams = []
    unused = []
    for tensor, pname in ctx.param_names.items():
        t = graph.tensors[tensor]
        const = "const " if pname.startswith("input") else ""
        fparams.append((f"{const}{c_type(t.dtype)}*", pname, tensor))
        if not re.search(rf"\b{pname}\b", body):
            unused.append(pname)
    if unused:  # inputs whose values the operator never reads (e.g. a RESHAPE's shape tensor)
        body = "".join(f"  (void){p}; /* only its shape matters */\n" for p in unused) + body
    plan = ctx.plan if ctx.plan is not None else kernel.kernel_plan(op, graph)
    return OpFunction(
        op,
        name,
        fparams,
        body,
        _layer_comment(graph, op),
        kernel.macs(op, graph),
        plan,
        weights_bytes,
        [(n, ctype) for n, ctype, _, _ in own_arrays if n not in params.model_arrays],
    )


def _tensor_info(graph: Graph, i: int, c_name: str) -> dict:
    t = graph.tensors[i]
    info = {
        "name": t.name,
        "c_name": c_name,
        "shape": list(t.shape),
        "dtype": t.dtype,
        "bytes": t.nbytes,
        "scale": None,
        "zero_point": None,
    }
    if t.quant is not None and not t.quant.per_channel:
        info["scale"], info["zero_point"] = t.quant.scale[0], t.quant.zero_point[0]
    return info


def arena_slices(graph: Graph, layers: dict[int, str]) -> dict[int, tuple[str, str]]:
    """storage tensor -> (C name of its arena offset, comment): ``conv1_out`` for the output of
    layer conv1 (``conv1_out1`` for an operator's second output)."""
    slices = {}
    last_reader: dict[int, int] = {}  # storage tensor -> the last step that reads it (one sweep, not one per tensor)
    for step, op in enumerate(graph.operators):
        for i in op.inputs:
            if i >= 0:
                last_reader[graph.storage(i)] = step
    for step, op in enumerate(graph.operators):
        for k, o in enumerate(op.outputs):
            root = graph.storage(o)
            if root in graph.offsets and root not in slices:
                t = graph.tensors[root]
                span = f"operators {step}..{last_reader[root]}" if root in last_reader else f"operator {step}"
                label = "subgraphs" if op.notes.subgraph_arena and o == op.outputs[-1] else f"out{k if k else ''}"
                slices[root] = (
                    f"{layers[op.index]}_{label}",
                    f"{t.dtype} {list(t.shape)}, {t.nbytes} B, live in {span}",
                )
    return slices


def _pointer(graph: Graph, tensor: int, arena: str, slices: dict[int, tuple[str, str]]) -> str:
    """The C expression for a tensor's memory inside <name>_run (``arena``: the arena's bytes)."""
    root = graph.storage(tensor)
    ctype = c_type(graph.tensors[tensor].dtype)
    if root in graph.inputs:
        return f"input{last_input(graph, root)}"
    if root in graph.outputs:
        return f"output{graph.outputs.index(root)}"
    return f"({ctype}*)&{arena}[{slices[root][0]}]"


def last_input(graph: Graph, tensor: int) -> int:
    """The model input argument a tensor listed as an input reads: the last listing of it, as in TFLM
    (setting input 0 and then input 1 of a model whose inputs are [x, x] leaves the second value in x)."""
    return len(graph.inputs) - 1 - graph.inputs[::-1].index(tensor)


def model_fingerprint(files: dict[str, str], inputs: list[dict], outputs: list[dict]) -> str:
    """16 hex digits: SHA-256 of the generated sources (weights, kernels, executor, graph description)
    and of the inputs' and outputs' names, shapes, types and quantization. Two models that differ in
    one weight, one option or one tensor get different fingerprints."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + files[path].encode() + b"\0")
    digest.update(json.dumps([inputs, outputs], sort_keys=True).encode())
    return digest.hexdigest()[:16]


def _output_copies(graph: Graph) -> list[tuple[str, str, int, str]]:
    """Outputs no operator writes into their own buffer: (destination, source, bytes, why).

    A model output that is also a model input is a copy of that input, and an output listed twice
    is a copy of its first listing; without the copy the caller would read whatever its buffer held.
    """
    copies = []
    for k, tensor in enumerate(graph.outputs):
        root = graph.storage(tensor)
        nbytes = graph.tensors[tensor].nbytes
        if root in graph.inputs:
            j = last_input(graph, root)
            copies.append((f"output{k}", f"input{j}", nbytes, f"output {k} is model input {j}"))
        elif root in graph.outputs and graph.outputs.index(root) != k:
            j = graph.outputs.index(root)
            copies.append((f"output{k}", f"output{j}", nbytes, f"output {k} is output {j} again"))
    return copies


def _check_outputs(graph: Graph) -> None:
    """Refuse constant outputs, of the model and of its subgraphs (an IF branch or WHILE body
    returning a constant, which TFLM copies to the caller: no C would write it here)."""
    for g, what in [(graph, "model")] + [(s, f"subgraph {k} ('{s.name}')") for k, s in graph.subgraphs.items()]:
        for k, tensor in enumerate(g.outputs):
            if g.tensors[g.storage(tensor)].data is not None:
                raise UnsupportedModelError(
                    f"{what} output {k} ('{g.tensors[tensor].name}') is a constant, not "
                    "computed by any operator; microcompiler does not support constant "
                    "outputs"
                )


def _patches_metadata(graph: Graph, layers: dict[int, str]) -> dict:
    p = graph.patches
    if not p:
        return {}
    stage = [op for op in graph.operators if op.notes.patch and op.notes.patch.index == 0]
    return {
        "grid": p["grid"],
        "count": p["count"],
        "stage_layers": [layers[op.index].removesuffix("_patch0") for op in stage],
        "peak_before": p["peak_before"],
        "peak_after": p["peak_after"],
        "extra_macs": p["extra_macs"],
        "extra_macs_percent": round(100 * p["extra_macs"] / max(1, p["total_macs"]), 2),
    }


def generate_library(
    graph: Graph, features: frozenset[str] = frozenset(), tuning: dict | None = None, shared_arena: str | None = None
) -> ModelLibrary:
    """Generate the C sources, headers and metadata for a planned graph.

    ``tuning`` overrides kernel knobs (the "kernel" entries of metadata.json), keyed by operator
    kind or operator index, e.g. {"CONV_2D": {"weights": "s16"}}. ``shared_arena``: the C name of
    an arena the firmware defines (``int64_t NAME[]``) and shares between models that never run at
    the same time (docs/multiple_models.md); by default the library has its own static arena."""
    name = graph.name
    arena = f"{name}_shared_arena" if shared_arena else f"{name}_arena.bytes"
    _check_outputs(graph)
    params = ParamSink(name)
    params.subgraphs = graph.subgraphs
    layers = layer_names(graph)
    states, state_names = state_arrays(graph, layers, {id(s): layer_names(s) for s in graph.subgraphs.values()})
    params.state_names = state_names[id(graph)]
    functions = [_emit_function(graph, op, name, params, features, tuning, layers[op.index]) for op in graph.operators]
    shared = share_bodies(graph, functions, name, frozenset(h.name for h in params.helpers))

    def emit_subgraph_op(sub: Graph, op: Operator, prefix: str, layer: str) -> OpFunction:
        params.state_names = state_names[id(sub)]
        return _emit_function(sub, op, prefix, params, features, tuning, layer)

    subgraph_prototypes, subgraph_code, subgraph_functions = subgraph_sources(graph, emit_subgraph_op, _output_copies)
    slices = arena_slices(graph, layers)
    inputs = [_tensor_info(graph, t, f"input{k}") for k, t in enumerate(graph.inputs)]
    outputs = [_tensor_info(graph, t, f"output{k}") for k, t in enumerate(graph.outputs)]
    calls = []
    for fn in functions:
        args = [_pointer(graph, tensor, arena, slices) for _, _, tensor in fn.params]
        calls.append((fn, args))
    values = dict(
        name=name,
        NAME=name.upper(),
        functions=functions,
        shared_bodies=shared,
        helpers=params.helpers,
        calls=calls,
        inputs=inputs,
        output_copies=_output_copies(graph),
        outputs=outputs,
        arena_bytes=graph.arena_bytes,
        graph=graph,
        c_type=c_type,
        shared_arena=shared_arena,
        slices=sorted(((graph.offsets[root], c, comment) for root, (c, comment) in slices.items())),
        params=[c_array(*a, symbols=params.symbols.get(a[0])) for a in params.arrays],
        scratch_bytes=params.scratch_bytes,
        state_bytes=graph.state_bytes,
        state_definitions=state_definitions(states),
        reset_body=reset_body(states),
        subgraph_prototypes=subgraph_prototypes,
        subgraph_code=subgraph_code,
    )
    lib = ModelLibrary(graph, functions, params)
    ops_c = render("model_ops.c.j2", kernel_headers=[], **values)
    # the headers the plans name, and those whose helpers the C names (kernels' conditional helpers)
    planned = [h for fn in functions + subgraph_functions for h in fn.plan.headers]
    lib.files[f"src/{name}_ops.c"] = render("model_ops.c.j2", kernel_headers=used_headers([ops_c], planned), **values)
    lib.files[f"src/{name}_aot.c"] = render("model_aot.c.j2", **values)
    lib.files.update(graph_sources(graph, functions))
    fingerprint = model_fingerprint(lib.files, inputs, outputs)
    lib.files[f"include/{name}.h"] = render("model.h.j2", fingerprint=fingerprint, **values)
    for header in library_headers([ops_c], planned):  # only the runtime headers this model's C uses
        lib.files[f"{HEADER_DIR}/{header}"] = resources.crt_file(f"{HEADER_DIR}/{header}").read_text()
    body_of = {caller: sb.name for sb in shared for caller in sb.callers}
    operators = [
        OperatorInfo(
            index=fn.op.index,
            kind=fn.op.kind,
            function=fn.name,
            layer=full_layer_name(graph, fn.op),
            layer_name=layers[fn.op.index],
            inputs=tuple(graph.tensors[i].shape for i in fn.op.inputs if i >= 0),
            outputs=tuple(graph.tensors[o].shape for o in fn.op.outputs),
            macs=fn.macs,
            weights_bytes=fn.weights_bytes,
            kernel=fn.plan.as_json(),
            shared_body=body_of.get(fn.name),
            # all-zero output channels the drop_zero_channels pass removed (passes/zero_channels.py)
            dropped_channels=fn.op.notes.dropped_channels,
        )
        for fn in functions
    ]
    details = {
        **({"shared_arena": shared_arena} if shared_arena else {}),
        "weights_bytes": params.nbytes,  # the flash arrays (weights and derived constants), code apart
        "state": state_metadata(states),
        # the leading stage run as a grid of patches (passes/patches.py, docs/memory.md); {} when not
        "patches": _patches_metadata(graph, layers),
        # the plans the RAM-budget planner tried and the one it chose (passes/ram_budget.py); {} without a budget
        "ram_budget": {k: v for k, v in graph.ram_plan.items() if k != "in_place_depthwise"}
        if "plans" in graph.ram_plan
        else {},
        "dropped_channels": sum(fn.op.notes.dropped_channels for fn in functions + subgraph_functions),
    }
    refusal = graph_executor_refusal(functions, graph)
    if refusal:  # no <name>_graph.c: only the AOT executor runs this model
        details["graph_executor_refusal"] = refusal
    # the other subgraphs (IF, WHILE, CALL_ONCE), each a C function called by its control-flow operator
    subgraphs = [
        SubgraphInfo(
            index=k,
            name=sub.name,
            function=f"{name}_{sub.name}",
            arena_bytes=sub.arena_bytes,
            operators=tuple(
                _subgraph_operator(sub, fn) for fn in subgraph_functions if any(fn.op is op for op in sub.operators)
            ),
        )
        for k, sub in sorted(graph.subgraphs.items())
    ]
    lib.metadata = ModelInfo(
        name=name,
        inputs=[TensorInfo.from_json(t, "the inputs") for t in inputs],
        outputs=[TensorInfo.from_json(t, "the outputs") for t in outputs],
        arena_bytes=graph.arena_bytes,
        params_bytes=params.nbytes,
        scratch_bytes=params.scratch_bytes,
        state_bytes=graph.state_bytes,
        total_macs=sum(fn.macs for fn in functions + subgraph_functions),
        fingerprint=fingerprint,
        operators=operators,
        subgraphs=subgraphs,
        # bodies emitted once for several identical layers (codegen/shared_bodies.py)
        shared_bodies=[SharedBodyInfo(sb.name, tuple(sb.callers)) for sb in shared],
        memory_peak=memory_peak(graph, layers),
        details=details,
    ).to_json()
    return lib
