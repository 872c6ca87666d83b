"""Give operators the state their kernels own: each ``StateBuffer`` an ``OpKernel.state`` declares
becomes a persistent tensor (``Tensor.persistent``, ``Tensor.initial``) recorded in
``Operator.state``, so the memory planner puts it in the state section, codegen makes it a static
array and ``<model>_reset()`` restores it, exactly as for a TFLite variable tensor (docs/state.md)."""

from __future__ import annotations

import numpy as np

from microcompiler.ir import Graph, Tensor, np_dtype
from microcompiler.ops import load_kernels
from microcompiler.ops.base import KERNELS, require_consistent

MAX_STATE_ELEMENTS = 1 << 28  # as for a tensor (frontend/tflite.py): no microcontroller holds more


def add_operator_state(graph: Graph) -> Graph:
    load_kernels()
    g = graph.copy()
    for op in g.operators:
        kernel = KERNELS.get(op.kind)
        if kernel is None or op.state:
            continue
        for buf in kernel.state(op, g):
            elements = int(np.prod(buf.shape, dtype=np.float64))
            require_consistent(
                elements <= MAX_STATE_ELEMENTS,
                op,
                f"its options ask for a state buffer '{buf.role}' of {[int(d) for d in buf.shape]} {buf.dtype} "
                f"values, more than {MAX_STATE_ELEMENTS} (TFLM cannot allocate it either)",
            )
            initial = np.broadcast_to(np.asarray(buf.initial, np_dtype(buf.dtype)), buf.shape).copy()
            g.tensors.append(
                Tensor(f"{op.name}/{buf.role}", tuple(buf.shape), buf.dtype, persistent=True, initial=initial)
            )
            op.state[buf.role] = len(g.tensors) - 1
    return g
