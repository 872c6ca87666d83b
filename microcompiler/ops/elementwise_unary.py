"""Elementwise unary math: ABS, NEG, SQUARE, SQRT, RSQRT, EXP, LOG, SIN, COS, CEIL, FLOOR, ROUND,
LOGICAL_NOT and ZEROS_LIKE.

Each compiles to one loop over the flat tensor (safe in place: every element is read before the
element at its offset is written). Types and arithmetic follow TFLite Micro's kernels
(``elementwise.cc``, ``exp.cc``, ``ceil.cc``, ``floor.cc``, ``round.cc``, ``neg.cc``,
``zeros_like.cc``):

* float32 for all the math operators. NEG, SQUARE, ABS, SQRT, RSQRT (``1 / sqrt``), CEIL and FLOOR
  are exact IEEE operations; ROUND rounds half to even without depending on the rounding mode
  (``mc_round_half_to_even``); EXP and LOG use ``mc_expf`` and ``mc_logf``, the host C library's
  algorithms carried in the runtime (kernel_libm.h), bit for bit TFLM's on the host and the same on
  every board; SIN and COS likewise use ``mc_sinf`` and ``mc_cosf`` (glibc's optimized-routines
  sinf and cosf; docs/float.md).
  NaN and infinities propagate as in TFLM.
* ABS int8 (quantized) and int16 (quantized with zero points of 0, or unquantized: a plain
  ``abs`` where -32768 stays -32768): ``|x - zp_in|``, rescaled by ``in_scale / out_scale`` only
  when the two scales differ, plus ``zp_out``, clamped; int8 as a 256-entry table of that (ops/lut.py).
* RSQRT int8 and int16 (int16 zero points 0): TFLM's fixed-point ``1/sqrt(x - zp_in)``
  (``mc_inv_sqrt_multiplier``) rescaled by ``1 / (sqrt(in_scale) * out_scale)``; ``x == zp_in``
  gives the type's maximum. TFLM fails the inference for ``x < zp_in``; the generated code
  cannot fail and gives the maximum there too. int8 as a 256-entry table; int16 on cores with an
  FPU without the Newton iteration (``sqrt-guess``, ops/rsqrt_int.py), else TFLM's loop.
* LOGICAL_NOT on bool; ZEROS_LIKE on float32, int8, int32 and int64 (no code when its output is
  not a model output: the constant-folding pass replaces it by zeros in flash).
"""

from __future__ import annotations

import numpy as np

from microcompiler.ir import np_dtype
from microcompiler.ops.base import OpKernel, register, require, require_elementwise, require_same_shape
from microcompiler.ops.features import has_fpu
from microcompiler.ops.fixedpoint import clamp, requantize
from microcompiler.ops.lut import int8_table_from_integer, render_int8_table
from microcompiler.ops.plan import LUT, REFERENCE, KernelPlan
from microcompiler.ops.quant import INT_RANGES, quantize_multiplier
from microcompiler.ops.requantize import offset_term
from microcompiler.ops.rsqrt_int import (
    SQRT_GUESS,
    exception_slots,
    render_sqrt_guess,
    rsqrt_int8_table,
    sqrt_guess_plan,
)

# C expression of each float32 operator, in terms of the input element x.
FLOAT_EXPRESSIONS = {
    "ABS": "fabsf(x)",
    "NEG": "-x",
    "SQUARE": "x * x",
    "SQRT": "sqrtf(x)",
    "RSQRT": "1.0f / sqrtf(x)",
    "EXP": "mc_expf(x)",
    "LOG": "mc_logf(x)",
    "SIN": "mc_sinf(x)",
    "COS": "mc_cosf(x)",
    "CEIL": "ceilf(x)",
    "FLOOR": "floorf(x)",
    "ROUND": "mc_round_half_to_even(x)",
}
# The float operators whose result numpy reproduces exactly (what constant folding may compute).
_EXACT_FLOAT = {
    "ABS": np.abs,
    "NEG": np.negative,
    "SQUARE": np.square,
    "SQRT": np.sqrt,
    "CEIL": np.ceil,
    "FLOOR": np.floor,
    "ROUND": np.round,  # np.round rounds half to even, as TFLM's ROUND
    "RSQRT": lambda x: np.float32(1.0) / np.sqrt(x),
}
# TFLM's RSQRT keeps 1/sqrt(x) in Q(31 - 20) between its two multiplications.
RSQRT_HEADROOM_SHIFT = 20


def require_same_type(op, x, y, allowed: tuple[str, ...]) -> None:
    require(x.dtype in allowed, op, f"input type {x.dtype} is not supported ({', '.join(allowed)})")
    require(y.dtype == x.dtype, op, f"output type {y.dtype} differs from input type {x.dtype}")


def render_map(ctx, op, in_ctype: str, expr: str) -> str:
    """The loop ``output[i] = expr(x = input[i])``."""
    x = ctx.tensor(op.inputs[0])
    return ctx.render(
        "elementwise_unary_map.c.j2",
        size=x.size,
        in_ctype=in_ctype,
        expr=expr,
        input=ctx.arg(op.inputs[0]),
        output=ctx.arg(op.outputs[0]),
    )


def _fold_float(op, graph, fn) -> list[np.ndarray] | None:
    x = graph.tensors[op.inputs[0]]
    if not x.is_constant or x.dtype != "float32":
        return None
    with np.errstate(all="ignore"):
        value = fn(x.data.astype(np.float32)).astype(np.float32)
    return [value.reshape(graph.tensors[op.outputs[0]].shape)]


# TFLM's exp.cc and round.cc check HaveSameShapes; its other float kernels only the element count.
SAME_SHAPE_KINDS = ("EXP", "ROUND", "CEIL")  # TFLM's prepare checks the shapes of these


@register
class FloatMath(OpKernel):
    """The operators TFLM runs on float32 only."""

    kinds = ("NEG", "SQUARE", "SQRT", "EXP", "LOG", "SIN", "COS", "CEIL", "FLOOR", "ROUND")
    kind_refusals = {
        k: ("an output shape other than the input's (the prepare step compares each dimension)",)
        for k in ("EXP", "ROUND", "CEIL")
    }
    types = ("float32",)
    quantized_io = False  # no integer types: check() names the type problem, not the quantization

    def describe(self, kind):
        info = super().describe(kind)
        info["type_notes"] = {
            "EXP": "the C library's expf algorithm (mc_expf), identical on every target",
            "ROUND": "half to even",
            "LOG": "the C library's logf algorithm (mc_logf)",
            "SIN": "the C library's sinf algorithm (mc_sinf), identical on every target",
            "COS": "the C library's cosf algorithm (mc_cosf), identical on every target",
        }.get(kind, "")
        return info

    def check(self, op, graph):
        x, y = require_elementwise(op, graph)
        require_same_type(op, x, y, self.types)
        if op.kind in SAME_SHAPE_KINDS:
            require_same_shape(op, x, y)

    def fold(self, op, graph):
        fn = _EXACT_FLOAT.get(op.kind)
        return _fold_float(op, graph, fn) if fn is not None else None

    def emit(self, op, graph, ctx):
        return render_map(ctx, op, "float", FLOAT_EXPRESSIONS[op.kind])

    def inplace_inputs(self, op, graph):
        return (0,)


def _quantized(t) -> bool:
    return t.quant is not None


@register
class Abs(OpKernel):
    kinds = ("ABS",)
    types = ("float32", "int8", "int16")
    type_notes = "int8 quantized; int16 quantized with zero points 0, or unquantized"
    quantized_io = False  # int16 ABS runs unquantized too; check() asks int8 for quantization

    def check(self, op, graph):
        x, y = require_elementwise(op, graph)
        require_same_type(op, x, y, self.types)
        if x.dtype == "int8" or (x.dtype == "int16" and _quantized(x)):
            require(_quantized(x) and _quantized(y), op, f"{x.dtype} input and output need quantization parameters")
            if x.dtype == "int16":
                require(
                    x.quant.zero_point[0] == 0 and y.quant.zero_point[0] == 0,
                    op,
                    "int16 input and output zero points must be 0",
                )

    def fold(self, op, graph):
        return _fold_float(op, graph, np.abs)

    @staticmethod
    def _multiplier(x, y) -> tuple[int, int] | None:
        """The rescaling multiplier, None when the scales are equal."""
        in_scale, out_scale = np.float32(x.quant.scale[0]), np.float32(y.quant.scale[0])
        return quantize_multiplier(float(in_scale) / float(out_scale)) if in_scale != out_scale else None

    def int8_table(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if x.dtype != "int8":
            return None
        in_zp, out_zp, multiplier = x.quant.zero_point[0], y.quant.zero_point[0], self._multiplier(x, y)

        def abs_rescaled(v: int) -> int:
            magnitude = abs(v - in_zp)
            return clamp((requantize(magnitude, *multiplier) if multiplier else magnitude) + out_zp, -128, 127)

        return int8_table_from_integer(abs_rescaled)

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None):
        return KernelPlan(LUT if graph.tensors[op.inputs[0]].dtype == "int8" else REFERENCE)

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        if x.dtype == "float32":
            return render_map(ctx, op, "float", FLOAT_EXPRESSIONS["ABS"])
        if not _quantized(x):  # int16 without quantization: std::abs, which keeps -32768
            return render_map(ctx, op, "int16_t", "(int16_t)(x < 0 && x != INT16_MIN ? -x : x)")
        if x.dtype == "int8":
            return render_int8_table(
                ctx,
                self.int8_table(op, graph),
                what="rescaled absolute value",
                size=x.size,
                input=ctx.arg(op.inputs[0]),
                output=ctx.arg(op.outputs[0]),
            )
        in_zp, out_zp = x.quant.zero_point[0], y.quant.zero_point[0]
        multiplier = self._multiplier(x, y)
        type_min, type_max = INT_RANGES[x.dtype]
        return ctx.render(
            "elementwise_unary_abs_int.c.j2",
            size=x.size,
            ctype=f"{x.dtype}_t",
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            input_offset=offset_term(-in_zp),
            output_offset=offset_term(out_zp),
            multiplier=multiplier,
            type_min=type_min,
            type_max=type_max,
        )

    def inplace_inputs(self, op, graph):
        return (0,)


@register
class Rsqrt(OpKernel):
    kinds = ("RSQRT",)
    types = ("float32", "int8", "int16")
    type_notes = "int8/int16 quantized, int16 zero points 0; inputs below the zero point give the maximum"
    fast = {"fpu": "int16 (sqrt-guess: 1/sqrt from a float guess corrected exactly, no Newton iteration)"}

    def check(self, op, graph):
        x, y = require_elementwise(op, graph)
        require_same_type(op, x, y, self.types)
        if x.dtype == "int16":
            require(
                x.quant.zero_point[0] == 0 and y.quant.zero_point[0] == 0,
                op,
                "int16 input and output zero points must be 0",
            )

    def fold(self, op, graph):
        return _fold_float(op, graph, _EXACT_FLOAT["RSQRT"])

    @staticmethod
    def _rescaling(x, y) -> tuple[int, int]:
        """TFLM's output rescaling 1 / (sqrt(input_scale) * output_scale), in double precision."""
        real = 1.0 / (np.sqrt(float(np.float32(x.quant.scale[0]))) * float(np.float32(y.quant.scale[0])))
        return quantize_multiplier(float(real))

    def int8_table(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if x.dtype != "int8":
            return None
        return rsqrt_int8_table(x.quant.zero_point[0], *self._rescaling(x, y), y.quant.zero_point[0])

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if x.dtype == "int8":
            return KernelPlan(LUT)
        if x.dtype == "int16" and has_fpu(features) and exception_slots(*self._rescaling(x, y)) is not None:
            return sqrt_guess_plan()
        return KernelPlan(REFERENCE)

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        if x.dtype == "float32":
            return render_map(ctx, op, "float", FLOAT_EXPRESSIONS["RSQRT"])
        values = dict(size=x.size, input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]))
        if x.dtype == "int8":
            return render_int8_table(ctx, self.int8_table(op, graph), what="rsqrt", **values)
        multiplier, shift = self._rescaling(x, y)
        if not ctx.reference_only and self.kernel_plan(op, graph, ctx.features).is_(SQRT_GUESS):
            return render_sqrt_guess(ctx, multiplier=multiplier, shift=shift, **values)
        in_zp, out_zp = x.quant.zero_point[0], y.quant.zero_point[0]
        type_min, type_max = INT_RANGES[x.dtype]
        return ctx.render(
            "elementwise_unary_rsqrt_int.c.j2",
            ctype=f"{x.dtype}_t",
            input_offset=offset_term(-in_zp),
            output_offset=offset_term(out_zp),
            multiplier=multiplier,
            shift=shift - RSQRT_HEADROOM_SHIFT,
            headroom=RSQRT_HEADROOM_SHIFT,
            type_min=type_min,
            type_max=type_max,
            **values,
        )

    def inplace_inputs(self, op, graph):
        return (0,)


@register
class LogicalNot(OpKernel):
    kinds = ("LOGICAL_NOT",)
    types = ("bool",)
    quantized_io = False

    def check(self, op, graph):
        x, y = require_elementwise(op, graph)
        require_same_type(op, x, y, self.types)

    def fold(self, op, graph):
        x = graph.tensors[op.inputs[0]]
        if not x.is_constant:
            return None
        return [np.logical_not(x.data).reshape(graph.tensors[op.outputs[0]].shape)]

    def emit(self, op, graph, ctx):
        return render_map(ctx, op, "uint8_t", "(uint8_t)!x")

    def inplace_inputs(self, op, graph):
        return (0,)


@register
class ZerosLike(OpKernel):
    kinds = ("ZEROS_LIKE",)
    types = ("float32", "int8", "int32", "int64")
    type_notes = "folded to zeros in flash unless it writes a model output"
    quantized_io = False  # TFLM writes zeros whatever the quantization

    def check(self, op, graph):
        x, y = require_elementwise(op, graph)
        require_same_type(op, x, y, self.types)

    def fold(self, op, graph):
        # The result depends only on the (static) shape.
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if x.dtype not in self.types or y.dtype != x.dtype or y.size != x.size:
            return None  # check() reports it
        return [np.zeros(y.shape, dtype=np_dtype(y.dtype))]

    def emit(self, op, graph, ctx):
        y = ctx.tensor(op.outputs[0])
        return ctx.render("elementwise_unary_zeros.c.j2", output=ctx.arg(op.outputs[0]), nbytes=y.nbytes)
