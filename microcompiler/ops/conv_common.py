"""What CONV_2D, DEPTHWISE_CONV_2D (and the fast kernels in ops/fast/) share, as TFLM's
conv_common.cc and depthwise_conv_common.cc: the checks of shapes, options, types and
quantization, the geometry of an operator, the per-channel requantization constants and the bias
with the input zero point folded in. The pure geometry (output size, padding) is ops/geometry.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from microcompiler.ops.base import require, require_consistent
from microcompiler.ops.geometry import ConvGeometry, out_size, padding_before
from microcompiler.ops.quant import (
    MAX_REQUANTIZE_SCALE,
    activation_range,
    c_float,
    conv_multipliers,
    float_activation_range,
)
from microcompiler.ops.requant_float import (
    float_requant,
    has_post_table,
    requant_function,
    requant_output,
    scale_bits,
    scale_expr,
)

ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")
INT32_MAX = 2**31 - 1


def check_common(op, graph, weight_channel_axis: int) -> None:
    """Checks shared by CONV_2D and DEPTHWISE_CONV_2D (shapes, options, quantization, bias)."""
    o = op.options
    post = op.kind == "DEPTHWISE_CONV_2D" and has_post_table(op)  # ops/requant_float.py (ONNX QDQ)
    require(
        (len(op.inputs) in (2, 3) or post) and len(op.outputs) == 1,
        op,
        "expects input, weights, optional bias and one output",
    )
    x, w, y = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]], graph.tensors[op.outputs[0]]
    if post:
        t = graph.tensors[op.inputs[3]]
        require(
            float_requant(op)
            and t.is_constant
            and t.dtype == x.dtype == "int8"
            and t.quant is not None
            and tuple(t.shape) == (y.shape[-1], 256),
            op,
            "a post table needs ONNX Runtime's requantization, int8 and a constant int8 [channels, 256] table",
        )
    require(
        len(x.shape) == 4 and len(w.shape) == 4 and len(y.shape) == 4,
        op,
        f"input, weights and output must be 4-D (NHWC); got {list(x.shape)}, {list(w.shape)}, {list(y.shape)}",
    )
    require(o["padding"] in ("SAME", "VALID"), op, f"padding {o['padding']} is not supported")
    require(o["activation"] in ACTIVATIONS, op, f"fused activation {o['activation']} is not supported")
    require(
        o["stride_h"] >= 1 and o["stride_w"] >= 1,
        op,
        f"stride {o['stride_h']}x{o['stride_w']} is not supported (must be >= 1)",
    )
    require(
        o["dilation_h"] >= 1 and o["dilation_w"] >= 1,
        op,
        f"dilation {o['dilation_h']}x{o['dilation_w']} is not supported (must be >= 1)",
    )
    require(min(x.shape) >= 1 and min(w.shape) >= 1, op, "empty tensors are not supported")
    combo = (x.dtype, w.dtype, y.dtype)
    require(
        combo in {("int8", "int8", "int8"), ("int16", "int8", "int16"), ("float32", "float32", "float32")},
        op,
        f"type combination input/weights/output {combo} is not supported (int8, int16x8, float32)",
    )
    out_c = w.shape[weight_channel_axis]
    require(y.shape[3] == out_c, op, f"output has {y.shape[3]} channels but the weights make {out_c}")
    require(y.shape[0] == x.shape[0], op, "input and output batch sizes differ")
    patch = op.notes.patch_padding  # a patch of the layer (passes/patches.py): its own padding before
    for axis, name, k, s, d in (
        (1, "height", w.shape[1], o["stride_h"], o["dilation_h"]),
        (2, "width", w.shape[2], o["stride_w"], o["dilation_w"]),
    ):
        if patch is not None:
            require(
                patch[axis - 1] >= 0 and (y.shape[axis] - 1) * s - patch[axis - 1] < x.shape[axis],
                op,
                f"patch output {name} {y.shape[axis]} reads outside its input patch",
            )
            continue
        want = out_size(o["padding"], x.shape[axis], k, s, d)
        require(want >= 1, op, f"the kernel (dilated) is larger than the input {name} with VALID padding")
        require(
            y.shape[axis] == want,
            op,
            f"output {name} {y.shape[axis]} does not match the {o['padding']} padding result {want}",
        )
    bias = bias_tensor(op, graph)
    check_weights_and_bias(op, x, w, bias, out_c, weight_channel_axis)
    if x.dtype == "float32":
        return
    require(
        x.quant is not None and y.quant is not None and w.quant is not None,
        op,
        "quantized tensors need quantization parameters",
    )
    require(
        not x.quant.per_channel and not y.quant.per_channel, op, "per-channel quantized activations are not supported"
    )
    check_requantize_range(op, x, w, y)
    require(all(z == 0 for z in w.quant.zero_point), op, "weights with a nonzero zero point are not supported")
    if x.dtype == "int16":
        require(
            x.quant.zero_point[0] == 0 and y.quant.zero_point[0] == 0, op, "int16 activations must have zero point 0"
        )
    _, shift = conv_multipliers(x, w, y, out_c)
    if x.dtype == "int16" and (bias is None or bias.dtype == "int64"):  # the 64-bit requantize
        require(
            all(int(s) <= 14 for s in shift),
            op,
            "the requantization scale input_scale * filter_scale / output_scale is too large (>= 2^15)",
        )


BIAS_TYPES = {"int8": ("int32",), "int16": ("int32", "int64"), "float32": ("float32",)}


def check_weights_and_bias(op, x, w, bias, out_c: int, weight_channel_axis: int, bias_types=None) -> None:
    """What the generated C relies on, and TFLM checks, for the weights and bias of CONV_2D,
    DEPTHWISE_CONV_2D, FULLY_CONNECTED and TRANSPOSE_CONV: one bias value per output channel, of the
    type the accumulator has (``bias_types``, default BIAS_TYPES: TFLM reads a float32 or int16 bias
    on an int8 layer as int32), and one weight scale per output channel (or one in all) along the
    output-channel dimension (TFLM: "per_channel_quantization_size != filter->dims->data[quantized_dimension]"):
    the per-channel multiplier and shift arrays are indexed by output channel. A mismatch is a damaged
    or inconsistent model (ModelFormatError)."""
    if bias is not None:
        require_consistent(
            bias.size == out_c,
            op,
            f"bias has {bias.size} elements for {out_c} output channels (a kernel would read past the bias)",
        )
        require_consistent(
            len(bias.shape) == 1, op, f"bias has shape {list(bias.shape)}; it must be one-dimensional [{out_c}]"
        )
        allowed = (bias_types or BIAS_TYPES).get(x.dtype, ())
        require_consistent(
            bias.dtype in allowed,
            op,
            f"{x.dtype} needs {'an' if allowed[0].startswith('i') else 'a'} {' or '.join(allowed)} bias, not "
            f"{bias.dtype} (TFLM would read its bytes as another type)",
        )
    if w.quant is None or x.dtype == "float32":
        return
    scales = w.quant.file_scales or len(w.quant.scale)
    require_consistent(
        scales in (1, out_c), op, f"weights have {scales} scales for {out_c} output channels (TFLM refuses it too)"
    )
    if scales > 1:
        require_consistent(
            w.quant.axis == weight_channel_axis,
            op,
            f"weights must be quantized along dimension {weight_channel_axis}, not {w.quant.axis}",
        )


def check_requantize_range(op, x, w, y) -> None:
    """Refuse a layer whose requantization no int32 arithmetic computes without signed overflow."""
    if x.quant is None or w.quant is None or y.quant is None:
        return
    in_scale, out_scale = float(np.float32(x.quant.scale[0])), float(np.float32(y.quant.scale[0]))
    worst = max(in_scale * float(np.float32(s)) / out_scale for s in w.quant.scale)
    require(
        worst < MAX_REQUANTIZE_SCALE,
        op,
        f"the requantization scale input_scale * weight_scale / output_scale "
        f"is {worst:.3g}, beyond any int32 multiplier (2^30); TFLM would overflow: the file's scales are damaged",
    )


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
    g = ConvGeometry(
        batches=x.shape[0],
        in_h=x.shape[1],
        in_w=x.shape[2],
        in_c=x.shape[3],
        out_h=y.shape[1],
        out_w=y.shape[2],
        out_c=y.shape[3],
        k_h=w.shape[1],
        k_w=w.shape[2],
        stride_h=o["stride_h"],
        stride_w=o["stride_w"],
        dil_h=o["dilation_h"],
        dil_w=o["dilation_w"],
        pad_h=0,
        pad_w=0,
    )
    if op.notes.patch_padding is not None:  # a patch of the layer (passes/patches.py): the padding left
        g.pad_h, g.pad_w = op.notes.patch_padding  # at the image border
    else:
        g.pad_h = padding_before(g.in_h, g.k_h, g.stride_h, g.dil_h, g.out_h)
        g.pad_w = padding_before(g.in_w, g.k_w, g.stride_w, g.dil_w, g.out_w)
    return g


def quant_values(op, graph, ctx, taps: int, bias_c: str | None) -> dict:
    """Template values for the integer paths: offsets, clamp bounds, requantization, accumulator."""
    x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    bias = bias_tensor(op, graph)
    out_c = y.shape[3]
    mult, shift = conv_multipliers(x, w, y, out_c)
    if float_requant(op):  # ONNX Runtime's requantization: the zero point is added inside mc_requant_float
        yq = requant_output(op, ctx.tensor, y)  # the post table's quantization where it has one
        requant = (scale_expr(ctx, x, w, yq, out_c, "oc"), str(int(yq.quant.zero_point[0])))
    elif len(set(zip(mult.tolist(), shift.tolist()))) == 1:
        requant = (str(int(mult[0])), str(int(shift[0])))
    else:
        requant = (
            ctx.const("multiplier", mult, comment=f"requantization multiplier per output channel [{out_c}]") + "[oc]",
            ctx.const("shift", shift, comment=f"requantization shift per output channel [{out_c}]") + "[oc]",
        )
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
        acc_t, requant_fn, wrap = (
            ("int32_t", "mc_requantize", False) if bound <= INT32_MAX else ("int64_t", "mc_requantize", True)
        )
    if float_requant(op):
        requant_fn = requant_function(op, ctx.tensor)
    return dict(
        io_t="int16_t" if x.dtype == "int16" else "int8_t",
        acc_t=acc_t,
        requant_fn=requant_fn,
        wrap=wrap,
        requant=requant,
        act_min=lo,
        act_max=hi,
        input_offset=-x.quant.zero_point[0],
        output_offset=0 if float_requant(op) else y.quant.zero_point[0],
        bias=bias_c,
    )


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
    return ctx.const(
        "bias",
        wrapped,
        comment=f"bias per output channel [{len(wrapped)}] with input zero point * sum(weights) folded in",
    )


@dataclass(frozen=True)
class RequantizedLayer:
    """What the Helium kernels (ops/fast/mve.py) take of an int8 layer besides its weights: the bias (int64, before the
    input zero point is folded in), the zero points, the per-channel multipliers and shifts, the
    activation range, the C expressions of its input and output, and its one-line description."""

    bias: np.ndarray
    x_zp: int
    mult: np.ndarray
    shift: np.ndarray
    y_zp: int
    act: tuple[int, int]
    input_c: str
    output_c: str
    describe: str
    ort: bool = False  # ONNX Runtime's requantization: mult holds the float32 scales' bits, shift zeros


def requantized_layer(op, ctx, bias: np.ndarray, multipliers, describe: str) -> RequantizedLayer:
    """The RequantizedLayer of an int8 CONV_2D, DEPTHWISE_CONV_2D or FULLY_CONNECTED from its bias
    (int64, per output channel) and its (multipliers, shifts)."""
    x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
    mult, shift = multipliers
    ort = float_requant(op)
    if ort:  # ONNX Runtime's requantization (ops/requant_float.py; kernel_mve_ort.h)
        mult = scale_bits(op, x, ctx.tensor(op.inputs[1]), y, len(bias))
        shift = np.zeros(len(bias), np.int32)
    return RequantizedLayer(
        bias=bias,
        x_zp=int(x.quant.zero_point[0]),
        mult=mult,
        shift=shift,
        y_zp=int(y.quant.zero_point[0]),
        act=activation_range(op.options["activation"], y),
        input_c=ctx.arg(op.inputs[0]),
        output_c=ctx.arg(op.outputs[0]),
        describe=describe,
        ort=ort,
    )


def conv_requantized_layer(op, graph, ctx, out_c: int, describe: str) -> RequantizedLayer:
    """requantized_layer of a CONV_2D or DEPTHWISE_CONV_2D: its bias (zero without one) and
    conv_multipliers."""
    x, w, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
    bias = bias_tensor(op, graph)
    bias64 = bias.data.astype(np.int64) if bias is not None else np.zeros(out_c, np.int64)
    return requantized_layer(op, ctx, bias64, conv_multipliers(x, w, y, out_c), describe)
