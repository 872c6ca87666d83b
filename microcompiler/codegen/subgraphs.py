"""C functions for a model's other subgraphs (IF branches, WHILE condition and body, CALL_ONCE
initialisation).

Subgraph ``then_add`` of model ``m`` becomes::

    static void m_then_add(const int8_t* input0, int8_t* output0, uint8_t* arena);

its inputs and outputs are the caller's buffers (passed by the control-flow operator's function,
ops/control_flow.py) and its intermediate tensors live in ``arena``, the subgraph arena the planner
placed in the caller's arena for the duration of the call (passes/memory_plan.py). Its operators
are ``static`` functions of their own (``m_then_add_<layer>``), emitted exactly like the main
graph's; constants are shared with the rest of the model, state arrays too (codegen/state.py).
"""

from __future__ import annotations

import re

from microcompiler.codegen.c_arrays import comment_text
from microcompiler.codegen.naming import layer_names
from microcompiler.ir import Graph, c_type


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def signature(model: str, sub: Graph) -> str:
    params = [f"const {c_type(sub.tensors[t].dtype)}* input{k}" for k, t in enumerate(sub.inputs)]
    params += [f"{c_type(sub.tensors[t].dtype)}* output{k}" for k, t in enumerate(sub.outputs)]
    if sub.arena_bytes:
        params.append("uint8_t* arena")
    return f"static void {model}_{sub.name}({', '.join(params) or 'void'})"


def _pointer(sub: Graph, tensor: int) -> str:
    root = sub.storage(tensor)
    if root in sub.inputs:
        return f"input{sub.inputs.index(root)}"
    if root in sub.outputs:
        return f"output{sub.outputs.index(root)}"
    return f"({c_type(sub.tensors[tensor].dtype)}*)&arena[{sub.offsets[root]}]"


def subgraph_sources(main: Graph, emit, output_copies) -> tuple[str, str, list]:
    """(prototypes, definitions, operator functions) of every subgraph of ``main``, in index order.

    ``emit(graph, op, prefix, layer)`` emits one operator function (model_library's emitter; the
    caller sets the state names of ``graph`` before); ``output_copies(graph)`` lists the outputs no
    operator writes (model_library._output_copies)."""
    model = main.name
    prototypes, parts, all_functions = [], [], []
    for k in sorted(main.subgraphs):
        sub = main.subgraphs[k]
        layers = layer_names(sub)
        functions = [emit(sub, op, f"{model}_{sub.name}", layers[op.index]) for op in sub.operators]
        all_functions += functions
        prototypes.append(signature(model, sub) + ";\n")
        body = []
        for fn in functions:
            params = ", ".join(f"{ctype} {pname}" for ctype, pname, _ in fn.params) or "void"
            body.append(f"\n/* {fn.comment} */\nstatic void {fn.name}({params}) {{\n{fn.body}}}\n")
        layout = ", ".join(
            f"{sub.tensors[t].name} at {off}" for t, off in sorted(sub.offsets.items(), key=lambda x: x[1])
        )
        lines = [
            comment_text(
                f"Subgraph {k} '{sub.name}': {_count(len(sub.inputs), 'input')}, {_count(len(sub.outputs), 'output')}"
                + (f", {sub.arena_bytes} B of arena ({layout})" if sub.arena_bytes else "")
            )
        ]
        calls = [f"  {fn.name}({', '.join(_pointer(sub, t) for _, _, t in fn.params)});\n" for fn in functions]
        calls += [f"  memcpy({dst}, {src}, {nbytes});  /* {why} */\n" for dst, src, nbytes, why in output_copies(sub)]
        used = "".join(calls)
        names = [f"input{j}" for j in range(len(sub.inputs))] + [f"output{j}" for j in range(len(sub.outputs))]
        names += ["arena"] if sub.arena_bytes else []
        calls = [
            f"  (void){p};  /* not used by this subgraph */\n" for p in names if not re.search(rf"\b{p}\b", used)
        ] + calls
        body.append(f"\n/* {lines[0]} */\n{signature(model, sub)} {{\n{''.join(calls)}}}\n")
        parts.append("".join(body))
    return "".join(prototypes), "".join(parts), all_functions
