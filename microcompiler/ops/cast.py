"""CAST: raw-value conversion between float32, int8, int16, int32, uint32 and bool.

Quantization parameters are ignored, as TFLite Micro does (``cast.cc`` converts the stored values
with ``static_cast``), and so are the options' ``in_data_type``/``out_data_type``: the tensors'
types decide. The conversions, as the pinned TFLM computes them:

* integer -> narrower integer wraps (keeps the low bits); integer -> float32 rounds to nearest;
* float32 -> integer truncates toward zero, saturates at the type's limits, and turns NaN into 0
  (``MC_CAST_FLOAT_TO_INT``; a plain C conversion would be undefined out of range);
* anything -> bool is ``x != 0`` (NaN is true, -0.0 false); bool -> anything is 0 or 1.

One loop, safe in place when the element sizes are equal. TFLM refuses int64 and uint8, and so
does this kernel.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ir import c_type, np_dtype
from microcompiler.ops.base import OpKernel, register, require, require_elementwise
from microcompiler.ops.elementwise_unary import render_map
from microcompiler.ops.quant import INT_RANGES, c_float

CAST_TYPES = ("float32", "int8", "int16", "int32", "uint32", "bool")
INTEGER_RANGES = {**INT_RANGES, "uint32": (0, 2**32 - 1)}
LIMIT_NAMES = {"int32": ("INT32_MIN", "INT32_MAX"), "uint32": ("0", "UINT32_MAX")}


def saturation_bounds(dtype: str) -> tuple[int, int, float, float]:
    """(lo, hi, lo_f, hi_f) of a float -> integer cast: a float at or below lo_f gives lo, at or
    above hi_f gives hi, and every float strictly between converts exactly toward zero."""
    lo, hi = INTEGER_RANGES[dtype]
    lo_f = float(lo)  # 0 or -2^(n-1): exact in float32
    hi_f = float(hi) if np.float32(hi) == hi else float(hi) + 1.0  # int32: 2^31, uint32: 2^32
    return lo, hi, lo_f, hi_f


def cast_expression(src: str, dst: str) -> str:
    """The C expression converting the element x from type src to type dst."""
    if dst == "bool":
        return "(uint8_t)(x != 0)"
    if src == dst:
        return "x"
    dst_c = c_type(dst)
    if src == "float32":
        lo, hi, lo_f, hi_f = saturation_bounds(dst)
        lo_c, hi_c = LIMIT_NAMES.get(dst, (str(lo), str(hi)))
        return f"MC_CAST_FLOAT_TO_INT({dst_c}, x, {lo_c}, {hi_c}, {c_float(lo_f)}, {c_float(hi_f)})"
    # Integer or bool source: to float32 rounds to nearest; to a narrower integer keeps the low
    # bits (GCC, Clang and Arm compilers define the out-of-range conversion as modulo 2^N).
    return f"({dst_c})x"


def cast_values(data: np.ndarray, src: str, dst: str) -> np.ndarray:
    """What the generated code computes, in numpy (for constant folding)."""
    if dst == "bool":
        return data != 0
    out = np_dtype(dst)
    if src == "float32" and dst != "float32":
        lo, hi, lo_f, hi_f = saturation_bounds(dst)
        x = data.astype(np.float64)
        with np.errstate(invalid="ignore"):
            clipped = np.where(np.isnan(x), 0.0, np.clip(np.trunc(np.nan_to_num(x)), lo, hi))
        return clipped.astype(np.int64).astype(out)
    if dst == "float32":
        return data.astype(np.float32)
    return data.astype(np.int64).astype(out)  # numpy wraps when narrowing


@register
class Cast(OpKernel):
    kinds = ("CAST",)
    types = CAST_TYPES
    type_notes = (
        "every pair; float -> integer truncates and saturates, NaN -> 0; integer narrowing "
        "wraps; quantization parameters ignored"
    )
    options = "in_data_type/out_data_type ignored (the tensor types decide, as in TFLM)"
    quantized_io = False

    def check(self, op, graph):
        x, y = require_elementwise(op, graph)
        for role, t in (("input", x), ("output", y)):
            require(t.dtype in CAST_TYPES, op, f"{role} type {t.dtype} is not supported ({', '.join(CAST_TYPES)})")

    def fold(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if not x.is_constant or x.dtype not in CAST_TYPES or y.dtype not in CAST_TYPES or x.size != y.size:
            return None
        return [cast_values(x.data, x.dtype, y.dtype).reshape(y.shape)]

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        return render_map(ctx, op, c_type(x.dtype), cast_expression(x.dtype, y.dtype))

    def inplace_inputs(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        return (0,) if x.nbytes == y.nbytes else ()
