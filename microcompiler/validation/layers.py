"""Find the first layer where the device and TFLite Micro part ways.

The model runs host-driven one operator at a time; after each operator the host reads the
operator's output tensors from the device's pool and compares them with the same TFLite tensors,
which the interpreter kept (preserve-all-tensors mode). The compiled graph keeps TFLite's tensor
indices, so a tensor is compared with the tensor of the same index. Tensors the passes removed (an
activation fused into the operator before it, a removed RESHAPE, a folded constant) no longer exist
on the device: they are listed as skipped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from microcompiler.validation.metrics import within_tolerance

if TYPE_CHECKING:
    from microcompiler.codegen.model_library import ModelLibrary, OpFunction
    from microcompiler.ir import Graph
    from microcompiler.rpc.executor import GraphExecutor
    from microcompiler.validation.reference import Reference

INTEGER_DTYPES = ("int8", "uint8", "int16", "int32", "int64", "bool", "uint32")


def _param_position(fn: OpFunction, tensor: int, graph: Graph) -> int | None:
    for position, (_, _, t) in enumerate(fn.params):
        if t == tensor or graph.storage(t) == graph.storage(tensor):
            return position
    return None


def last_writers(functions: list[OpFunction]) -> dict[int, int]:
    """tensor -> the position of the last operator function that writes it. A tensor several operators
    write in parts (the stage output of patch-based execution, one patch per operator,
    passes/patches.py) is whole, and comparable with TFLM's, only after the last of them."""
    return {t: k for k, fn in enumerate(functions) for t in fn.op.outputs}


def original_intermediates(original_graph: Graph) -> set[int]:
    """Every tensor an operator of the model as given writes (not the model's outputs)."""
    return {o for op in original_graph.operators for o in op.outputs if o >= 0} - set(original_graph.outputs)


def first_divergence(
    executor: GraphExecutor,
    library: ModelLibrary,
    reference: Reference,
    inputs: list[np.ndarray],
    original_graph: Graph,
    bitwise: bool = False,
) -> dict:
    """Run ``inputs`` operator by operator; the first operator whose output differs, and what was skipped.
    Float outputs differ when outside validate's tolerance, or with ``bitwise`` in any bit (NaNs alike)."""
    graph = library.graph
    reference.run(inputs)
    for k, x in enumerate(inputs):
        executor.set_input(k, x)
    checked: set[int] = set()
    operators = library.info.operators
    last_writer = last_writers(library.functions)
    for k, fn in enumerate(library.functions):
        executor.run_operator(k)
        for t in fn.op.outputs:
            position = _param_position(fn, t, graph)
            if position is None or t >= len(original_graph.tensors) or last_writer[t] != k:
                continue  # a tensor a pass made (TFLM has none), or one a later operator still writes
            tensor = graph.tensors[t]
            ours = executor.read_argument(k, position, tensor.dtype, tensor.shape)
            theirs = reference.tensor(t).reshape(ours.shape)
            checked.add(t)
            if tensor.dtype in INTEGER_DTYPES:
                same = np.array_equal(ours, theirs)
            elif bitwise:
                same = _same_bits(ours, theirs)
            else:
                same = within_tolerance(ours, theirs)
            if not same:
                diff = np.abs(ours.astype(np.float64) - theirs.astype(np.float64))
                meta = operators[k] if k < len(operators) else None
                return {
                    "diverged": True,
                    "index": fn.op.index,
                    "operator": fn.op.kind,
                    "function": fn.name,
                    "layer": (meta.layer_name if meta else None) or fn.name,
                    "layer_full_name": (meta.layer if meta else None) or "",
                    "tensor": tensor.name,
                    "tensor_index": t,
                    "max_abs_error": float(diff.max()),
                    "mismatched_elements": int(np.count_nonzero(diff)),
                    "elements": int(diff.size),
                    "checked_tensors": len(checked),
                    "skipped_tensors": _skipped(original_graph, checked, graph, last=fn.op.index),
                }
    return {
        "diverged": False,
        "checked_tensors": len(checked),
        "skipped_tensors": _skipped(original_graph, checked, graph, last=None),
    }


def _same_bits(ours: np.ndarray, theirs: np.ndarray) -> bool:
    ours, theirs = np.ascontiguousarray(ours), np.ascontiguousarray(theirs, dtype=ours.dtype)
    both_nan = np.isnan(ours) & np.isnan(theirs)
    return bool(
        np.all(
            (ours.view(np.uint8).reshape(ours.size, -1) == theirs.view(np.uint8).reshape(ours.size, -1)).all(axis=1)
            | both_nan.ravel()
        )
    )


def _skipped(original_graph: Graph, checked: set[int], graph: Graph, last: int | None) -> list[dict]:
    """Intermediate tensors of the original model (up to operator ``last``) not compared: the passes removed them."""
    if last is not None:  # only those up to the diverging operator matter
        wanted = {o for op in original_graph.operators if op.index <= last for o in op.outputs}
    else:
        wanted = original_intermediates(original_graph)
    live = {o for op in graph.operators for o in op.outputs}
    return [
        {"tensor_index": t, "tensor": original_graph.tensors[t].name}
        for t in sorted(wanted - checked - set(original_graph.outputs))
        if t not in live
    ]
