"""The graph description and operator registry for the on-device graph executor.

The description is a compact little-endian binary table (not JSON: the device then needs no parser,
and the whole thing is a few bytes per operator), emitted as a C array:

    header   "MCG2" | u16 slot_count | u16 op_count | u8 input_count | u8 output_count
             | u16 max_args | u32 pool_bytes | u32 string_table_bytes
    slots    slot_count x (u32 offset, u32 bytes)       memory of each tensor inside the pool
    inputs   input_count  x u16 slot
    outputs  output_count x u16 slot
    ops      op_count x (u16 name_offset, u16 arg_count, arg_count x u16 slot)
    strings  NUL-terminated operator function names

A slot is one piece of memory: tensors that alias (removed RESHAPEs) share a slot. The pool holds
the planned activation arena followed by the model inputs and outputs; all offsets come from the
compile-time memory plan, so the executor allocates nothing. Operator records have the length of
their arguments, so an operator may take any number of them (an UNPACK of 21 outputs, a
CONCATENATION of 33 inputs); max_args is the most any record holds. The pointer table the executor
fills for one call is the pool's last ARG_BYTES * max_args bytes (at pool_bytes - ARG_BYTES *
max_args, 8-aligned, after every slot): no argument array on the stack, no fixed limit. State kept
across inferences (persistent tensors, docs/state.md) is not in the pool and has no slot: the
operator functions reach its static arrays in the model library themselves, so the graph executor
and <name>_run() share it and <name>_reset() restores it for both.
"""

from __future__ import annotations

import struct

from microcompiler.codegen.model_info import ModelInfo
from microcompiler.errors import UnsupportedModelError
from microcompiler.ir import Graph, c_type

MAGIC = b"MCG2"
HEADER = struct.Struct("<4sHHBBHII")  # HEADER_BYTES in crt/src/graph_executor.c
OP_HEADER = struct.Struct("<HH")  # name_offset, arg_count (OP_HEADER_BYTES)
ARG_BYTES = 8  # MC_GRAPH_ARG_BYTES: one entry of the pointer table, >= sizeof(void*) on host and device
ALIGN = 8


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def graph_executor_refusal(functions, graph: Graph | None = None) -> str | None:
    """Why the graph executor (and host-driven mode, which walks the same description) cannot run
    these operator functions, or None. Only its 16-bit counts and offsets and 32-bit sizes limit it
    (checked with ``graph``); an operator may take any number of tensor arguments. The generated
    <model>_run() (the AOT executor) has no such limits."""
    if graph is not None:
        try:
            build_description(graph, functions)
        except UnsupportedModelError as exc:
            return str(exc)
    return None


def max_args(functions) -> int:
    """The most tensor arguments one of these operator functions takes (the registry's max_args)."""
    return max((len(fn.params) for fn in functions), default=0)


def check_graph_executor(info: ModelInfo) -> None:
    """Raise the refusal a compiled model's metadata records when the graph executor cannot run it."""
    if info.graph_executor_refusal:
        raise UnsupportedModelError(f"model {info.name}: {info.graph_executor_refusal}")


def build_description(graph: Graph, functions) -> tuple[bytes, int]:
    """The binary description and the pool size it needs (tensors, then the pointer table)."""
    slot_of: dict[int, int] = {}
    slots: list[tuple[int, int]] = []
    pool = _align(graph.arena_bytes)

    def slot(tensor: int) -> int:
        nonlocal pool
        root = graph.storage(tensor)
        if root not in slot_of:
            if root in graph.offsets:
                offset = graph.offsets[root]
            else:  # a model input or output: placed after the arena
                offset = pool
                pool = _align(pool + graph.tensors[root].nbytes)
            slot_of[root] = len(slots)
            slots.append((offset, graph.tensors[root].nbytes))
        return slot_of[root]

    inputs = [slot(t) for t in graph.inputs]
    outputs = [slot(t) for t in graph.outputs]
    strings = bytearray()
    ops = bytearray()
    widest = max_args(functions)
    for fn in functions:
        args = [slot(tensor) for _, _, tensor in fn.params]
        name_offset = len(strings)
        strings += fn.name.encode() + b"\0"
        if name_offset > 0xFFFF or len(slots) > 0xFFFF or widest > 0xFFFF:
            break  # too many operator names, tensors or arguments for 16-bit fields: refused below
        ops += OP_HEADER.pack(name_offset, len(args)) + struct.pack(f"<{len(args)}H", *args)
    pool = _align(pool)
    limits = (
        (len(slots), 0xFFFF, "tensors"),
        (len(functions), 0xFFFF, "operators"),
        (len(inputs), 0xFF, "inputs"),
        (len(outputs), 0xFF, "outputs"),
        (widest, 0xFFFF, "tensor arguments of one operator"),
        (len(strings), 0xFFFF, "bytes of operator names"),
        (pool + ARG_BYTES * widest, 0xFFFFFFFF, "bytes of memory"),
    )
    for count, most, what in limits:
        if count > most:
            raise UnsupportedModelError(
                f"the model needs {count:,} {what}, more than the graph executor's description holds "
                f"({most:,}); use the AOT executor (--executor aot, --mode standalone)"
            )
    pool += ARG_BYTES * widest  # the pointer table of one call, after every slot
    header = HEADER.pack(MAGIC, len(slots), len(functions), len(inputs), len(outputs), widest, pool, len(strings))
    body = b"".join(struct.pack("<II", o, n) for o, n in slots)
    body += struct.pack(f"<{len(inputs)}H", *inputs) + struct.pack(f"<{len(outputs)}H", *outputs)
    return header + body + bytes(ops) + bytes(strings), max(pool, 1)


def graph_sources(graph: Graph, functions) -> dict[str, str]:
    """src/<name>_graph.c and include/<name>_graph.h; none when the graph executor cannot run the
    model (graph_executor_refusal: the AOT executor still can)."""
    if graph_executor_refusal(functions, graph):
        return {}
    name = graph.name
    description, pool_bytes = build_description(graph, functions)
    hex_lines = []
    for i in range(0, len(description), 16):
        hex_lines.append("    " + ", ".join(f"0x{b:02x}" for b in description[i : i + 16]) + ",")
    wrappers = []
    for fn in functions:
        casts = ", ".join(f"({ctype})args[{k}]" for k, (ctype, _, _) in enumerate(fn.params))
        unused = "" if fn.params else "(void)args; "  # an operator with no tensor arguments (CALL_ONCE)
        wrappers.append(f"static void {fn.name}_entry(void* const* args) {{ {unused}{fn.name}({casts}); }}")
    entries = [f'    {{"{fn.name}", {fn.name}_entry}},' for fn in functions] or ['    {"", 0},']
    header = f"""/* {name}: graph description and operator registry for the graph executor. Generated. */
#ifndef {name.upper()}_GRAPH_H_
#define {name.upper()}_GRAPH_H_

#include <stddef.h>
#include <stdint.h>

#include "microcompiler/graph_executor.h"

/* Bytes of the pool the graph executor needs: activations, inputs and outputs, then the pointer
 * table of one operator call. The state the model keeps across inferences is not in it:
 * {name}_reset() (in {name}.h) restores it. */
#define {name.upper()}_GRAPH_POOL_BYTES {pool_bytes}
/* The most tensor arguments one operator function takes ({name}_registry.max_args). */
#define {name.upper()}_GRAPH_MAX_ARGS {max_args(functions)}

extern const uint8_t {name}_graph[];
extern const size_t {name}_graph_bytes;
extern const mc_op_registry_t {name}_registry;

#endif /* {name.upper()}_GRAPH_H_ */
"""
    source = f"""/* {name}: graph description and operator registry for the graph executor. Generated.
 * Format: see microcompiler/codegen/graph_description.py and docs/architecture.md. */
#include "{name}.h"
#include "{name}_graph.h"

const uint8_t {name}_graph[] = {{
{chr(10).join(hex_lines)}
}};
const size_t {name}_graph_bytes = sizeof({name}_graph);

/* Uniform wrappers: args[k] is the k-th tensor argument of the operator function. */
{chr(10).join(wrappers)}

static const mc_op_entry_t {name}_registry_entries[] = {{
{chr(10).join(entries)}
}};

const mc_op_registry_t {name}_registry = {{{name}_registry_entries, {len(functions)}u, {max_args(functions)}u}};
"""
    return {f"include/{name}_graph.h": header, f"src/{name}_graph.c": source}


__all__ = ["build_description", "check_graph_executor", "graph_executor_refusal", "graph_sources", "max_args", "c_type"]
