"""ADD and MUL: int8, int16 (zero points 0), int32 and float32, with numpy-style broadcasting up to 6D.

The integer arithmetic follows TFLite Micro's reference kernels:

* ADD rescales both inputs to a common scale with ``left_shift`` bits of headroom (20 for int8,
  15 for int16), adds, and rescales to the output. TFLM Micro always takes this general path for
  int16, whatever the model's ``pot_scale_int16`` option says.
* MUL multiplies the offset inputs in int32 and requantizes by in1_scale * in2_scale / out_scale.
* int32 (unquantized) adds or multiplies with wrap-around, as TFLM's int32 arithmetic; TFLM's MUL
  (and SUB, ops/sub.py) clamp to the fused activation, its ADD ignores it.
* float32 clamps with TFLM's std::min/std::max semantics (NaN stays NaN, infinities clamp).

The element loop reads both inputs of an index before writing that index, so the output may share
memory with an input of the same shape (in-place).
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops import fast
from microcompiler.ops.base import OpKernel, register, require, require_like_tflm
from microcompiler.ops.binary_common import float_activation, wrapping

# broadcast_shape/broadcast_loops now live in ops/broadcast.py; re-exported for existing importers.
from microcompiler.ops.broadcast import (
    broadcast_loops,
    broadcast_shape,  # noqa: F401
    require_broadcast,
    unbroadcast_inputs,
)
from microcompiler.ops.fast import mve as fast_mve
from microcompiler.ops.fast.add_affine import AFFINE, affine_add, emit_affine
from microcompiler.ops.features import has_mve
from microcompiler.ops.plan import ISA_MVE, REFERENCE, KernelPlan, Variant
from microcompiler.ops.quant import (
    activation_range,
    c_float,
    float_activation_range,
    mul_multiplier,
    quantize_multiplier,
)

SMMLAR = Variant("smmlar")  # int8/int16 requantization by SMMLAR (mc_requant_fast), where it equals TFLM's

_ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")


class _Elementwise(OpKernel):
    """What ADD, SUB and MUL share: type and shape checks, broadcasting, activation clamp."""

    inputs = (2, 2)
    types = ("int8", "int16", "int32", "float32")
    type_notes = "int16 with zero points 0; int32 unquantized, wrapping on overflow as TFLM's int32 arithmetic"
    symbol = "+"  # the C operator combining the two (rescaled) inputs
    int32_activation = True  # whether the int32 path applies the fused activation (TFLM's ADD does not)

    def check(self, op, graph):
        require(len(op.inputs) == 2 and len(op.outputs) == 1, op, "expects two inputs and one output")
        a, b = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
        y = graph.tensors[op.outputs[0]]
        require(
            op.options.get("activation", "NONE") in _ACTIVATIONS,
            op,
            f"fused activation {op.options.get('activation')} is not supported",
        )
        dtypes = (a.dtype, b.dtype, y.dtype)
        require(
            a.dtype == b.dtype == y.dtype and y.dtype in self.types,
            op,
            f"type combination input1/input2/output {dtypes} is not supported (all {', all '.join(self.types)})",
        )
        require_broadcast(op, graph)
        if y.dtype in ("int8", "int16"):
            for t, what in ((a, "input1"), (b, "input2"), (y, "output")):
                require(t.quant is not None and not t.quant.per_channel, op, f"{what} needs per-tensor quantization")
            if y.dtype == "int16":
                require(
                    a.quant.zero_point[0] == b.quant.zero_point[0] == y.quant.zero_point[0] == 0,
                    op,
                    "int16 tensors must have zero point 0",
                )

    def macs(self, op, graph):
        return graph.tensors[op.outputs[0]].size

    def inplace_inputs(self, op, graph):
        """An input with the output's shape (not broadcast): element i of both inputs is read
        before element i of the output is written."""
        return unbroadcast_inputs(op, graph)

    def fold(self, op, graph):
        """int32 and float32 results of constant inputs, computed as the generated code does."""
        a, b, y = (graph.tensors[i] for i in (op.inputs[0], op.inputs[1], op.outputs[0]))
        if (
            not (a.is_constant and b.is_constant)
            or y.dtype not in ("int32", "float32")
            or broadcast_shape(a.shape, b.shape) != tuple(y.shape)
        ):
            return None
        fn = {"+": np.add, "-": np.subtract, "*": np.multiply}[self.symbol]
        if y.dtype == "float32":
            with np.errstate(all="ignore"):
                value = float_activation(op, fn(a.data.astype(np.float32), b.data.astype(np.float32)))
        else:
            value = wrapping(a.data, b.data, fn)
            lo, hi = int32_activation_range(op.options.get("activation", "NONE") if self.int32_activation else "NONE")
            value = np.clip(value, -(2**31) if lo is None else lo, 2**31 - 1 if hi is None else hi).astype(np.int32)
        return [np.ascontiguousarray(np.broadcast_to(value, y.shape))]

    def emit(self, op, graph, ctx):
        a, b, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
        loops, (idx1, idx2), out_idx = broadcast_loops(y.shape, [a.shape, b.shape])
        values = dict(
            op=self.kinds[0].lower(),
            symbol=self.symbol,
            loops=loops,
            idx1=idx1,
            idx2=idx2,
            out_idx=out_idx,
            input1=ctx.arg(op.inputs[0]),
            input2=ctx.arg(op.inputs[1]),
            output=ctx.arg(op.outputs[0]),
        )
        activation = op.options.get("activation", "NONE")
        if y.dtype == "float32":
            lo, hi = float_activation_range(activation)
            return ctx.render("add_mul_float.c.j2", act_min=c_float(lo), act_max=c_float(hi), **values)
        if y.dtype == "int32":
            lo, hi = int32_activation_range(activation if self.int32_activation else "NONE")
            return ctx.render("add_mul_int32.c.j2", act_min=lo, act_max=hi, **values)
        lo, hi = activation_range(activation, y)
        requantization = self.requantization(op, a, b, y)
        if ctx.reference_only:  # TFLM's arithmetic with mc_requantize, not the SMMLAR form
            requantization["fast"] = None
            ctx.plan = KernelPlan(REFERENCE, scratch_bytes=0)
        return ctx.render(
            "add_mul_int.c.j2",
            ctype="int16_t" if y.dtype == "int16" else "int8_t",
            act_min=lo,
            act_max=hi,
            input1_offset=-a.quant.zero_point[0],
            input2_offset=-b.quant.zero_point[0],
            output_offset=y.quant.zero_point[0],
            **requantization,
            **values,
        )

    def requantization(self, op, a, b, y) -> dict:
        raise NotImplementedError


def int32_activation_range(activation: str) -> tuple[int | None, int | None]:
    """Clamp bounds of a fused activation on unquantized int32 values (TFLM's
    CalculateActivationRange<int32_t>); None where the bound is the type's own."""
    return {"NONE": (None, None), "RELU": (0, None), "RELU6": (0, 6), "RELU_N1_TO_1": (-1, 1)}[activation]


@register
class Add(_Elementwise):
    kinds = ("ADD",)
    int32_activation = False  # TFLM's int32 ADD clamps to the whole int32 range, whatever the option
    tflm_refusals = (
        "int8/int16: an output rescale 2 * max(input scales) / (2^left_shift * output scale) of 1 or "
        "more (an output scale too small for the inputs'): QuantizeMultiplierSmallerThanOneExp aborts",
    )
    options = "fused activation (NONE, RELU, RELU6, RELU_N1_TO_1); broadcasting up to 6D"
    fast = {
        "dsp": "int8: one affine function of the two inputs (2 MLA + SSAT per element) where it equals TFLM on all 65,536 input pairs, else SMMLAR requantization; int16: SMMLAR requantization",
        "mve": "int8, inputs of the output's shape (4 lanes, VQRDMULH)",
    }

    def emit(self, op, graph, ctx):
        a, b, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
        if (
            not ctx.reference_only
            and has_mve(ctx.features)
            and y.dtype == "int8"
            and tuple(a.shape) == tuple(b.shape) == tuple(y.shape)
        ):
            q = self.requantization(op, a, b, y)
            if all(m >= 0 and s <= 0 for m, s in (q["input1_q"], q["input2_q"], q["output_q"])):
                ctx.plan = KernelPlan.of(fast_mve.MVE_LANES, ISA_MVE, scratch_bytes=0, lanes=4)
                return fast_mve.emit_add(
                    ctx,
                    q,
                    self.symbol,
                    a,
                    b,
                    y,
                    activation_range(op.options.get("activation", "NONE"), y),
                    ctx.arg(op.inputs[0]),
                    ctx.arg(op.inputs[1]),
                    ctx.arg(op.outputs[0]),
                )
        plan = None if ctx.reference_only else self.affine(op, a, b, y)
        if plan is not None:
            ctx.plan = KernelPlan(AFFINE, scratch_bytes=0)
            loops, (idx1, idx2), out_idx = broadcast_loops(y.shape, [a.shape, b.shape])
            return emit_affine(
                ctx,
                plan,
                self.kinds[0].lower(),
                activation_range(op.options.get("activation", "NONE"), y),
                loops,
                idx1,
                idx2,
                out_idx,
                ctx.arg(op.inputs[0]),
                ctx.arg(op.inputs[1]),
                ctx.arg(op.outputs[0]),
            )
        return super().emit(op, graph, ctx)

    def affine(self, op, a, b, y) -> dict | None:
        """The int8 affine kernel's weights, bias and shift (ops/fast/add_affine.py), or None."""
        if y.dtype != "int8":
            return None
        zero_points = (int(a.quant.zero_point[0]), int(b.quant.zero_point[0]), int(y.quant.zero_point[0]))
        return affine_add(
            self.requantization(op, a, b, y),
            zero_points,
            activation_range(op.options.get("activation", "NONE"), y),
            self.symbol == "-",
        )

    def check(self, op, graph):
        super().check(op, graph)
        y = graph.tensors[op.outputs[0]]
        if y.dtype in ("int8", "int16"):
            a, b = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
            real = self._reals(a, b, y)[2]
            require_like_tflm(
                0.0 < real < 1.0,
                op,
                f"output rescale {real:g} is outside (0, 1): the output scale is "
                "too small for the inputs' (TFLM's QuantizeMultiplierSmallerThanOneExp "
                "check fails)",
            )

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None):
        a, b, y = (graph.tensors[i] for i in (op.inputs[0], op.inputs[1], op.outputs[0]))
        if self.affine(op, a, b, y) is not None:
            return KernelPlan(AFFINE, scratch_bytes=0)
        if y.dtype in ("int8", "int16") and self.requantization(op, a, b, y)["fast"] is not None:
            return KernelPlan(SMMLAR, scratch_bytes=0)
        return KernelPlan(REFERENCE, scratch_bytes=0)

    @staticmethod
    def _reals(a, b, y):
        """(input1, input2, output) real multipliers and the left shift, as TFLM prepares them."""
        # TFLM (add_common.cc): float32 scales widened to double, max input scale doubled.
        left_shift = 15 if y.dtype == "int16" else 20
        s1, s2 = float(np.float32(a.quant.scale[0])), float(np.float32(b.quant.scale[0]))
        twice_max = 2.0 * max(s1, s2)
        return (
            s1 / twice_max,
            s2 / twice_max,
            twice_max / ((1 << left_shift) * float(np.float32(y.quant.scale[0]))),
            left_shift,
        )

    def requantization(self, op, a, b, y):
        r1, r2, ro, left_shift = self._reals(a, b, y)
        q1, q2, qo = quantize_multiplier(r1), quantize_multiplier(r2), quantize_multiplier(ro)
        return dict(
            left_shift=left_shift,
            input1_q=q1,
            input2_q=q2,
            output_q=qo,
            fast=self._fast_exprs(y, left_shift, q1, q2, qo),
        )

    def _fast_exprs(self, y, left_shift, q1, q2, qo):
        """C expressions of the int8 and int16 ADD with mc_requant_fast, or None when it does not apply.

        int8: |x + offset| <= 255, so (x + offset) << 21 < 2^29 and the sum (or difference) of the
        rescaled inputs < 2^29. int16 (zero points 0): -2^15 <= x < 2^15, so x << 16 (the doubled
        left-shifted input) fits int32, each rescaled input (multiplier <= 1/2) lies in [-2^29, 2^29)
        and their sum (or difference) doubled in [-2^31, 2^31): every operand of the fast
        requantization is in range, with no further proof needed. A shift of 0 (the input with the
        larger scale has the multiplier 1/2 exactly) needs no second rounding."""
        if y.dtype not in ("int8", "int16") or not all(
            m > 0 and -fast.MAX_FAST_SHIFT <= s <= 0 for m, s in (q1, q2, qo)
        ):
            return None

        def term(v, q, zp, pre_shifted):
            m, shift = q
            doubled = f"(int32_t)((uint32_t){v} << {left_shift + 1 if pre_shifted else 1})"
            if shift == 0:
                return f"mc_smmlar({doubled}, {m}, {zp})"
            r = -shift
            c = (1 << (r - 1)) + zp * (1 << r)
            return f"(mc_smmlar({doubled}, {m}, {c} + ({v} >> 31)) >> {r})"

        y_zp = int(y.quant.zero_point[0])
        return (term("v1", q1, 0, True), term("v2", q2, 0, True), term(f"(x1 {self.symbol} x2)", qo, y_zp, False))


@register
class Mul(_Elementwise):
    kinds = ("MUL",)
    symbol = "*"
    options = "fused activation (NONE, RELU, RELU6, RELU_N1_TO_1); broadcasting up to 6D"

    def requantization(self, op, a, b, y):
        return dict(output_q=mul_multiplier(a, b, y), fast=None)
