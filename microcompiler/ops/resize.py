"""RESIZE_BILINEAR (int8, float32) and RESIZE_NEAREST_NEIGHBOR (int8, int16, float32): NHWC, constant
output size, align_corners and half_pixel_centers, as TFLM's reference kernels.

Every source row and column (and, for bilinear, its interpolation weight) depends only on shapes
and options, so it is computed here once with TFLM's own arithmetic (float32 for the float and
nearest-neighbour kernels, 10-bit fixed point for int8 bilinear) and stored in flash as tables.
The int8 bilinear kernel sums the four weighted neighbours exactly (weights scaled by 2^20) and
rounds half away from zero, as TFLM's ResizeBilinearInteger does. Values are not requantized.
"""

from __future__ import annotations

import math

import numpy as np

from microcompiler.ops.base import OpKernel, register, require, require_consistent
from microcompiler.ops.spatial_common import CTYPES, Axis, constant_ints, render_copy, require_same_type

F = np.float32


def _c_div(a: int, b: int) -> int:
    """C's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def nearest_index(i: int, in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> int:
    """The input index TFLM's nearest-neighbour resize reads for output index ``i`` (float32 maths)."""
    scale = F(in_size - 1) / F(out_size - 1) if align_corners and out_size > 1 else F(in_size) / F(out_size)
    v = (F(i) + F(0.5 if half_pixel else 0.0)) * F(scale)
    k = int(math.copysign(math.floor(abs(float(v)) + 0.5), float(v))) if align_corners else int(math.floor(v))
    k = min(k, in_size - 1)
    return max(0, k) if half_pixel else k


def bilinear_float(i: int, in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    """(lower index, upper index, weight of the upper one) of output index ``i``, in float32."""
    scale = F(in_size - 1) / F(out_size - 1) if align_corners and out_size > 1 else F(in_size) / F(out_size)
    v = (F(i) + F(0.5)) * F(scale) - F(0.5) if half_pixel else F(i) * F(scale)
    lo = max(int(math.floor(v)), 0)
    hi = min(int(math.ceil(v)), in_size - 1)
    return lo, hi, F(v - F(lo))


def bilinear_integer(i: int, in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    """(lower index, upper index, weight of the upper one in 1/1024) of output index ``i``."""
    if align_corners and out_size > 1:
        scale = _c_div(1024 * (in_size - 1) + (out_size - 1) // 2, out_size - 1)
    else:
        scale = _c_div(1024 * in_size + out_size // 2, out_size)
    v = i * scale + _c_div(scale, 2) - 512 if half_pixel else i * scale
    lo = max(_c_div(v, 1024), 0)
    hi = min(_c_div(v + 1023, 1024), in_size - 1)
    return lo, hi, v - 1024 * lo


@register
class Resize(OpKernel):
    kinds = ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR")
    tflm_refusals = ("a size tensor that is not one-dimensional (NumDimensions(size) != 1)",)
    input_roles = ("input", "size")
    inputs = (2, 2)
    types = ("int8", "int16", "float32")
    options = "constant size, align_corners, half_pixel_centers"

    def describe(self, kind):
        info = super().describe(kind)
        if kind == "RESIZE_BILINEAR":
            info["types"] = ["int8", "float32"]
        return info

    def _types(self, op):
        return ("int8", "float32") if op.kind == "RESIZE_BILINEAR" else self.types

    def check(self, op, graph):
        x, y = require_same_type(op, graph, self._types(op))
        require(len(x.shape) == 4, op, f"the input must be 4D (NHWC), not {len(x.shape)}D")
        size_t = constant_ints(op, graph, 1, "size")
        require_consistent(
            size_t.ndim == 1, op, f"the size tensor has shape {list(size_t.shape)}; TFLM requires a one-dimensional [2]"
        )
        size = size_t.tolist()
        require(len(size) == 2, op, f"the size tensor holds {len(size)} values; it needs 2 (height, width)")
        require(min(size) >= 1, op, f"output size {size} must be positive")
        align, half = op.options.get("align_corners", False), op.options.get("half_pixel_centers", False)
        require(not (align and half), op, "align_corners and half_pixel_centers cannot both be set")
        want = [x.shape[0], *size, x.shape[3]]
        require(list(y.shape) == want, op, f"output shape {list(y.shape)} should be {want}")
        if op.kind == "RESIZE_BILINEAR" and x.dtype == "int8":
            for n, (i, o) in enumerate(zip(x.shape[1:3], size)):
                lows = [bilinear_integer(k, i, o, align, half)[0] for k in range(o)]
                require(
                    max(lows) < i,
                    op,
                    f"resizing {i} to {o} would read past the input "
                    f"{'height' if n == 0 else 'width'} in TFLM's fixed-point arithmetic",
                )

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        align, half = op.options.get("align_corners", False), op.options.get("half_pixel_centers", False)
        batches, in_h, in_w, depth = x.shape
        out_h, out_w = y.shape[1:3]
        if op.kind == "RESIZE_NEAREST_NEIGHBOR":
            rows = [nearest_index(k, in_h, out_h, align, half) * in_w * depth for k in range(out_h)]
            cols = [nearest_index(k, in_w, out_w, align, half) * depth for k in range(out_w)]
            axes = [
                Axis(batches, in_h * in_w * depth),
                Axis(out_h, offsets=rows),
                Axis(out_w, offsets=cols),
                Axis(depth, 1),
            ]
            return render_copy(ctx, x.dtype, ctx.arg(op.inputs[0]), ctx.arg(op.outputs[0]), axes)
        integer = x.dtype == "int8"
        interp = bilinear_integer if integer else bilinear_float
        tables = {}
        for axis, (n_in, n_out, step) in (("row", (in_h, out_h, in_w * depth)), ("col", (in_w, out_w, depth))):
            entries = [interp(k, n_in, n_out, align, half) for k in range(n_out)]
            tables[axis + "0"] = ctx.const(f"{axis}0", np.array([e[0] * step for e in entries], dtype=np.int32))
            tables[axis + "1"] = ctx.const(f"{axis}1", np.array([e[1] * step for e in entries], dtype=np.int32))
            weights = np.array([e[2] for e in entries], dtype=np.int32 if integer else np.float32)
            tables[axis + "_weight"] = ctx.const(f"{axis}_weight", weights)
        return ctx.render(
            "resize_bilinear.c.j2",
            ctype=CTYPES[x.dtype],
            integer=integer,
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            batches=batches,
            batch_size=in_h * in_w * depth,
            out_h=out_h,
            out_w=out_w,
            depth=depth,
            one="1.0f" if not integer else "1024",
            **tables,
        )
