"""CONV_2D: int8, int16x8 and float32; per-tensor or per-channel weights; grouped convolution.

Semantics follow TFLite Micro's reference kernels: TFLM's padding (``ComputePaddingHeightWidth``),
taps outside the image are skipped (zero padding in the real domain), per-channel requantization
with multipliers computed as input_scale * filter_scale / output_scale in double precision.

The accumulator follows TFLM's: int32 for int8; for int16 an int32 bias means an int32 accumulator
and the 32-bit requantize, while an int64 bias or none means int64 and the 64-bit requantize
(checked against the oracle). Where the int32 accumulator could overflow, the generated code sums
in int64 and wraps to int32 at the end: what TFLM's int32 arithmetic does, without C undefined
behaviour.

The helpers here (geometry, quantization checks, requantization constants) are shared with
DEPTHWISE_CONV_2D.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from microcompiler.ops import fast, fast_conv, fast_mve
from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.quant import (activation_range, c_float, conv_multipliers, float_activation_range)

ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")
INT32_MAX = 2**31 - 1


@dataclass
class ConvGeometry:
    batches: int
    in_h: int
    in_w: int
    in_c: int
    out_h: int
    out_w: int
    out_c: int
    k_h: int
    k_w: int
    stride_h: int
    stride_w: int
    dil_h: int
    dil_w: int
    pad_h: int  # top padding (TFLM puts the odd extra row at the bottom)
    pad_w: int  # left padding

    def bounds_check(self, axis: str) -> str:
        """The C condition under which a tap row ("y") or column ("x") falls outside the image; ""
        when no tap can (the window always fits, so the code needs no test)."""
        var, out, size, k, stride, dil, pad = (
            ("iy", self.out_h, self.in_h, self.k_h, self.stride_h, self.dil_h, self.pad_h) if axis == "y" else
            ("ix", self.out_w, self.in_w, self.k_w, self.stride_w, self.dil_w, self.pad_w))
        last = (out - 1) * stride + (k - 1) * dil - pad
        conds = ([f"{var} < 0"] if pad > 0 else []) + ([f"{var} >= {size}"] if last >= size else [])
        return " || ".join(conds)

    def tap_expr(self, axis: str) -> str:
        """C expression of the input row ("y") or column ("x") a tap reads."""
        o, k, stride, dil, pad = (("oy", "ky", self.stride_h, self.dil_h, self.pad_h) if axis == "y" else
                                  ("ox", "kx", self.stride_w, self.dil_w, self.pad_w))
        expr = o if stride == 1 else f"{o} * {stride}"
        if pad:
            expr += f" - {pad}"
        return expr + (f" + {k}" if dil == 1 else f" + {k} * {dil}")

    def describe(self) -> str:
        return (f"input {self.batches}x{self.in_h}x{self.in_w}x{self.in_c} -> output "
                f"{self.batches}x{self.out_h}x{self.out_w}x{self.out_c}; kernel {self.k_h}x{self.k_w}, "
                f"stride {self.stride_h}x{self.stride_w}, dilation {self.dil_h}x{self.dil_w}, "
                f"padding top {self.pad_h} left {self.pad_w}")

    def values(self) -> dict:
        return dict(g=self, check_y=self.bounds_check("y"), check_x=self.bounds_check("x"),
                    iy_expr=self.tap_expr("y"), ix_expr=self.tap_expr("x"), describe=self.describe())

    @property
    def always_inside(self) -> bool:
        return not (self.bounds_check("y") or self.bounds_check("x"))


def _out_size(padding: str, size: int, k: int, stride: int, dil: int) -> int:
    eff = (k - 1) * dil + 1
    return (size + stride - 1) // stride if padding == "SAME" else (size + stride - eff) // stride


def _pad(size: int, k: int, stride: int, dil: int, out: int) -> int:
    total = (out - 1) * stride + (k - 1) * dil + 1 - size
    return max(total, 0) // 2


def check_common(op, graph, weight_channel_axis: int) -> None:
    """Checks shared by CONV_2D and DEPTHWISE_CONV_2D (shapes, options, quantization, bias)."""
    o = op.options
    require(len(op.inputs) in (2, 3) and len(op.outputs) == 1, op,
            "expects input, weights, optional bias and one output")
    x, w, y = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
    require(len(x.shape) == 4 and len(w.shape) == 4 and len(y.shape) == 4, op,
            f"input, weights and output must be 4-D (NHWC); got {list(x.shape)}, {list(w.shape)}, "
            f"{list(y.shape)}")
    require(o["padding"] in ("SAME", "VALID"), op, f"padding {o['padding']} is not supported")
    require(o["activation"] in ACTIVATIONS, op, f"fused activation {o['activation']} is not supported")
    require(o["stride_h"] >= 1 and o["stride_w"] >= 1, op,
            f"stride {o['stride_h']}x{o['stride_w']} is not supported (must be >= 1)")
    require(o["dilation_h"] >= 1 and o["dilation_w"] >= 1, op,
            f"dilation {o['dilation_h']}x{o['dilation_w']} is not supported (must be >= 1)")
    require(min(x.shape) >= 1 and min(w.shape) >= 1, op, "empty tensors are not supported")
    combo = (x.dtype, w.dtype, y.dtype)
    require(combo in {("int8", "int8", "int8"), ("int16", "int8", "int16"),
                      ("float32", "float32", "float32")}, op,
            f"type combination input/weights/output {combo} is not supported (int8, int16x8, float32)")
    out_c = w.shape[weight_channel_axis]
    require(y.shape[3] == out_c, op, f"output has {y.shape[3]} channels but the weights make {out_c}")
    require(y.shape[0] == x.shape[0], op, "input and output batch sizes differ")
    for axis, name, k, s, d in ((1, "height", w.shape[1], o["stride_h"], o["dilation_h"]),
                                (2, "width", w.shape[2], o["stride_w"], o["dilation_w"])):
        want = _out_size(o["padding"], x.shape[axis], k, s, d)
        require(want >= 1, op, f"the kernel (dilated) is larger than the input {name} with VALID padding")
        require(y.shape[axis] == want, op,
                f"output {name} {y.shape[axis]} does not match the {o['padding']} padding result {want}")
    bias = bias_tensor(op, graph)
    if bias is not None:
        require(bias.size == out_c, op, f"bias has {bias.size} elements for {out_c} output channels")
    if x.dtype == "float32":
        require(bias is None or bias.dtype == "float32", op,
                f"float32 needs a float32 bias, not {bias and bias.dtype}")
        return
    require(x.quant is not None and y.quant is not None and w.quant is not None, op,
            "quantized tensors need quantization parameters")
    require(not x.quant.per_channel and not y.quant.per_channel, op,
            "per-channel quantized activations are not supported")
    require(len(w.quant.scale) in (1, out_c), op,
            f"weights have {len(w.quant.scale)} scales for {out_c} output channels")
    if w.quant.per_channel:
        require(w.quant.axis == weight_channel_axis, op,
                f"weights must be quantized along dimension {weight_channel_axis}, not {w.quant.axis}")
    require(all(z == 0 for z in w.quant.zero_point), op,
            "weights with a nonzero zero point are not supported")
    if x.dtype == "int16":
        require(x.quant.zero_point[0] == 0 and y.quant.zero_point[0] == 0, op,
                "int16 activations must have zero point 0")
    _, shift = conv_multipliers(x, w, y, out_c)
    if x.dtype == "int16" and (bias is None or bias.dtype == "int64"):  # the 64-bit requantize
        require(all(int(s) <= 14 for s in shift), op,
                "the requantization scale input_scale * filter_scale / output_scale is too large (>= 2^15)")


def constant_parameters(op, graph) -> bool:
    """Weights and bias (if any) are constants: what the fast kernels and the bias folding need.
    TFLM also runs weights and biases that are activations; the reference loops read them at run time."""
    bias = bias_tensor(op, graph)
    return graph.tensors[op.inputs[1]].is_constant and (bias is None or bias.is_constant)


def bias_tensor(op, graph):
    if len(op.inputs) > 2 and op.inputs[2] >= 0:
        return graph.tensors[op.inputs[2]]
    return None


def geometry(op, graph) -> ConvGeometry:
    o = op.options
    x, w, y = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
    g = ConvGeometry(batches=x.shape[0], in_h=x.shape[1], in_w=x.shape[2], in_c=x.shape[3],
                     out_h=y.shape[1], out_w=y.shape[2], out_c=y.shape[3], k_h=w.shape[1], k_w=w.shape[2],
                     stride_h=o["stride_h"], stride_w=o["stride_w"], dil_h=o["dilation_h"],
                     dil_w=o["dilation_w"], pad_h=0, pad_w=0)
    g.pad_h = _pad(g.in_h, g.k_h, g.stride_h, g.dil_h, g.out_h)
    g.pad_w = _pad(g.in_w, g.k_w, g.stride_w, g.dil_w, g.out_w)
    return g


def quant_values(op, graph, ctx, taps: int, bias_c: str | None) -> dict:
    """Template values for the integer paths: offsets, clamp bounds, requantization, accumulator."""
    x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    bias = bias_tensor(op, graph)
    out_c = y.shape[3]
    mult, shift = conv_multipliers(x, w, y, out_c)
    if len(set(zip(mult.tolist(), shift.tolist()))) == 1:
        requant = (str(int(mult[0])), str(int(shift[0])))
    else:
        requant = (ctx.const("multiplier", mult) + "[oc]", ctx.const("shift", shift) + "[oc]")
    lo, hi = activation_range(op.options["activation"], y)
    # int16: TFLM accumulates in int32 (32-bit requantize) only with an int32 bias; without a bias
    # or with an int64 one it uses the 64-bit accumulator and requantize.
    wide = x.dtype == "int16" and (bias is None or bias.dtype == "int64")
    # Largest |accumulator| TFLM's arithmetic can reach; beyond int32 we sum in int64 and wrap.
    max_x = 32768 if x.dtype == "int16" else 255
    if bias is None:
        max_bias = 0
    else:
        max_bias = int(np.max(np.abs(bias.data.astype(np.int64)))) if bias.is_constant else INT32_MAX
    bound = taps * 128 * (max_x + 128) + max_bias
    if wide:
        acc_t, requant_fn, wrap = "int64_t", "mc_requantize64", False
    else:
        acc_t, requant_fn, wrap = ("int32_t", "mc_requantize", False) if bound <= INT32_MAX else \
            ("int64_t", "mc_requantize", True)
    return dict(io_t="int16_t" if x.dtype == "int16" else "int8_t", acc_t=acc_t, requant_fn=requant_fn,
                wrap=wrap, requant=requant, act_min=lo, act_max=hi, input_offset=-x.quant.zero_point[0],
                output_offset=y.quant.zero_point[0], bias=bias_c)


def float_values(op) -> dict:
    lo, hi = float_activation_range(op.options["activation"])
    return dict(act_min=c_float(lo), act_max=c_float(hi))


def folded_bias(op, graph, ctx, weight_sums: np.ndarray) -> str:
    """Bias with input_offset * sum(weights) folded in: valid when every tap is inside the image.

    The result is exact modulo 2^32, like TFLM's int32 accumulator."""
    x = ctx.tensor(op.inputs[0])
    bias = bias_tensor(op, graph)
    b = bias.data.astype(np.int64) if bias is not None else np.zeros(len(weight_sums), np.int64)
    folded = b + int(-x.quant.zero_point[0]) * weight_sums.astype(np.int64)
    wrapped = ((folded + 2**31) % 2**32 - 2**31).astype(np.int32)
    return ctx.const("bias", wrapped)


@register
class Conv2D(OpKernel):
    kinds = ("CONV_2D",)
    input_roles = ("input", "filter", "bias")
    inputs = (2, 3)
    type_notes = ("int8 and int16 activations with int8 or packed int4 per-channel weights (int16: int32 or int64 "
                  "bias); weights and bias constant or activations")
    options = "padding, stride, dilation, fused activation"
    fast = {"dsp": "int8 (im2col + SMLAD; pixel for grouped convolution and large kernels); portable C of the same "
                   "loops elsewhere",
            "mve": "int8, one group (VMLADAVA.S8, 2 pixels x 4 channels)"}
    tuning_knobs = {"weights": ("s8", "s16")}  # plan(): int8 words or pre-extended int16 pairs

    def check(self, op, graph):
        check_common(op, graph, weight_channel_axis=0)
        x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
        require(x.shape[3] % w.shape[3] == 0, op,
                f"input channels {x.shape[3]} are not a multiple of the weights' depth {w.shape[3]}")
        groups = x.shape[3] // w.shape[3]
        require(w.shape[0] % groups == 0, op,
                f"output channels {w.shape[0]} do not split into {groups} groups")
        bias = bias_tensor(op, graph)
        if x.dtype == "int8":
            require(bias is None or bias.dtype == "int32", op,
                    f"int8 needs an int32 bias, not {bias and bias.dtype}")
        elif x.dtype == "int16":
            require(bias is None or bias.dtype in ("int32", "int64"), op,
                    f"int16x8 needs an int64 or int32 bias, not {bias and bias.dtype}")

    def macs(self, op, graph):
        y, w = graph.tensors[op.outputs[0]], graph.tensors[op.inputs[1]]
        return y.size * w.shape[1] * w.shape[2] * w.shape[3]

    def variant(self, op, graph):
        """The plan for a target without features (emit() records the plan for the actual target)."""
        return self.plan(op, graph)

    def plan(self, op, graph, features=frozenset(), tuning=None) -> dict:
        """The variant emit() generates and its knobs (recorded in metadata.json).

        im2col (int8, one group, im2col buffer <= 8 KB): 4 output pixels x 1 output channel per inner
        loop over im2col columns; "pixels" and "unroll" are the register block and the inner loop's
        unrolling; "weights" is s8 (int8 weights, sign-extended in the loop: 13 instructions per 16
        MACs with the DSP extension) or s16 (pre-extended int16 pairs, twice the flash: 11 per 16),
        s8 unless ``tuning`` asks for s16; "isa" says whether the target has the DSP extension (SIMD
        inline assembly) or runs the same loops in C. int8 grouped, or with a column buffer
        above 8 KB: pixel (ops/fast_conv.py, one output pixel per dot product of int16 pairs).
        Otherwise (int16, float32) the reference loop nest. With "mve" in the features (Cortex-M55)
        an int8 convolution of one group takes the Helium kernel instead (fast_mve.conv_plan)."""
        tuning = tuning or {}
        x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
        if x.dtype == "int8" and fast_mve.has_mve(features) and constant_parameters(op, graph):
            mve = fast_mve.conv_plan(geometry(op, graph), x.shape[3] // w.shape[3])
            if mve:
                return mve
        if x.dtype == "int8" and w.shape[3] == x.shape[3] and constant_parameters(op, graph):
            g = geometry(op, graph)
            steps = -(-g.k_h * g.k_w * g.in_c // 4)
            col_bytes = 32 * steps
            if col_bytes <= fast.MAX_COL_BYTES:
                weights = tuning.get("weights", "s8")
                plan = {"variant": "im2col", "isa": "dsp" if fast.has_dsp(features) else "c",
                        "pixels": 4, "out_channels": 1, "unroll": 4,
                        "gather": "taps" if g.in_c % 4 == 0 else "bytes",
                        "weights": weights if weights in ("s8", "s16") else "s8",
                        "scratch_bytes": col_bytes + (0 if g.in_c % 4 == 0 else 4 * steps)}
                if (plan["weights"] == "s8" and fast.has_dsp(features) and tuning.get("extract") != "sxtb16"
                        and fast_conv.im2col_lanes_ok(*self._folded_rows(op, graph))):
                    plan["extract"] = "lanes"
                return plan
        if x.dtype == "int8" and constant_parameters(op, graph):
            return fast_conv.plan(geometry(op, graph), x.shape[3] // w.shape[3], features)
        return {"variant": "reference"}

    def emit(self, op, graph, ctx):
        plan = {"variant": "reference"} if ctx.reference_only else self.plan(op, graph, ctx.features, ctx.tuning)
        ctx.variant = plan
        if plan["variant"] == "im2col":
            return self._emit_im2col(op, graph, ctx, plan)
        if plan["variant"] == "mve-dot":
            return self._emit_mve(op, graph, ctx, plan)
        if plan["variant"] == "pixel":
            return fast_conv.emit_pixel(op, graph, ctx, plan, geometry(op, graph), bias_tensor(op, graph))
        x, w = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1])
        g = geometry(op, graph)
        group_c = w.shape[3]
        groups = g.in_c // group_c
        bias = bias_tensor(op, graph)
        values = dict(input=ctx.arg(op.inputs[0]), weights=ctx.arg(op.inputs[1]),
                      output=ctx.arg(op.outputs[0]), group_c=group_c, groups=groups,
                      per_group=g.out_c // groups, taps=g.k_h * g.k_w * group_c, **g.values())
        if x.dtype == "float32":
            return ctx.render("conv_2d_float.c.j2", bias=ctx.arg(op.inputs[2]) if bias is not None else None,
                              **float_values(op), **values)
        taps = g.k_h * g.k_w * group_c
        offset = -x.quant.zero_point[0]
        fold = offset != 0 and g.always_inside and constant_parameters(op, graph)
        if fold:
            bias_c = folded_bias(op, graph, ctx, w.data.astype(np.int64).reshape(g.out_c, -1).sum(axis=1))
        else:
            bias_c = ctx.arg(op.inputs[2]) if bias is not None else None
        q = quant_values(op, graph, ctx, taps, bias_c)
        if fold:
            q["input_offset"] = 0
        return ctx.render("conv_2d_int.c.j2", **q, **values)

    def _folded_rows(self, op, graph):
        """(int8 weights [out_c, K], bias with the input zero point folded in, int64)."""
        x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
        bias = bias_tensor(op, graph)
        w_rows = w.data.astype(np.int8).reshape(w.shape[0], -1)
        b = bias.data.astype(np.int64) if bias is not None else np.zeros(w.shape[0], np.int64)
        return w_rows, b - int(x.quant.zero_point[0]) * w_rows.astype(np.int64).sum(axis=1)

    def _emit_im2col(self, op, graph, ctx, plan):
        x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
        g = geometry(op, graph)
        bias = bias_tensor(op, graph)
        w_rows = w.data.astype(np.int8).reshape(g.out_c, -1)  # [oc][ky][kx][c]
        s16 = plan["weights"] == "s16"
        zp = int(x.quant.zero_point[0])
        b = bias.data.astype(np.int64) if bias is not None else np.zeros(g.out_c, np.int64)
        folded = b - zp * w_rows.astype(np.int64).sum(axis=1)
        mult, shift = conv_multipliers(x, w, y, g.out_c)
        y_zp = int(y.quant.zero_point[0])
        is_fast, c, r = fast.requant_table(mult, shift, y_zp, fast.acc_bounds(b, w_rows))
        plan["requant"] = "smmlar" if is_fast else "reference"
        scale = 2 if s16 and is_fast else 1  # int16 weights and bias doubled: the accumulator is 2 * acc
        lanes = plan.get("extract") == "lanes"
        if s16:
            words, steps = fast.pack_s16_rows(w_rows.astype(np.int32) * scale)
        elif lanes:  # 256-scaled accumulators from the lanes bias; no doubling (acc >> 7 = 2 * acc)
            words, folded = fast_conv.im2col_lanes(w_rows, folded)
            steps = words.shape[1]
        else:
            words, steps = fast.pack_s8_words(w_rows)
        lo, hi = activation_range(op.options["activation"], y)
        npix = g.out_h * g.out_w
        # one multiplier for every channel (per-tensor weights): literal constants, the bias alone
        uniform = len(set(zip(mult.tolist(), c.tolist(), r.tolist()))) == 1
        if uniform:
            params = ctx.const("bias", fast.wrap32(folded * scale))
            uniform = (int(mult[0]), int(c[0]), int(r[0]))
        elif is_fast:  # {bias, multiplier, r}; c from r in the epilogue
            params = ctx.const("params", fast.channel_params3(folded * scale, mult, r))
        else:
            params = ctx.const("params", fast.channel_params(folded * scale, mult, c, r))
        return ctx.render("conv_2d_im2col.c.j2", g=g, describe=g.describe(), input=ctx.arg(op.inputs[0]),
                          output=ctx.arg(op.outputs[0]), weights=ctx.const("weights", words.reshape(-1)),
                          params=params, uniform=uniform, stride=1 if uniform else (3 if is_fast else 4), c_k=2 * y_zp + 1,
                          scratch=ctx.scratch(plan["scratch_bytes"]),
                          steps=steps, words=words.shape[1], s16=s16, isa=plan["isa"], taps_mode=g.in_c % 4 == 0, zp=zp,
                          zp_pair=int(fast.pairs(np.array([zp]), np.array([zp]))[0]), npix=npix, lanes=lanes,
                          lanes_zp=(int(fast.pairs(np.array([zp]), np.array([zp]))[0]),
                                    int(fast.pairs(np.array([255 * zp + 127]), np.array([255 * zp + 127]))[0])),
                          full=npix // 4, tail=npix % 4, fast=is_fast, act_min=lo, act_max=hi,
                          output_offset=y_zp)

    def _emit_mve(self, op, graph, ctx, plan):
        x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
        g = geometry(op, graph)
        bias = bias_tensor(op, graph)
        mult, shift = conv_multipliers(x, w, y, g.out_c)
        return fast_mve.emit_dot(ctx, plan, g, w.data.astype(np.int8).reshape(g.out_c, -1),
                                 bias.data.astype(np.int64) if bias is not None else np.zeros(g.out_c, np.int64),
                                 int(x.quant.zero_point[0]), mult, shift, int(y.quant.zero_point[0]),
                                 activation_range(op.options["activation"], y), ctx.arg(op.inputs[0]),
                                 ctx.arg(op.outputs[0]), g.describe())
