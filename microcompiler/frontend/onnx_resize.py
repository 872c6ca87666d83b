"""ONNX Resize (nearest and linear, 4-D NCHW, scales 1 on N and C) -> IR GATHERs, MULs and ADDs.

The rows and columns an output pixel reads, and linear's weights, depend only on shapes and
attributes: they are computed here, in float32 and in the order of ONNX Runtime's CPU kernel
(``get_original_coordinate``, ``get_nearest_pixel``, ``SetupUpsampleBilinear``), and stored as
constants. Nearest is then two GATHERs (rows, then columns): a copy, bit for bit whatever the
coordinate transformation mode. Linear gathers the four neighbours X11, X21, X12, X22 and computes
``w11 * X11 + w21 * X21 + w12 * X12 + w22 * X22`` left to right with the per-pixel weights
``dx * dy`` multiplied in float32 beforehand, which is ONNX Runtime's expression.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from microcompiler.errors import UnsupportedModelError
from microcompiler.frontend.onnx_values import _const_input, _out, check_elements

F = np.float32
MODES = ("half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn", "align_corners")
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def original_coordinate(mode: str, x: int, scale: F, out_len: int, in_len: int) -> F:
    """ONNX Runtime's source coordinate of output index ``x`` (float32 arithmetic)."""
    xf = F(x)
    if mode == "asymmetric":
        return F(xf / scale)
    if mode == "tf_half_pixel_for_nn":
        return F(F(xf + F(0.5)) / scale)
    if mode == "align_corners":
        return F(0) if out_len == 1 else F(F(xf * F(in_len - 1)) / F(out_len - 1))
    if mode == "pytorch_half_pixel" and out_len <= 1:
        return F(0)
    return F(F(F(xf + F(0.5)) / scale) - F(0.5))


def _c_round(v: float) -> int:
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def nearest_pixel(mode: str, v: F) -> int:
    f = float(v)
    if mode == "floor":
        return math.floor(f)
    if mode == "ceil":
        return math.ceil(f)
    if mode == "round_prefer_floor" and f == float(F(F(math.trunc(f)) + F(0.5))):
        return math.floor(f)
    return _c_round(f)


def nearest_indices(mode: str, nearest: str, scale: F, out_len: int, in_len: int) -> list[int]:
    rows = [nearest_pixel(nearest, original_coordinate(mode, i, scale, out_len, in_len)) for i in range(out_len)]
    return [min(max(r, 0), in_len - 1) for r in rows]


def linear_weights(mode: str, scale: F, out_len: int, in_len: int):
    """(lower indices, upper indices, weights of the lower, weights of the upper), as SetupUpsampleBilinear."""
    lo, hi, w_lo, w_hi = [], [], [], []
    for i in range(out_len):
        v = F(i) if scale == 1 else original_coordinate(mode, i, scale, out_len, in_len)
        v = F(max(F(0), min(v, F(in_len - 1))))
        a = min(int(v), in_len - 1)
        b = min(a + 1, in_len - 1)
        d1, d2 = (F(0.5), F(0.5)) if a == b else (F(abs(F(v - F(a)))), F(abs(F(v - F(b)))))
        lo.append(a)
        hi.append(b)
        w_lo.append(d2)  # the lower neighbour's weight is the distance to the upper one
        w_hi.append(d1)
    return lo, hi, np.array(w_lo, F), np.array(w_hi, F)


def _sizes(imp, node, ins, x) -> tuple[list[int], list[F]]:
    def given(k):
        v = ins[k] if len(ins) > k else None
        if v is None:
            return None
        arr = np.asarray(_const_input(imp, node, v, "scales/sizes")).reshape(-1)
        return arr if arr.size else None

    sizes, scales = given(3), given(2)
    if sizes is not None and len(sizes) == 4:
        out = [int(s) for s in sizes]
        return out, [F(F(o) / F(i)) for o, i in zip(out, x.shape)]
    if scales is not None and len(scales) == 4:
        sc = [F(s) for s in scales]
        return [int(F(s * F(i))) for s, i in zip(sc, x.shape)], sc
    raise UnsupportedModelError(f"{imp.where(node)}: Resize needs constant scales or sizes for the 4 dimensions")


def _gather(imp, source: int, indices: list[int], axis: int, name: str) -> int:
    shape = list(imp.tensors[source].shape)
    if indices == list(range(shape[axis])):
        return source
    shape[axis] = len(indices)
    idx = imp.const(np.array(indices, dtype=np.int32), "indices", "int32")
    return imp.emit("GATHER", [source, idx], tuple(shape), {"axis": axis, "batch_dims": 0}, name)


def resize(imp: Any, node: Any, ins: list, attrs: dict):
    x = ins[0]
    imp.float_input(x, node)
    mode = attrs.get("mode", "nearest")
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
    nearest = attrs.get("nearest_mode", "round_prefer_floor")
    if len(x.shape) != 4 or mode not in ("nearest", "linear") or ctm not in MODES or nearest not in NEAREST:
        raise UnsupportedModelError(
            f"{imp.where(node)}: Resize mode {mode!r}, coordinate_transformation_mode {ctm!r}, nearest_mode "
            f"{nearest!r} on a {len(x.shape)}-D input; microcompiler imports nearest and linear on NCHW with "
            f"{', '.join(MODES)}"
        )
    if (
        int(attrs.get("antialias", 0))
        or "axes" in attrs
        or attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch"
    ):
        raise UnsupportedModelError(f"{imp.where(node)}: Resize with antialias, axes or keep_aspect_ratio_policy")
    out, scales = _sizes(imp, node, ins, x)
    if out[:2] != list(x.shape[:2]) or min(out) < 1:
        raise UnsupportedModelError(f"{imp.where(node)}: Resize of {list(x.shape)} to {out}; only H and W may change")
    (h, w), (oh, ow) = x.shape[2:], out[2:]
    check_elements(node.output[0], out)  # before the tables, which are as large
    shape = (x.shape[0], x.shape[1], oh, ow)
    source = imp.nhwc(x)
    name = node.output[0]
    if mode == "nearest":
        rows = _gather(imp, source, nearest_indices(ctm, nearest, scales[2], oh, h), 1, name + "_rows")
        cols = nearest_indices(ctm, nearest, scales[3], ow, w)
        if rows == source and cols == list(range(w)):
            return [
                _out(imp, "RESHAPE", [source, imp.shape_const((shape[0], oh, ow, shape[1]))], shape, {}, node, True)
            ]
        idx = imp.const(np.array(cols, dtype=np.int32), "indices", "int32")
        return [_out(imp, "GATHER", [rows, idx], shape, {"axis": 2, "batch_dims": 0}, node, True)]
    y1, y2, wy1, wy2 = linear_weights(ctm, scales[2], oh, h)
    x1, x2, wx1, wx2 = linear_weights(ctm, scales[3], ow, w)
    top, bottom = (_gather(imp, source, r, 1, f"{name}_{k}") for k, r in (("y1", y1), ("y2", y2)))
    corners = [(top, x1, wy1, wx1), (top, x2, wy1, wx2), (bottom, x1, wy2, wx1), (bottom, x2, wy2, wx2)]
    ir_shape = (shape[0], oh, ow, shape[1])
    total = -1
    for k, (rows, cols, wy, wx) in enumerate(corners):
        value = _gather(imp, rows, cols, 2, f"{name}_x{k}")
        weights = (wx[None, :] * wy[:, None]).astype(F).reshape(1, oh, ow, 1)  # dx * dy, as ONNX Runtime
        term = imp.emit("MUL", [value, imp.const(weights, "weights")], ir_shape, {"activation": "NONE"}, f"{name}_t{k}")
        if total < 0:
            total = term
            continue
        options = {"activation": "NONE", "pot_scale_int16": True}
        if k < 3:
            total = imp.emit("ADD", [total, term], ir_shape, options, f"{name}_s{k}")
        else:
            return [_out(imp, "ADD", [total, term], shape, options, node, True)]
    raise AssertionError("unreachable")
