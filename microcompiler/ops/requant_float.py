"""ONNX Runtime's requantization ("float scale, round half to even"), beside TFLM's fixed-point
multiplier: what QLinearConv and QLinearMatMul compute (docs/onnx.md, "QDQ int8").

An int8 CONV_2D, DEPTHWISE_CONV_2D or FULLY_CONNECTED whose options say ``requant: "float"`` (set by
the ONNX QDQ importer) requantizes its int32 sum as ONNX Runtime's MlasRequantizeOutput does:
``float(acc) * scale``, clamped to the int8 range less the output zero point, rounded half to even,
plus the zero point (``mc_requant_float`` in kernel_math.h). The scale is computed here as ONNX Runtime
computes it, in float32 and in its order: ``input_scale * weight_scale[c] / output_scale``.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.quant import c_float

FLOAT_REQUANT = "float"


def float_requant(op) -> bool:
    """Whether the operator requantizes as ONNX Runtime does (the importer's ``requant`` option)."""
    return op.options.get("requant") == FLOAT_REQUANT


def float_scales(x, w, y, channels: int, op=None) -> np.ndarray:
    """Per output channel, (input scale * weight scale) / output scale in float32 (ONNX Runtime's
    ComputeOutputScale), the one weight scale repeated when it is per tensor; or the operator's
    ``requant_scales`` where the importer computed them in another order (QLinearGlobalAveragePool)."""
    if op is not None and op.options.get("requant_scales"):
        return np.broadcast_to(np.asarray(op.options["requant_scales"], dtype=np.float32), (channels,)).copy()
    xs, ys = np.float32(x.quant.scale[0]), np.float32(y.quant.scale[0])
    ws = np.asarray(w.quant.scale, dtype=np.float32)
    if ws.size == 1:
        ws = np.repeat(ws, channels)
    return ((xs * ws).astype(np.float32) / ys).astype(np.float32)


def scale_expr(ctx, x, w, y, channels: int, index: str) -> str:
    """The C expression of channel ``index``'s float scale: a literal when every channel has the same
    one, else a named const array ``..._scale`` indexed by it."""
    scales = float_scales(x, w, y, channels, ctx.op)
    if np.all(scales == scales[0]):
        return c_float(float(scales[0]))
    name = ctx.const(
        "scale",
        scales,
        comment=f"ONNX Runtime's requantization scale per output channel [{channels}]: "
        "input scale * weight scale / output scale in float32",
    )
    return f"{name}[{index}]"


UNCLAMPED_LIMIT = 2.0**20  # |acc * scale| below this: mc_requant_float_nc (no float clamp) is exact


def requant_function(op, tensor) -> str | None:
    """The C function requantizing ``op``'s sums as ONNX Runtime does (None: TFLM's arithmetic):
    ``mc_requant_float_nc`` where |acc * scale| provably stays below UNCLAMPED_LIMIT (the bound of
    |acc| from the constant weights and bias, any int8 input), else ``mc_requant_float``. ``tensor``
    maps a tensor index to the Tensor (the OpContext's or the graph's)."""
    if not float_requant(op):
        return None
    x, w = tensor(op.inputs[0]), tensor(op.inputs[1])
    y = requant_output(op, tensor, tensor(op.outputs[0]))
    if w.data is None:
        return "mc_requant_float"
    weights = np.abs(w.data.astype(np.float64))
    channel_axis = len(w.shape) - 1 if op.kind == "DEPTHWISE_CONV_2D" else 0
    sums = np.moveaxis(weights, channel_axis, 0).reshape(weights.shape[channel_axis], -1).sum(axis=1)
    bound = 255.0 * sums
    if len(op.inputs) > 2 and op.inputs[2] >= 0:
        bias = tensor(op.inputs[2])
        if bias.data is None:
            return "mc_requant_float"
        bound = bound + np.abs(bias.data.astype(np.float64)).reshape(-1)
    scales = float_scales(x, w, y, len(bound), op).astype(np.float64)
    return "mc_requant_float_nc" if float(np.max(bound * scales)) < UNCLAMPED_LIMIT else "mc_requant_float"


def scale_bits(op, x, w, y, channels: int) -> np.ndarray:
    """float_scales as their int32 bit patterns: the multiplier field of the fast kernels' records
    (``mc_f32_from_bits`` in the epilogue, _requant.j2's ``ort_requant``)."""
    return float_scales(x, w, y, channels, op).view(np.int32)


def ort_requant_table(op, x, w, y, channels: int):
    """For the fast kernels: (False, scale bits, c, zeros) in place of packing.requant_table's
    (fast, c, r) and the TFLM multipliers when ``op`` requantizes as ONNX Runtime does, else None.
    The kernels then take their "reference" epilogue, which _requant.j2 turns into mc_requant_float.
    ``c`` (the TFLM shift's slot, unused by that epilogue) is 0, or with a post table (below) the
    channel's offset in it: ``256 * channel + 128``. ``y`` is requant_output's tensor."""
    if op is None or not float_requant(op):
        return None
    zeros = np.zeros(channels, np.int32)
    c = np.arange(channels, dtype=np.int32) * 256 + 128 if has_post_table(op) else zeros.copy()
    return False, scale_bits(op, x, w, y, channels), c, zeros


# A post table (ONNX Runtime's float leftovers after a QLinearConv, frontend/onnx_qdq_tables.py):
# input 3 of an int8 DEPTHWISE_CONV_2D requantizing as ONNX Runtime does, int8 [channels, 256]:
# output = table[channel][requantized as unsigned byte], then the fused activation. The table tensor's
# ``quant`` is the requantization's own output quantization (QLinearConv's y scale and zero point);
# the operator's output tensor has the table's output quantization.
POST_TABLE_INPUT = 3


def has_post_table(op) -> bool:
    return op is not None and len(op.inputs) > POST_TABLE_INPUT and op.inputs[POST_TABLE_INPUT] >= 0


def requant_output(op, tensor, y):
    """The tensor whose quantization the requantization targets: the post table's (whose ``quant`` is
    the requantized value's) when ``op`` has one, else the output ``y``. ``tensor``: index -> Tensor."""
    return tensor(op.inputs[POST_TABLE_INPUT]) if has_post_table(op) else y


def post_table_values(table: np.ndarray) -> np.ndarray:
    """The [channels, 256] table (indexed by the unsigned byte) reordered for a signed index: entry
    ``128 + v`` holds the result for the int8 value v, so ``t[256 * c + 128 + v]``."""
    return np.ascontiguousarray(np.roll(np.asarray(table, np.int8), 128, axis=1))


def post_table_const(ctx) -> str | None:
    """The C name of ``ctx.op``'s post table in signed order (post_table_values), once per operator
    context; None without one (or without ONNX Runtime's requantization)."""
    op = ctx.op
    if not (float_requant(op) and has_post_table(op)):
        return None
    name = getattr(ctx, "_post_table_name", None)
    if name is None:
        t = ctx.tensor(op.inputs[POST_TABLE_INPUT])
        name = ctx.const(
            "post_table",
            post_table_values(t.data).reshape(-1),
            comment=f"per output channel [{t.shape[0]}] 256 int8 results of the float operators ONNX Runtime "
            "runs after this layer, entry 128 + v for the requantized value v",
        )
        ctx._post_table_name = name
    return name


def is_mve(plan) -> bool:
    """A Helium (Cortex-M55) kernel: its epilogue has ONNX Runtime's requantization (kernel_mve_ort.h) but
    no post table."""
    return plan.variant.name.startswith("mve")


ORT_SOFTMAX = "ort_softmax"  # SOFTMAX option: ONNX Runtime's QLinearSoftmax (the importer sets it)
ORT_MLAS = "ort_mlas"  # float LOGISTIC/TANH option: MLAS's approximations, as ONNX Runtime computes them
ORT_GRU = "ort_gru"  # float LOGISTIC/TANH option: the rational approximations of ONNX Runtime's GRU (kernel_ort.h)


def ort_softmax_table(x_scale: float, depth: int) -> np.ndarray:
    """ONNX Runtime's QLinearSoftmax lookup table for uint8 inputs (QlinearBuildLookupTableUint32, what
    it runs on x86, whose optimizer makes int8 activations uint8): table[i] = float(exp((i - 255 +
    shift) * x_scale)) in double, shift = max(0, log(FLT_MAX / depth) - 5) / x_scale, FLT_MAX / depth
    divided in float32. ``math.exp`` is the C library's exp, as ONNX Runtime's ``std::exp`` on the host."""
    import math

    xs = float(np.float32(x_scale))
    ratio = float(np.float32(np.finfo(np.float32).max) / np.float32(depth))
    shift = max(0.0, math.log(ratio) - 5.0) / xs
    return np.array([np.float32(math.exp((float(i) - 255.0 + shift) * xs)) for i in range(256)], dtype=np.float32)


def render_ort_softmax(op, ctx, x, y, outer: int, depth: int) -> str:
    """ONNX Runtime's QLinearSoftmax (uint8 path) on the IR's int8 values (uint8 - 128): per row, the
    table entries at 255 - max + x summed in order in float32, then each output
    nearbyintf(entry * floor(1 / y_scale) / sum) + zero point, at most 255 (as uint8)."""
    table = ctx.const(
        "exp_table",
        ort_softmax_table(x.quant.scale[0], depth),
        comment=f"SOFTMAX operator {op.index}: ONNX Runtime's QLinearSoftmax table, exp((i - 255 + shift) * x_scale)",
    )
    y_scale = np.floor(np.float32(1.0) / np.float32(y.quant.scale[0])).astype(np.float32)
    return ctx.render(
        "softmax_ort_int8.c.j2",
        outer=outer,
        depth=depth,
        table=table,
        y_scale=c_float(float(y_scale)),
        zero_point_u8=int(y.quant.zero_point[0]) + 128,
        input=ctx.arg(op.inputs[0]),
        output=ctx.arg(op.outputs[0]),
    )
