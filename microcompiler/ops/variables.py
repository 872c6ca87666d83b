"""Resource variables: VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE.

The importer (frontend/subgraphs.py) resolves every VAR_HANDLE to a persistent tensor keyed by
container and shared name, as TFLM's MicroResourceVariables keys it, so no handle exists at run
time: READ_VARIABLE copies that state into its output and ASSIGN_VARIABLE copies its input into the
state (its only output). The state lives in the model's state section and ``<model>_reset()``
restores it (docs/state.md).
"""

from __future__ import annotations

from microcompiler.errors import UnsupportedModelError
from microcompiler.ops.base import OpKernel, register, require

_TYPES = ("int8", "int16", "int32", "int64", "float32", "bool", "uint8")


@register
class VarHandle(OpKernel):
    kinds = ("VAR_HANDLE",)
    inputs = (0, 0)
    outputs = (1, 1)
    types = ("resource",)
    options = "container, shared_name: resolved at compile time to one state array per variable"
    quantized_io = False

    def emit(self, op, graph, ctx):
        raise UnsupportedModelError(f"operator {op.index} (VAR_HANDLE) was not resolved to a variable")


@register
class Variable(OpKernel):
    kinds = ("READ_VARIABLE", "ASSIGN_VARIABLE")
    arity = {"READ_VARIABLE": ((1, 1), (1, 1)), "ASSIGN_VARIABLE": ((2, 2), (0, 0))}
    input_roles = ("value",)
    types = _TYPES
    options = "a copy from (READ) or into (ASSIGN) the variable's state array"
    quantized_io = False

    def check(self, op, graph):
        state = op.inputs[0] if op.kind == "READ_VARIABLE" else (op.outputs or [-1])[0]
        value = op.outputs[0] if op.kind == "READ_VARIABLE" else op.inputs[0]
        require(state >= 0 and graph.tensors[state].persistent, op, "its resource handle names no variable")
        s, v = graph.tensors[state], graph.tensors[value]
        require(
            s.dtype == v.dtype and s.nbytes == v.nbytes,
            op,
            f"the variable is {s.dtype} {list(s.shape)} but the value is {v.dtype} {list(v.shape)}",
        )

    def emit(self, op, graph, ctx):
        if op.kind == "READ_VARIABLE":
            dst, src, nbytes = ctx.arg(op.outputs[0]), ctx.arg(op.inputs[0]), graph.tensors[op.inputs[0]].nbytes
        else:
            dst, src, nbytes = ctx.arg(op.outputs[0]), ctx.arg(op.inputs[0]), graph.tensors[op.outputs[0]].nbytes
        return f"  memcpy({dst}, {src}, {nbytes});\n"
