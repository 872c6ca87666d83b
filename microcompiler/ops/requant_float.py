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


def float_scales(x, w, y, channels: int) -> np.ndarray:
    """Per output channel, (input scale * weight scale) / output scale in float32 (ONNX Runtime's
    ComputeOutputScale), the one weight scale repeated when it is per tensor."""
    xs, ys = np.float32(x.quant.scale[0]), np.float32(y.quant.scale[0])
    ws = np.asarray(w.quant.scale, dtype=np.float32)
    if ws.size == 1:
        ws = np.repeat(ws, channels)
    return ((xs * ws).astype(np.float32) / ys).astype(np.float32)


def scale_expr(ctx, x, w, y, channels: int, index: str) -> str:
    """The C expression of channel ``index``'s float scale: a literal when every channel has the same
    one, else a named const array ``..._scale`` indexed by it."""
    scales = float_scales(x, w, y, channels)
    if np.all(scales == scales[0]):
        return c_float(float(scales[0]))
    name = ctx.const(
        "scale",
        scales,
        comment=f"ONNX Runtime's requantization scale per output channel [{channels}]: "
        "input scale * weight scale / output scale in float32",
    )
    return f"{name}[{index}]"
