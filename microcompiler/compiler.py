"""The compiler pipeline: import -> passes -> code generation -> files on disk."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from microcompiler.codegen import ModelLibrary, generate_library
from microcompiler.frontend.tflite import load_tflite
from microcompiler.errors import ModelFormatError, UnsupportedModelError
from microcompiler.ir import Graph
from microcompiler.ops.base import kernel_for
from microcompiler.ops.quant import INT_RANGES
from microcompiler.passes import PIPELINE


def check_operator(op, graph: Graph) -> None:
    """Let the operator's kernel reject what it cannot run.

    Kernels index tensors and shapes freely; on a damaged model that can fail in plain Python ways,
    which we report as an inconsistent operator rather than as a crash.
    """
    try:
        kernel_for(op).check(op, graph)
    except (IndexError, KeyError, ValueError, TypeError, AttributeError, ZeroDivisionError, OverflowError) as exc:
        raise UnsupportedModelError(
            f"operator {op.index} ({op.kind}) has inconsistent tensors or options ({type(exc).__name__}: "
            f"{exc}); re-export the model with the TFLite converter") from None


def check_quantization(graph: Graph) -> None:
    """Zero points must fit their tensor's type (TFLite's rule; kernels build int8 tables from them)."""
    for index, t in enumerate(graph.tensors):
        if t.quant is None or t.dtype not in INT_RANGES:
            continue
        lo, hi = INT_RANGES[t.dtype]
        outside = [int(z) for z in t.quant.zero_point if not lo <= int(z) <= hi]
        if outside:
            raise ModelFormatError(f"tensor {index} ('{t.name}') has zero point {outside[0]}, outside {t.dtype}'s "
                                   f"range [{lo}, {hi}]; the model file is damaged")


def run_passes(graph: Graph, passes=None) -> Graph:
    check_quantization(graph)
    for op in graph.operators:  # reject unsupported configurations before any work
        check_operator(op, graph)
    for p in PIPELINE if passes is None else passes:
        graph = p(graph)
    return graph


def compile_model(model_path: str | Path, features: frozenset[str] = frozenset(),
                  name: str | None = None, tuning: dict | None = None) -> ModelLibrary:
    """Compile a .tflite file into an in-memory model library (nothing is written)."""
    graph = load_tflite(model_path)
    if name:
        graph.name = name
    graph = run_passes(graph)
    return generate_library(graph, features, tuning)


def write_atomically(library: ModelLibrary, out_dir: str | Path) -> Path:
    """Write the library to out_dir so that it either appears complete or not at all."""
    out_dir = Path(out_dir).resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        library.write(tmp)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.rename(out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir
