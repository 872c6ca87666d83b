"""The values and helpers the ONNX converters share (onnx_layers.py, onnx_more.py, onnx_conv.py,
onnx_resize.py): a value of the ONNX graph as the importer holds it, and the emission of an operator's
output in ONNX's or the NHWC layout."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from microcompiler.errors import UnsupportedModelError, printable

MAX_ELEMENTS = 1 << 24  # of one value: 64 MB of float32, far more than any microcontroller holds

# MLAS (ONNX Runtime's GEMM) sums the depth in blocks of this many inputs (MLAS_SGEMM_STRIDEK)
MLAS_STRIDE_K = 256


@dataclass
class _Value:
    shape: tuple[int, ...]  # ONNX's (NCHW) shape
    const: np.ndarray | None = None
    tensor: int = -1  # the IR tensor holding it (-1: a constant not yet made a tensor)
    nhwc: bool = False  # the IR tensor is the NHWC transpose of this 4-D value


def _out(imp: Any, kind: str, inputs: list[int], shape: tuple[int, ...], options: dict, node: Any, nhwc: bool):

    ir_shape = (shape[0], shape[2], shape[3], shape[1]) if nhwc else shape
    return _Value(shape, tensor=imp.emit(kind, inputs, ir_shape, options, node.output[0]), nhwc=nhwc)


def _const_input(imp: Any, node: Any, v: Any, what: str) -> np.ndarray:
    if v is None or v.const is None:
        raise UnsupportedModelError(f"{imp.where(node)}: its {what} must be a constant (an initializer)")
    return v.const


def check_elements(name: str, shape: tuple[int, ...] | list[int]) -> None:
    """Refuse a value too large for a microcontroller (a damaged file, or shapes that multiply out)."""
    count = math.prod(int(d) for d in shape)
    if count > MAX_ELEMENTS:
        raise UnsupportedModelError(
            f"value '{printable(name)}' has shape {list(shape)}: {count:,} elements, more than {MAX_ELEMENTS:,}; "
            "the model is inconsistent or far too large for a microcontroller"
        )
