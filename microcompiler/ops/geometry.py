"""The spatial geometry shared by the windowed operators (CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV,
AVERAGE/MAX_POOL_2D, L2_POOL_2D), as TFLite Micro computes it (``ComputePaddingHeightWidth``,
``ComputeOutSize`` in tensorflow/lite/kernels/padding.h): output size from SAME/VALID padding,
strides and dilation; the padding before (top/left; the odd extra row or column goes after); the C
expressions of the input row/column a tap or window reads.
"""

from __future__ import annotations

from dataclasses import dataclass


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
            ("iy", self.out_h, self.in_h, self.k_h, self.stride_h, self.dil_h, self.pad_h)
            if axis == "y"
            else ("ix", self.out_w, self.in_w, self.k_w, self.stride_w, self.dil_w, self.pad_w)
        )
        last = (out - 1) * stride + (k - 1) * dil - pad
        conds = ([f"{var} < 0"] if pad > 0 else []) + ([f"{var} >= {size}"] if last >= size else [])
        return " || ".join(conds)

    def tap_expr(self, axis: str) -> str:
        """C expression of the input row ("y") or column ("x") a tap reads."""
        o, k, stride, dil, pad = (
            ("oy", "ky", self.stride_h, self.dil_h, self.pad_h)
            if axis == "y"
            else ("ox", "kx", self.stride_w, self.dil_w, self.pad_w)
        )
        expr = o if stride == 1 else f"{o} * {stride}"
        if pad:
            expr += f" - {pad}"
        k_size = self.k_h if axis == "y" else self.k_w
        if k_size == 1:  # one tap: the loop over it is omitted (tap 0)
            return expr
        return expr + (f" + {k}" if dil == 1 else f" + {k} * {dil}")

    def describe(self) -> str:
        """One line: shapes, kernel, stride, and dilation and padding where they are not 0/1."""
        text = (
            f"{self.batches}x{self.in_h}x{self.in_w}x{self.in_c} -> {self.batches}x{self.out_h}x{self.out_w}x"
            f"{self.out_c}, kernel {self.k_h}x{self.k_w}, stride {self.stride_h}x{self.stride_w}"
        )
        if (self.dil_h, self.dil_w) != (1, 1):
            text += f", dilation {self.dil_h}x{self.dil_w}"
        if self.pad_h or self.pad_w:
            text += f", padding top {self.pad_h} left {self.pad_w}"
        return text

    def values(self) -> dict:
        return dict(
            g=self,
            check_y=self.bounds_check("y"),
            check_x=self.bounds_check("x"),
            iy_expr=self.tap_expr("y"),
            ix_expr=self.tap_expr("x"),
            describe=self.describe(),
        )

    @property
    def always_inside(self) -> bool:
        return not (self.bounds_check("y") or self.bounds_check("x"))


def out_size(padding: str, size: int, k: int, stride: int, dil: int) -> int:
    eff = (k - 1) * dil + 1
    return (size + stride - 1) // stride if padding == "SAME" else (size + stride - eff) // stride


def padding_before(size: int, k: int, stride: int, dil: int, out: int) -> int:
    total = (out - 1) * stride + (k - 1) * dil + 1 - size
    return max(total, 0) // 2


def pool_geometry(in_size: int, filter_size: int, stride: int, padding: str) -> tuple[int, int]:
    """(output size, padding before) of one spatial dimension of a pooling window (dilation 1)."""
    out = out_size(padding, in_size, filter_size, stride, 1)
    return out, padding_before(in_size, filter_size, stride, 1, out)


def origin_expr(var: str, stride: int, pad: int) -> str:
    """C expression of a window's first input row/column for output index ``var``."""
    expr = var if stride == 1 else f"{var} * {stride}"
    return f"{expr} - {pad}" if pad else expr
