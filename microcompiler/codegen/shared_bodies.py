"""Identical layer bodies emitted once.

Two layers of the same shape and kernel plan (KWS's four 1x1 convolutions, say) generate the same C
body apart from the names of their weight arrays. Each such body becomes one ``static`` function,
named for what it computes (``<model>_conv_2d_1x1_im2col_25x5x64_to_25x5x64``) and taking the
arrays as parameters; each layer's function (still named after the layer, still what the executors
call) calls it with its own arrays. Flash holds the body once.

Only bodies whose tensors and arrays fit in the argument registers (the Arm procedure call standard
passes four) are shared. With a fifth the call is not a tail call: the layer's frame sits under the
body's and the stack high-water rises (the VWW look-alike's depthwise layers: +8 B on the M3 and the
M55). Passing the arrays as one pointer to a record of them keeps the call a tail call but costs the
body a register: on the M3 its frame grew by 8 B and it ran 25,000 more instructions per layer,
where the layer's own function reads the arrays at addresses the linker fixes. For the same reason
a kernel variant can say that its bodies are not to be shared (``Variant.shared_body``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial

from microcompiler.ir import Graph, Operator
from microcompiler.ops.plan import KernelPlan

REGISTER_ARGUMENTS = 4  # the Arm procedure call standard passes the first four arguments in r0-r3
STATIC_LOCAL = re.compile(r"^\s*static\b", re.M)


@dataclass
class SharedBody:
    """One body shared by the layers that call it."""

    name: str
    params: list[tuple[str, str]]  # (C type incl. const and *, parameter name): the tensors, then the arrays
    body: str
    comment: str
    callers: list[str] = field(default_factory=list)


def _array_pattern(names: list[str]) -> re.Pattern | None:
    if not names:
        return None
    return re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")\b")


def _template(body: str, arrays: list[tuple[str, str]]) -> tuple[str, list[tuple[str, str]]]:
    """The body with its own arrays replaced by ``@0@``, ``@1@``... in order of first use, and
    (name, C type) of the arrays it uses in that order."""
    pattern = _array_pattern([n for n, _ in arrays])
    if pattern is None:
        return body, []
    ctypes = dict(arrays)
    used: list[str] = []

    def slot(m: re.Match) -> str:
        if m.group(1) not in used:
            used.append(m.group(1))
        return f"@{used.index(m.group(1))}@"

    text = pattern.sub(slot, body)
    return text, [(n, ctypes[n]) for n in used]


def _dims(shape) -> str:
    dims = list(shape)
    while len(dims) > 1 and dims[0] == 1:
        dims = dims[1:]
    return "x".join(str(d) for d in dims)


def describe(graph: Graph, op: Operator, plan: KernelPlan) -> str:
    """What a layer computes, as a C name part: kind, kernel size, kernel variant, shapes."""
    parts = [op.kind.lower()]
    if op.kind in ("CONV_2D", "DEPTHWISE_CONV_2D") and len(op.inputs) > 1 and op.inputs[1] >= 0:
        kernel = graph.tensors[op.inputs[1]].shape
        parts.append(f"{kernel[1]}x{kernel[2]}")
    parts.append(re.sub(r"\W", "_", plan.variant.name))
    inputs = [i for i in op.inputs if i >= 0 and graph.tensors[i].data is None]
    if inputs and op.outputs:
        parts.append(f"{_dims(graph.tensors[inputs[0]].shape)}_to_{_dims(graph.tensors[op.outputs[0]].shape)}")
    return "_".join(parts)


def _param_name(array: str, owner: str, taken: set[str], k: int) -> str:
    """``kws_conv2d_1_weights`` of layer function ``kws_conv2d_1`` -> ``weights``."""
    stem = array[len(owner) + 1 :] if array.startswith(owner + "_") else ""
    name = stem if re.fullmatch(r"[A-Za-z_]\w*", stem or "") and stem not in taken else f"table{k}"
    taken.add(name)
    return name


def share_bodies(
    graph: Graph, functions: list, prefix: str, reserved: frozenset[str] = frozenset()
) -> list[SharedBody]:
    """Group ``functions`` (codegen's OpFunction: ``name``, ``params``, ``body``, ``arrays``, ``op``,
    ``variant``) by their body with their own arrays abstracted; every group of two or more gets one
    SharedBody and its members' bodies become a call to it. A body with a ``static`` local is not
    shared (its initializer names the layer's arrays, which in a shared body would be parameters).
    ``reserved``: other C names of the model the shared bodies' names must not take (the kernels'
    helpers). Returns the shared bodies, in the order of their first caller."""
    groups: dict[tuple, list] = {}
    templates = {}
    for fn in functions:
        if STATIC_LOCAL.search(fn.body):
            continue
        text, used = _template(fn.body, fn.arrays)
        key = (text, tuple(c for c, _, _ in fn.params), tuple(p for _, p, _ in fn.params), tuple(c for _, c in used))
        templates[id(fn)] = (text, used)
        groups.setdefault(key, []).append(fn)
    shared: list[SharedBody] = []
    taken_names: set[str] = {fn.name for fn in functions} | set(reserved)
    for members in groups.values():
        first = members[0]
        text, used = templates[id(first)]
        too_many = len(first.params) + len(used) > REGISTER_ARGUMENTS
        if len(members) < 2 or too_many or not first.plan.variant.shared_body:
            continue
        # a parameter must not take the name of an identifier of the body (a local `c = c[o]`)
        code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        taken = {p for _, p, _ in first.params} | set(re.findall(r"[A-Za-z_]\w*", code))
        names = [_param_name(array, first.name, taken, k) for k, (array, _) in enumerate(used)]
        body = re.sub(r"@(\d+)@", partial(_named, names), text)
        base = f"{prefix}_{describe(graph, first.op, first.plan)}"
        name, n = base, 2
        while name in taken_names:
            name, n = f"{base}_{n}", n + 1
        taken_names.add(name)
        params = [(c, p) for c, p, _ in first.params] + [
            (f"const {ctype}*", pname) for (_, ctype), pname in zip(used, names)
        ]
        sb = SharedBody(name, params, body, "", [fn.name for fn in members])
        sb.comment = (
            f"the body of {', '.join(sb.callers)}: the same computation on each layer's own "
            f"{', '.join(names) if names else 'tensors'}"
        )
        shared.append(sb)
        for fn in members:
            _, own = templates[id(fn)]
            args = [p for _, p, _ in fn.params] + [a for a, _ in own]
            fn.body = f"  {name}({', '.join(args)});\n"
    return shared


def _named(names: list[str], match: re.Match) -> str:
    """The parameter name of placeholder ``@k@``."""
    return names[int(match.group(1))]
