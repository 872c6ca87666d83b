"""ADD and MUL: int8, int16 (zero points 0) and float32, with numpy-style broadcasting up to 6D.

The integer arithmetic follows TFLite Micro's reference kernels:

* ADD rescales both inputs to a common scale with ``left_shift`` bits of headroom (20 for int8,
  15 for int16), adds, and rescales to the output. TFLM Micro always takes this general path for
  int16, whatever the model's ``pot_scale_int16`` option says.
* MUL multiplies the offset inputs in int32 and requantizes by in1_scale * in2_scale / out_scale.

The element loop reads both inputs of an index before writing that index, so the output may share
memory with an input of the same shape (in-place).
"""
from __future__ import annotations

import numpy as np

from microcompiler.ops import fast
from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.quant import activation_range, c_float, float_activation_range, quantize_multiplier

_ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")
_MAX_RANK = 6  # TFLM's broadcast kernels extend shapes to 6D


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """numpy broadcasting of two shapes, or None when they are incompatible."""
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            return None
        out.append(y if x == 1 else x)
    return tuple(out)


def broadcast_loops(out_shape, in_shapes):
    """Loop nest that walks the output in order, with each input's stride per loop.

    Output dimensions of extent 1 are dropped and neighbouring dimensions that every input either
    reads fully or broadcasts in the same way are merged, so a plain elementwise op is one loop and
    [1,4,4,8] + [8] is two. Returns (loops, input index expressions, output index expression),
    loops being (variable, trip count) pairs.
    """
    rank = len(out_shape)
    shapes = [(1,) * (rank - len(s)) + tuple(s) for s in in_shapes]
    dims: list[tuple[int, tuple[bool, ...]]] = []  # (extent, per input: is it broadcast here)
    for d, n in enumerate(out_shape):
        if n == 1:
            continue
        flags = tuple(s[d] == 1 for s in shapes)
        if dims and dims[-1][1] == flags:
            dims[-1] = (dims[-1][0] * n, flags)
        else:
            dims.append((n, flags))
    if not dims:
        dims = [(1, tuple(False for _ in shapes))]
    names = ["i"] if len(dims) == 1 else [f"i{k}" for k in range(len(dims))]

    def index(strides):
        terms = [v if s == 1 else f"{v} * {s}" for v, s in zip(names, strides) if s]
        return " + ".join(terms) or "0"

    def strides_of(broadcast):
        strides, step = [], 1
        for (n, _), b in zip(reversed(dims), reversed(broadcast)):
            strides.append(0 if b else step)
            step *= 1 if b else n
        return strides[::-1]

    in_index = [index(strides_of([f[j] for _, f in dims])) for j in range(len(shapes))]
    out_index = index(strides_of([False] * len(dims)))
    return list(zip(names, [n for n, _ in dims])), in_index, out_index


class _Elementwise(OpKernel):
    """What ADD and MUL share: type and shape checks, broadcasting, activation clamp."""

    def check(self, op, graph):
        require(len(op.inputs) == 2 and len(op.outputs) == 1, op, "expects two inputs and one output")
        a, b = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
        y = graph.tensors[op.outputs[0]]
        require(op.options.get("activation", "NONE") in _ACTIVATIONS, op,
                f"fused activation {op.options.get('activation')} is not supported")
        dtypes = (a.dtype, b.dtype, y.dtype)
        require(a.dtype == b.dtype == y.dtype and y.dtype in ("int8", "int16", "float32"), op,
                f"type combination input1/input2/output {dtypes} is not supported "
                "(all int8, all int16 or all float32)")
        shape = broadcast_shape(a.shape, b.shape)
        require(shape is not None, op, f"input shapes {list(a.shape)} and {list(b.shape)} do not broadcast")
        require(len(shape) <= _MAX_RANK, op, f"broadcasting is supported up to {_MAX_RANK}D, got {len(shape)}D")
        require(tuple(y.shape) == shape, op,
                f"output shape {list(y.shape)} is not the broadcast shape {list(shape)} of the inputs")
        if y.dtype != "float32":
            for t, what in ((a, "input1"), (b, "input2"), (y, "output")):
                require(t.quant is not None and not t.quant.per_channel, op,
                        f"{what} needs per-tensor quantization")
            if y.dtype == "int16":
                require(a.quant.zero_point[0] == b.quant.zero_point[0] == y.quant.zero_point[0] == 0, op,
                        "int16 tensors must have zero point 0")

    def macs(self, op, graph):
        return graph.tensors[op.outputs[0]].size

    def inplace_inputs(self, op, graph):
        """An input with the output's shape (not broadcast): element i of both inputs is read
        before element i of the output is written."""
        y = graph.tensors[op.outputs[0]]
        rank = len(y.shape)
        return tuple(k for k, i in enumerate(op.inputs)
                     if (1,) * (rank - len(graph.tensors[i].shape)) + tuple(graph.tensors[i].shape) == tuple(y.shape)
                     and graph.tensors[i].dtype == y.dtype)

    def emit(self, op, graph, ctx):
        a, b, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
        loops, (idx1, idx2), out_idx = broadcast_loops(y.shape, [a.shape, b.shape])
        values = dict(op=self.kinds[0].lower(), loops=loops, idx1=idx1, idx2=idx2, out_idx=out_idx,
                      input1=ctx.arg(op.inputs[0]), input2=ctx.arg(op.inputs[1]),
                      output=ctx.arg(op.outputs[0]))
        activation = op.options.get("activation", "NONE")
        if y.dtype == "float32":
            lo, hi = float_activation_range(activation)
            return ctx.render("add_mul_float.c.j2", act_min=c_float(lo), act_max=c_float(hi), **values)
        lo, hi = activation_range(activation, y)
        return ctx.render("add_mul_int.c.j2", ctype="int16_t" if y.dtype == "int16" else "int8_t",
                          act_min=lo, act_max=hi, input1_offset=-a.quant.zero_point[0],
                          input2_offset=-b.quant.zero_point[0], output_offset=y.quant.zero_point[0],
                          **self.requantization(op, a, b, y), **values)

    def requantization(self, op, a, b, y) -> dict:
        raise NotImplementedError


@register
class Add(_Elementwise):
    kinds = ("ADD",)
    inputs = (2, 2)
    options = "fused activation (NONE, RELU, RELU6, RELU_N1_TO_1); broadcasting up to 6D"
    fast = {"dsp": "int8 (SMMLAR requantization)"}

    def check(self, op, graph):
        super().check(op, graph)
        y = graph.tensors[op.outputs[0]]
        if y.dtype != "float32":
            a, b = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
            real = self._reals(a, b, y)[2]
            require(0.0 < real < 1.0, op,
                    f"output rescale {real:g} is outside (0, 1): the output scale is too small for the inputs'")

    def variant(self, op, graph):
        a, b, y = (graph.tensors[i] for i in (op.inputs[0], op.inputs[1], op.outputs[0]))
        if y.dtype == "int8" and self.requantization(op, a, b, y)["fast"] is not None:
            return {"variant": "smmlar", "scratch_bytes": 0}
        return {"variant": "reference", "scratch_bytes": 0}

    @staticmethod
    def _reals(a, b, y):
        # TFLM (add_common.cc): float32 scales widened to double, max input scale doubled.
        left_shift = 15 if y.dtype == "int16" else 20
        s1, s2 = float(np.float32(a.quant.scale[0])), float(np.float32(b.quant.scale[0]))
        twice_max = 2.0 * max(s1, s2)
        return (s1 / twice_max, s2 / twice_max,
                twice_max / ((1 << left_shift) * float(np.float32(y.quant.scale[0]))), left_shift)

    def requantization(self, op, a, b, y):
        r1, r2, ro, left_shift = self._reals(a, b, y)
        q1, q2, qo = quantize_multiplier(r1), quantize_multiplier(r2), quantize_multiplier(ro)
        return dict(left_shift=left_shift, input1_q=q1, input2_q=q2, output_q=qo,
                    fast=self._fast_exprs(y, left_shift, q1, q2, qo))

    @staticmethod
    def _fast_exprs(y, left_shift, q1, q2, qo):
        """C expressions of the int8 ADD with mc_requant_fast, or None when it does not apply.

        |x + offset| <= 255, so (x + offset) << 21 < 2^29 and the sum of the rescaled inputs < 2^29:
        every operand of the fast requantization is in range, with no further proof needed. A shift
        of 0 (the input with the larger scale has the multiplier 1/2 exactly) needs no second rounding."""
        if y.dtype != "int8" or not all(m > 0 and -fast.MAX_FAST_SHIFT <= s <= 0 for m, s in (q1, q2, qo)):
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
        return (term("v1", q1, 0, True), term("v2", q2, 0, True), term("(x1 + x2)", qo, y_zp, False))


@register
class Mul(_Elementwise):
    kinds = ("MUL",)
    inputs = (2, 2)
    options = "fused activation (NONE, RELU, RELU6, RELU_N1_TO_1); broadcasting up to 6D"

    def requantization(self, op, a, b, y):
        # TFLM (mul_common.cc): product of the input scales over the output scale, in double.
        real = (float(np.float32(a.quant.scale[0])) * float(np.float32(b.quant.scale[0]))
                / float(np.float32(y.quant.scale[0])))
        return dict(output_q=quantize_multiplier(real), fast=None)
