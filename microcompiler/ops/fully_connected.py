"""FULLY_CONNECTED: int8, int16x8 and float32; per-tensor or per-channel weights.

The fast kernels: int8 rows4 / lanes in ops/fast/fully_connected_rows4.py, int16x8 int16-rows4 in
ops/fast/fully_connected_s16.py.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from microcompiler.ops import fast
from microcompiler.ops.base import OpKernel, register, require, require_like_tflm
from microcompiler.ops.conv_common import check_requantize_range, check_weights_and_bias, requantized_layer
from microcompiler.ops.fast import fully_connected_float_rows4 as float_rows4
from microcompiler.ops.fast import fully_connected_s16 as fc_s16
from microcompiler.ops.fast import mve as fast_mve
from microcompiler.ops.fast.conv_2d_pointwise import lane_bits
from microcompiler.ops.fast.fully_connected_rows4 import ROWS4, emit_rows4
from microcompiler.ops.plan import ISA_C, ISA_DSP, REFERENCE_PLAN, Choice, KernelPlan, PlanRequest, choose
from microcompiler.ops.quant import (
    activation_range,
    c_float,
    float_activation_range,
    fully_connected_multipliers,
    quantize_multiplier,
    quantize_multipliers,
)
from microcompiler.ops.requant_float import float_requant, requant_function, scale_expr


@register
class FullyConnected(OpKernel):
    kinds = ("FULLY_CONNECTED",)
    input_roles = ("input", "weights", "bias")
    inputs = (2, 3)
    type_notes = (
        "int8 and int16 activations with int8 or packed int4 weights (int16: int32 or int64 bias); "
        "weights and bias constant or activations"
    )
    options = "fused activation, keep_num_dims"
    tflm_refusals = (
        "int8/int16 with per-tensor weights: a bias scale that differs from input scale * weight scale by "
        "more than 0.02 output steps (GetQuantizedConvolutionMultipler)",
    )
    fast = {
        "dsp": "int8 with symmetric weights (rows4 / lanes, SMLAD); int16x8 with zero points 0 (int16-rows4-s8: "
        "int8 weights widened in registers by SXTB16, SMLAD on int16 pairs, exact int64 sums; int16-rows4: int16 "
        "weight pairs in flash, knob weights s16); without it int8 rows4 pairs (4 rows per word, two rows per "
        "32 x 32 -> 64 multiply-accumulate) or, for one input vector that is an activation and rows in blocks of "
        "8, pairs-u8 (the input offset by 128 in place for the layer, then restored; 8 rows per pass)",
        "mve": "int8 with symmetric weights (VMLADAVA.S8, 2 rows of the batch x 4 outputs)",
        "fpu": "float32 with constant weights (float-rows4: 4 rows in FPU registers)",
    }
    # plan(): the weight encoding, and the lanes kernel's inputs per chunk (0: one pass)
    tuning_knobs = {"weights": ("s8", "s16"), "chunk": (0, 64, 128, 256), "extract": ("interleaved",)}

    def check(self, op, graph):
        x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
        y = graph.tensors[op.outputs[0]]
        require(op.options.get("weights_format", 0) == 0, op, "shuffled weight formats are not supported")
        require(
            op.options["activation"] in ("NONE", "RELU", "RELU6", "RELU_N1_TO_1"),
            op,
            f"fused activation {op.options['activation']} is not supported",
        )
        combo = (x.dtype, w.dtype, y.dtype)
        require(
            combo in {("int8", "int8", "int8"), ("int16", "int8", "int16"), ("float32", "float32", "float32")},
            op,
            f"type combination input/weights/output {combo} is not supported (int8, int16x8, float32; "
            "hybrid float32 input with int8 weights is not supported by TFLM either)",
        )
        require(len(w.shape) == 2, op, f"weights must be 2-D [outputs, depth], not {list(w.shape)}")
        require(min(w.shape) >= 1, op, f"weights of shape {list(w.shape)} are empty")
        require(x.size % w.shape[-1] == 0, op, "input size is not a multiple of the weights' depth")
        batches, rows = x.size // w.shape[-1], w.shape[0]
        # the kernel writes batches x rows values: exactly the output's size, or it would write past it
        require(
            y.size == batches * rows and (not y.shape or y.shape[-1] == rows),
            op,
            f"input {list(x.shape)} makes {batches} batches of {rows} outputs but the output has shape "
            f"{list(y.shape)}; the file is inconsistent (the layer would write past its output)",
        )
        bias = graph.tensors[op.inputs[2]] if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
        check_weights_and_bias(op, x, w, bias, rows, 0)
        if x.dtype != "float32":
            require(all(t.quant is not None for t in (x, w, y)), op, "quantized tensors need quantization parameters")
            check_requantize_range(op, x, w, y)
            if bias is not None and bias.quant is not None and len(w.quant.scale) == 1:
                # TFLM's GetQuantizedConvolutionMultipler (per-tensor weights only): the bias scale must be
                # input scale * weight scale, within 2% of the output scale
                product = float(np.float32(x.quant.scale[0])) * float(np.float32(w.quant.scale[0]))
                gap = abs(product - float(np.float32(bias.quant.scale[0]))) / float(np.float32(y.quant.scale[0]))
                require_like_tflm(
                    gap <= 0.02,
                    op,
                    f"the bias scale {bias.quant.scale[0]:.6g} is not input scale * weight scale ({product:.6g}): "
                    f"they differ by {gap:.3g} output steps, more than TFLM's 0.02",
                )

    def _dims(self, op, graph):
        x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
        depth = w.shape[-1]
        return x.size // depth, w.shape[0], depth  # batches, output depth, accumulation depth

    def macs(self, op, graph):
        b, o, d = self._dims(op, graph)
        return b * o * d

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None) -> KernelPlan:
        """rows4 (int8, weight zero point 0): 4 output rows per inner loop, the input zero point folded
        into the bias. With the DSP extension the default keeps the weights int8 ("weights": "s8",
        "extract": "lanes": each weight word encodes the int16 lanes (w0 + 256 w1, w2 + 256 w3), the
        input is expanded once per inference into the kernel scratch, SMLAD + SXTB16 + SMLAD per word:
        14 instructions per 16 MACs, flash = the .tflite's weights) when the lanes fit int16 and
        |acc| < 2^23 (256 * acc must fit the accumulator); otherwise sign-extended int16 pairs
        ("s16": 13 per 16 MACs, twice the flash). ``tuning`` {"weights": "s16"} forces s16;
        {"weights": "s8"} forces int8 (SXTB16 of every weight, "extract": "sxtb16", 23 per 16 MACs,
        when the lanes encoding does not apply). The lanes kernel expands 8 bytes of scratch per 4
        inputs; when that exceeds fast.LANES_CHUNK_BUDGET it runs the depth in chunks ("chunk": inputs
        per chunk, 0 = the whole depth in one pass; knob {"chunk": N}, N a multiple of 4, or 0), each
        chunk expanded once and added into int32 partial sums (one per output row) in the scratch.
        Without the DSP extension int8 (LDRSB + MLA). With "mve" (Cortex-M55) the Helium kernel
        (fast_mve.fc_plan). int16x8 with zero points 0: int16-rows4 (ops/fast/fully_connected_s16.py,
        SMLAD on the int16 inputs as they lie, exact int64 sums), the portable C of it without the DSP
        extension; by default its int8-weight form int16-rows4-s8 (the model file's weight bytes in flash,
        widened in registers), int16-rows4 (int16 pairs, fewer instructions) with {"weights": "s16"}.
        float32 with constant weights on a core with an FPU: float-rows4
        (ops/fast/fully_connected_float_rows4.py). Otherwise the reference loop."""
        plan = choose(CHOICES, PlanRequest(op, graph, features, tuning or {}))
        return plan

    def _folded(self, op, graph):
        x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
        _, out_depth, depth = self._dims(op, graph)
        w_rows = w.data.astype(np.int8).reshape(out_depth, depth)
        has_bias = len(op.inputs) > 2 and op.inputs[2] >= 0
        b = graph.tensors[op.inputs[2]].data.astype(np.int64).reshape(-1) if has_bias else np.zeros(out_depth, np.int64)
        return w_rows, b, b - int(x.quant.zero_point[0]) * w_rows.astype(np.int64).sum(axis=1)

    def _lanes_ok(self, op, graph) -> bool:
        w_rows, _, folded = self._folded(op, graph)
        return fast.lanes_plan(w_rows, folded)

    def emit(self, op, graph, ctx):
        plan = REFERENCE_PLAN if ctx.reference_only else self.kernel_plan(op, graph, ctx.features, ctx.tuning)
        ctx.plan = plan
        if plan.variant == ROWS4:
            return self._emit_rows4(op, graph, ctx, plan)
        if plan.variant == float_rows4.FLOAT_ROWS4:
            return float_rows4.emit_float_rows4(op, graph, ctx, self._dims(op, graph))
        if plan.variant in (fc_s16.INT16_ROWS4, fc_s16.INT16_ROWS4_S8):
            x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
            bias = ctx.tensor(op.inputs[2]) if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
            return fc_s16.emit(op, ctx, plan, self._dims(op, graph), fully_connected_multipliers(x, w, y), bias)
        if plan.variant == fast_mve.MVE_DOT:
            x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
            batches, out_depth, depth = self._dims(op, graph)
            w_rows, b, _ = self._folded(op, graph)
            describe = f"{out_depth} outputs x {depth} inputs, {batches} batch(es)"
            layer = requantized_layer(op, ctx, b, fully_connected_multipliers(x, w, y), describe)
            return fast_mve.emit_dot(ctx, plan, fast_mve.fc_geometry(batches, depth, out_depth), w_rows, layer)
        x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
        batches, out_depth, depth = self._dims(op, graph)
        has_bias = len(op.inputs) > 2 and op.inputs[2] >= 0
        values = dict(
            batches=batches,
            out_depth=out_depth,
            depth=depth,
            input=ctx.arg(op.inputs[0]),
            weights=ctx.arg(op.inputs[1]),
            output=ctx.arg(op.outputs[0]),
            bias=ctx.arg(op.inputs[2]) if has_bias else None,
            dtype=x.dtype,
        )
        if x.dtype == "float32":
            lo, hi = float_activation_range(op.options["activation"])
            block = int(op.options.get("fma_block", 0))
            return ctx.render(
                "fully_connected_float.c.j2", act_min=c_float(lo), act_max=c_float(hi), fma_block=block, **values
            )
        lo, hi = activation_range(op.options["activation"], y)
        requant_fn = None
        if float_requant(op):  # ONNX Runtime's requantization (ops/requant_float.py)
            requant_fn = requant_function(op, ctx.tensor)
            per_channel, scalar = None, (scale_expr(ctx, x, w, y, out_depth, "o"), str(int(y.quant.zero_point[0])))
        elif w.quant.per_channel:
            mult, shift = quantize_multipliers(
                float(np.float32(x.quant.scale[0])) * float(np.float32(s)) / float(np.float32(y.quant.scale[0]))
                for s in w.quant.scale
            )
            per_channel = (ctx.const("multiplier", mult), ctx.const("shift", shift))
            scalar = None
        else:
            # TFLM multiplies the two scales in float32 before widening (GetQuantizedConvolutionMultipler).
            product = float(np.float32(x.quant.scale[0]) * np.float32(w.quant.scale[0]))
            scalar = quantize_multiplier(product / float(np.float32(y.quant.scale[0])))
            per_channel = None
        # TFLM accumulates in the bias type: int64 for int16 activations (an int64 bias or none), int32
        # for int8 and for int16 with an int32 bias (32-bit requantize). Where an int32 sum could
        # overflow, we sum in int64 and wrap to int32 at the end, as TFLM's int32 arithmetic does.
        bias_t = ctx.tensor(op.inputs[2]) if has_bias else None
        wide = x.dtype == "int16" and (bias_t is None or bias_t.dtype != "int32")
        max_x = 32768 if x.dtype == "int16" else 255
        max_bias = (
            int(np.max(np.abs(bias_t.data.astype(np.int64))))
            if bias_t is not None and bias_t.is_constant
            else (2**31 if bias_t is not None else 0)
        )
        wrap = not wide and depth * max_x * 255 + max_bias > 2**31 - 1
        return ctx.render(
            "fully_connected_int.c.j2",
            act_min=lo,
            act_max=hi,
            input_offset=-x.quant.zero_point[0],
            weights_offset=-w.quant.zero_point[0],
            output_offset=0 if requant_fn else y.quant.zero_point[0],
            requant_fn=requant_fn,
            scalar=scalar,
            per_channel=per_channel,
            wide=wide,
            wrap=wrap,
            io_t=f"{x.dtype}_t",
            **values,
        )

    def _emit_rows4(self, op, graph, ctx, plan):
        x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
        return emit_rows4(op, graph, ctx, plan, self._dims(op, graph), fully_connected_multipliers(x, w, y))


def _constant(r: PlanRequest) -> bool:
    has_bias = len(r.op.inputs) > 2 and r.op.inputs[2] >= 0
    return r.tensor(1).is_constant and (not has_bias or r.tensor(2).is_constant)


def float_rows4_fits(r: PlanRequest) -> bool:
    """float32 input and weights, constant, an FPU; not ONNX Runtime's fused multiply-add order
    (``fma_block``, set by the ONNX importer: the reference loop computes it)."""
    fma = r.op.options.get("fma_block", 0)
    return r.dtype == "float32" and r.tensor(1).dtype == "float32" and _constant(r) and r.fpu and not fma


def int8_symmetric(r: PlanRequest) -> bool:
    """int8, constant weights whose zero points are all 0 (the rows4 and mve-dot kernels)."""
    w = r.tensor(1)
    return r.dtype == "int8" and _constant(r) and w.quant is not None and all(int(z) == 0 for z in w.quant.zero_point)


def helium_fits(r: PlanRequest) -> bool:
    return int8_symmetric(r) and r.mve


def lanes_fits(r: PlanRequest) -> bool:
    """The DSP extension, int8 weights kept (not tuned to s16), lanes that fit int16 and |acc| < 2^23."""
    return int8_symmetric(r) and r.dsp and r.knob("weights") != "s16" and FullyConnected()._lanes_ok(r.op, r.graph)


def int16_rows4_fits(r: PlanRequest) -> bool:
    """int16x8 with zero points 0 (fc_s16.applies)."""
    return _constant(r) and fc_s16.applies(r.tensor(0), r.tensor(1), r.tensor(-1))


def _lanes_plan(r: PlanRequest) -> KernelPlan:
    w = r.tensor(1)
    steps = w.shape[-1] // 4
    chunk = fast.lanes_chunk_steps(steps, w.shape[0], r.knob("chunk"))
    return KernelPlan.of(
        ROWS4,
        ISA_DSP,
        scratch_bytes=fast.lanes_scratch_bytes(steps, w.shape[0], chunk),
        rows=4,
        unroll=4,
        weights="s8",
        extract="lanes",
        chunk=4 * chunk if chunk < steps else 0,
    )


# mc_dot_r4_s8i is one function per model (about 260 B of flash on the Cortex-M3): a layer with fewer
# weights than this (IC's and KWS's last layers) keeps its own row loop, which costs less flash there.
INTERLEAVED_MIN_WEIGHTS = 1024
PAIRS_MIN_DEPTH = 32


def _int32_partial_sums(r: PlanRequest) -> bool:
    """No partial sum of a row leaves int32: |folded bias| + 128 sum|w| < 2^31 (mc_dot_r4_s8i's signed
    arithmetic)."""
    w_rows, _, folded = FullyConnected()._folded(r.op, r.graph)
    bound = np.abs(folded) + 128 * np.abs(w_rows.astype(np.int64)).sum(axis=1)
    return bool(np.all(bound < 2**31))


def _long_pairs(w) -> bool:
    """8 rows or more (the input's sum, once per layer, shared by 2 blocks) of PAIRS_MIN_DEPTH inputs."""
    return w.shape[0] >= 8 and w.shape[-1] >= PAIRS_MIN_DEPTH and w.size >= INTERLEAVED_MIN_WEIGHTS


def _pairs_pays(w, graph) -> bool:
    """mc_dot_r4_s8p where its per-call work pays (_long_pairs), and for 8 rows or more of fewer inputs
    where another layer of the model has it anyway (one helper function in flash, not two)."""
    if _long_pairs(w):
        return True
    others = (
        graph.tensors[op.inputs[1]]
        for op in graph.operators
        if op.kind == "FULLY_CONNECTED" and graph.tensors[op.inputs[1]].dtype == "int8"
    )
    return w.shape[0] >= 8 and any(t.is_constant and _long_pairs(t) for t in others)


def _offset_in_place(r: PlanRequest) -> bool:
    """ "pairs-u8" (8 rows per pass over the input offset by 128, mc_dot_r8_u8p: 1.34 instructions per
    MAC in its loop on the Cortex-M3, "pairs" 1.75) where "pairs" pays: one batch row, rows in blocks
    of 8, an input the layer may offset in place and restore (an activation: its memory not the
    graph's input's, which may be the caller's const buffer, nor a constant or a state tensor)."""
    g = r.graph
    root = g.storage(r.op.inputs[0])  # the memory the input lives in (an in-place alias's root)
    x, w = g.tensors[root], r.tensor(1)
    return (
        r.tensor(0).size == w.shape[-1]
        and w.shape[0] % 8 == 0
        and root not in {g.storage(i) for i in g.inputs}
        and not x.is_constant
        and not x.persistent
    )


def _rows4_plan(r: PlanRequest) -> KernelPlan:
    """s16 pairs with the DSP extension (unless tuned to s8), int8 weights with SXTB16 where the row
    offsets fit LDR's 12-bit immediate, else int8 in C: interleaved per input, two rows per SMLAL
    ("pairs", mc_dot_r4_s8p: 1.75 instructions per MAC on the Cortex-M3, where _pairs_pays; else, or
    {"extract": "interleaved"}: mc_dot_r4_s8i, 2.4) where the partial sums fit int32 and the layer has
    at least INTERLEAVED_MIN_WEIGHTS weights, else row by row. Two batch rows or more (and a lane
    width from the weights, conv_2d_pointwise.lane_bits): interleaved with the knob ``lane``, two rows
    per SMLAL with the long multiply (their inputs packed into depth words of scratch,
    mc_dot_x2r4_s8i: 1.28 per MAC in its loop), unless tuned to {"extract": "pairs"}."""
    depth = r.tensor(1).shape[-1]
    s16 = r.dsp and r.knob("weights") != "s8" and depth >= 4
    sxtb16 = r.dsp and not s16 and depth >= 4 and 3 * depth - 4 <= 4095
    plan = KernelPlan.of(
        ROWS4,
        ISA_DSP if s16 or sxtb16 else ISA_C,
        scratch_bytes=0,
        rows=4,
        unroll=4 if s16 else 1,
        weights="s16" if s16 else "s8",
    )
    if sxtb16:
        return plan.with_knobs(extract="sxtb16")
    if not s16 and r.tensor(1).size >= INTERLEAVED_MIN_WEIGHTS and _int32_partial_sums(r):
        # two batch rows or more: both rows' inputs packed per input word (conv_2d_pointwise's
        # packing, depth words of scratch), one SMLAL per 2 MACs with the long multiply (mc_dot_x2r4_s8i)
        lane = lane_bits(r.tensor(1).data.astype(np.int8).reshape(-1, depth))
        rows2 = lane and r.tensor(0).size >= 2 * depth and r.tensor(1).shape[0] >= 4 and r.knob("extract") != "pairs"
        pays = _pairs_pays(r.tensor(1), r.graph) and r.knob("extract") != "interleaved"
        extract = "pairs" if pays and not rows2 else "interleaved"
        if extract == "pairs" and _offset_in_place(r) and r.knob("extract") != "pairs":
            extract = "pairs-u8"
        plan = plan.with_knobs(extract=extract, unroll=4 if extract.startswith("pairs") else 8).with_headers(
            "kernel_portable.h"
        )
        if extract.startswith("pairs"):  # the shared whole-layer kernels (mc_fc_r8_u8p, mc_fc_r4_s8p)
            plan = plan.with_headers("kernel_portable_fc.h")
        # (a core known to lack the long multiply runs the interleaved loop: no packing, no scratch)
        return replace(plan, scratch_bytes=4 * depth).with_knobs(lane=lane) if rows2 and r.long_multiply else plan
    return plan


# The variants FULLY_CONNECTED takes, in order of preference (FullyConnected.kernel_plan).
CHOICES = (
    Choice(float_rows4_fits, lambda r: float_rows4.plan(r.features)),
    Choice(helium_fits, lambda r: fast_mve.fc_plan(r.tensor(1).shape[-1])),
    Choice(lanes_fits, _lanes_plan),
    Choice(int8_symmetric, _rows4_plan),
    Choice(int16_rows4_fits, lambda r: fc_s16.plan(r.features, r.knob("weights"))),
)
