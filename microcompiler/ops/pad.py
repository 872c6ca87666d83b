"""PAD: int8, int16 and float32, with constant int32 or int64 paddings.

TFLM's padding value is the output zero point for int8, but 0 for int16 (whatever its zero point)
and 0.0 for float32; the copied values are not requantized. PADV2 (an explicit padding value) is
not supported.

The generated code walks the output once. Dimensions of extent 1 without padding are dropped and
runs of unpadded dimensions merged, so the innermost loop copies (and pads) contiguous blocks.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.quant import INT_RANGES


@dataclass
class _Dim:
    size: int  # input extent
    left: int
    right: int

    @property
    def out(self) -> int:
        return self.left + self.size + self.right

    @property
    def padded(self) -> bool:
        return self.left > 0 or self.right > 0


def plan_padding(shape, paddings) -> tuple[list[_Dim], _Dim | None, int]:
    """(outer dims, innermost padded dim, contiguous block size in elements).

    The innermost padded dim is None when nothing is padded (the op is a copy)."""
    dims = []
    for size, (left, right) in zip(shape, paddings):
        d = _Dim(int(size), int(left), int(right))
        if d.size == 1 and not d.padded:
            continue
        if dims and not d.padded and not dims[-1].padded:
            dims[-1].size *= d.size
        else:
            dims.append(d)
    block = 1
    while dims and not dims[-1].padded:
        block *= dims.pop().size
    if not dims:
        return [], None, block
    return dims[:-1], dims[-1], block


@register
class Pad(OpKernel):
    kinds = ("PAD",)
    input_roles = ("input", "paddings")
    inputs = (2, 2)
    options = "constant paddings"

    def check(self, op, graph):
        require(len(op.inputs) == 2 and min(op.inputs) >= 0 and len(op.outputs) == 1, op,
                "expects an input and a paddings tensor (PADV2-style padding values are not supported)")
        x, p, y = (graph.tensors[i] for i in (*op.inputs, op.outputs[0]))
        require(x.dtype in ("int8", "int16", "float32"), op,
                f"input type {x.dtype} is not supported (int8, int16, float32)")
        require(y.dtype == x.dtype, op, f"output type {y.dtype} differs from input type {x.dtype}")
        require(p.is_constant, op, "the paddings must be a constant tensor")
        require(p.dtype in ("int32", "int64"), op, f"paddings of type {p.dtype} are not supported (int32, int64)")
        require(len(x.shape) >= 1, op, "the input must have at least one dimension")
        require(p.size == 2 * len(x.shape), op,
                f"paddings {list(p.shape)} do not give two values for each of the {len(x.shape)} input dimensions")
        pads = p.data.reshape(-1, 2)
        require(bool(np.all(pads >= 0)), op, "negative paddings are not supported")
        require(all(d > 0 for d in x.shape), op, f"empty input shape {list(x.shape)} is not supported")
        expected = [int(d + a + b) for d, (a, b) in zip(x.shape, pads)]
        require(list(y.shape) == expected, op,
                f"output shape {list(y.shape)} does not match input {list(x.shape)} plus paddings ({expected})")
        if x.dtype == "int8":
            require(y.quant is not None, op, "the int8 output needs quantization parameters (its zero point pads)")
            lo, hi = INT_RANGES["int8"]
            require(lo <= y.quant.zero_point[0] <= hi, op, "the output zero point is outside the int8 range")

    def emit(self, op, graph, ctx):
        x, p, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1]), ctx.tensor(op.outputs[0])
        outer, inner, block = plan_padding(x.shape, p.data.reshape(-1, 2).tolist())
        ctype = f"{x.dtype}_t" if x.dtype != "float32" else "float"
        if x.dtype == "int8":
            pad_value = str(y.quant.zero_point[0])
        else:
            pad_value = "0.0f" if x.dtype == "float32" else "0"
        return ctx.render("pad.c.j2", ctype=ctype, input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]),
                          outer=outer, inner=inner, block=block, pad_value=pad_value, total=x.size)
