"""Control flow: IF, WHILE and CALL_ONCE as C control flow around generated subgraph functions.

Each subgraph of the model becomes a C function ``<model>_<subgraph>(inputs..., outputs...[, arena])``
(codegen/subgraphs.py) whose intermediate tensors live in an arena of its own, planned like the main
graph's. The control-flow operator is one ordinary operator function (one node in the graph
executor too) that calls those functions; the memory they need is one extra output of the operator,
the *subgraph arena* (``op.notes.subgraph_arena`` bytes), which the planner places in the caller's
arena for the duration of the call only:

- IF (TFLM kernels/if.cc): ``if (cond[0])`` calls the then-subgraph, else the else-subgraph, with the
  operator's inputs 1.. and outputs; the branches share the subgraph arena. TFLM copies inputs and
  outputs through intermediate buffers because it plans each subgraph on its own, so a branch's
  tensors may overlap the IF's; here the subgraph arena is a buffer of the caller's plan, live with
  the IF's inputs and outputs, so the branch reads and writes them in place.
- WHILE (kernels/while.cc): the loop values live in the operator's outputs (the inputs are copied in
  first); each turn calls the condition subgraph on them, stops when it gives false, else calls the
  body, which writes its results to temporaries at the start of the subgraph arena, copied back.
- CALL_ONCE (kernels/call_once.cc): runs its subgraph while its persistent flag (added by the
  importer) is 0, then sets it; ``<model>_reset()`` clears the flag so the initialisation runs again
  on the next inference, as after start-up.
"""

from __future__ import annotations

from microcompiler.ir import Graph, Operator, c_type, called_subgraphs
from microcompiler.ops.base import OpKernel, register

_ALIGN = 8


def _align(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


def _while_layout(body: Graph) -> tuple[list[int], int, int]:
    """(offsets of the body's result temporaries, offset of the condition's value, offset of the
    subgraphs' own arena) inside a WHILE's subgraph arena."""
    offsets, end = [], 0
    for t in body.outputs:
        offsets.append(end)
        end = _align(end + body.tensors[t].nbytes)
    return offsets, end, _align(end + 1)


def subgraph_arena_bytes(op: Operator, subgraphs: dict[int, Graph]) -> int:
    """Bytes of the arena a control-flow operator's subgraphs need (0 for other operators);
    ``subgraphs`` must be planned already (their ``arena_bytes`` known)."""
    called = [subgraphs[k] for k in called_subgraphs(op)]
    if not called:
        return 0
    inner = max(g.arena_bytes for g in called)
    if op.kind == "WHILE":
        return _while_layout(called[1])[2] + inner
    return inner


def _call(ctx, sub: Graph, args: list[str], arena: str) -> str:
    extra = [arena] if sub.arena_bytes else []
    return f"{ctx.params.model}_{sub.name}({', '.join(args + extra)});"


class _ControlFlow(OpKernel):
    types = ("int8", "int16", "int32", "float32", "bool")
    quantized_io = False

    def subgraphs(self, op, ctx) -> list[Graph]:
        return [ctx.params.subgraphs[k] for k in called_subgraphs(op)]

    def arena(self, op, ctx) -> tuple[str, str]:
        """(declaration line, C name) of the subgraph arena as bytes, or ("", "") when there is none."""
        if not op.notes.subgraph_arena:
            return "", ""
        return f"  uint8_t* arena = (uint8_t*){ctx.arg(op.outputs[-1])};\n", "arena"

    def emit(self, op, graph, ctx):
        decl, arena = self.arena(op, ctx)
        return decl + self.calls(op, graph, ctx, self.subgraphs(op, ctx), arena)

    def calls(self, op, graph, ctx, subgraphs: list[Graph], arena: str) -> str:
        """The C statements around the calls of the subgraph functions (after the arena's declaration)."""
        raise NotImplementedError


@register
class If(_ControlFlow):
    kinds = ("IF",)
    inputs = (1, 64)
    outputs = (0, 64)
    options = "then_subgraph_index, else_subgraph_index: if/else calling the branch subgraph functions"
    type_notes = "the condition: a bool tensor whose first element decides"
    input_roles = ("condition",) + tuple(f"arg{k}" for k in range(1, 64))

    def calls(self, op, graph, ctx, subgraphs, arena):
        then_g, else_g = subgraphs
        args = [ctx.arg(i) for i in op.inputs[1:]] + [ctx.arg(o) for o in op.outputs[: len(then_g.outputs)]]
        return (
            f"  if ({ctx.arg(op.inputs[0])}[0]) {{\n    {_call(ctx, then_g, args, arena)}\n"
            f"  }} else {{\n    {_call(ctx, else_g, args, arena)}\n  }}\n"
        )


@register
class While(_ControlFlow):
    kinds = ("WHILE",)
    inputs = (1, 64)
    outputs = (1, 64)
    options = "cond_subgraph_index, body_subgraph_index: a C loop calling the condition and body subgraph functions"
    input_roles = tuple(f"start{k}" for k in range(64))  # a constant loop value's first value

    def calls(self, op, graph, ctx, subgraphs, arena):
        cond, body = subgraphs
        n = len(body.outputs)
        values = [ctx.arg(o) for o in op.outputs[:n]]
        temps, flag_at, inner_at = _while_layout(body)  # a WHILE always has its arena (the temporaries)
        lines = []
        for k, (t, at) in enumerate(zip(body.outputs, temps)):
            ctype = c_type(body.tensors[t].dtype)
            lines.append(f"  {ctype}* result{k} = ({ctype}*)&{arena}[{at}];  /* the body's output {k} */\n")
        lines.append(f"  uint8_t* keep_going = &{arena}[{flag_at}];  /* the condition's output */\n")
        inner = f"&{arena}[{inner_at}]"
        for k, (i, o) in enumerate(zip(op.inputs, op.outputs)):
            lines.append(f"  memcpy({values[k]}, {ctx.arg(i)}, {graph.tensors[o].nbytes});\n")
        lines.append("  for (;;) {\n")
        lines.append(f"    {_call(ctx, cond, values + ['keep_going'], inner)}\n")
        lines.append("    if (!keep_going[0]) break;\n")
        lines.append(f"    {_call(ctx, body, values + [f'result{k}' for k in range(n)], inner)}\n")
        for k, o in enumerate(op.outputs[:n]):
            lines.append(f"    memcpy({values[k]}, result{k}, {graph.tensors[o].nbytes});\n")
        lines.append("  }\n")
        return "".join(lines)


@register
class CallOnce(_ControlFlow):
    kinds = ("CALL_ONCE",)
    inputs = (0, 0)
    outputs = (0, 0)
    options = "init_subgraph_index: runs on the first inference after start-up or <model>_reset()"

    def calls(self, op, graph, ctx, subgraphs, arena):
        (init,) = subgraphs
        done = ctx.arg(op.outputs[0])
        return (
            f"  if ({done}[0]) return;  /* ran since start-up or the last reset */\n"
            f"  {_call(ctx, init, [], arena)}\n  {done}[0] = 1;\n"
        )
