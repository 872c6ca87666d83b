"""PAD and PADV2: int8, int16, int32 and float32, with constant int32 or int64 paddings.

Without a padding value (PAD, or PADV2 without its third input) TFLM pads with the output zero
point for int8, but with 0 for int16 (whatever its zero point), int32 and float32. An explicit
scalar padding value (PADV2's third input, which TFLM also reads for PAD) is copied raw; for int8
it must share the output's quantization, as TFLM requires. A constant value is folded into the
code, one computed at run time is read from its tensor. The copied values are not requantized.

The generated code walks the output once. Dimensions of extent 1 without padding are dropped and
runs of unpadded dimensions merged, so the innermost loop copies (and pads) contiguous blocks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.quant import INT_RANGES, c_float


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
    dims: list[_Dim] = []
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
    kinds = ("PAD", "PADV2")
    input_roles = ("input", "paddings", "value")
    inputs = (2, 3)
    types = ("int8", "int16", "int32", "float32")
    options = "constant int32 paddings, optional padding value; 1-D to 5-D inputs (as TFLM)"
    tflm_refusals = ("paddings of another type than int32, or an input of more than 5 dimensions",)

    def check(self, op, graph):
        require(
            len(op.inputs) in (2, 3) and min(op.inputs[:2]) >= 0 and len(op.outputs) == 1,
            op,
            "expects an input, a paddings tensor and an optional padding value",
        )
        x, p, y = (graph.tensors[i] for i in (*op.inputs[:2], op.outputs[0]))
        require(x.dtype in self.types, op, f"input type {x.dtype} is not supported ({', '.join(self.types)})")
        require(y.dtype == x.dtype, op, f"output type {y.dtype} differs from input type {x.dtype}")
        require(p.is_constant, op, "the paddings must be a constant tensor")
        # TFLM's PadPrepare reads the paddings as int32 (an int64 tensor's words give other paddings) and
        # takes inputs of at most 5 dimensions (PadKernelMaxDimensionCount)
        require(p.dtype == "int32", op, f"paddings of type {p.dtype} are not supported (int32, as TFLM)")
        require(len(x.shape) >= 1, op, "the input must have at least one dimension")
        require(len(x.shape) <= 5, op, f"a {len(x.shape)}-D input is not supported (TFLM pads up to 5-D inputs)")
        require(
            p.size == 2 * len(x.shape),
            op,
            f"paddings {list(p.shape)} do not give two values for each of the {len(x.shape)} input dimensions",
        )
        pads = p.data.reshape(-1, 2)
        require(bool(np.all(pads >= 0)), op, "negative paddings are not supported")
        require(all(d > 0 for d in x.shape), op, f"empty input shape {list(x.shape)} is not supported")
        expected = [int(d + a + b) for d, (a, b) in zip(x.shape, pads)]
        require(
            list(y.shape) == expected,
            op,
            f"output shape {list(y.shape)} does not match input {list(x.shape)} plus paddings ({expected})",
        )
        value = self._value_tensor(op, graph)
        if value is not None:
            require(value.dtype == x.dtype, op, f"padding value type {value.dtype} differs from input type {x.dtype}")
            require(value.size == 1, op, f"the padding value must be a scalar, not shape {list(value.shape)}")
            if x.dtype == "int8":
                same = (
                    value.quant is not None
                    and y.quant is not None
                    and value.quant.zero_point[0] == y.quant.zero_point[0]
                    and float(np.float32(value.quant.scale[0])) == float(np.float32(y.quant.scale[0]))
                )
                require(same, op, "the int8 padding value must share the output's quantization")
        elif x.dtype == "int8":
            require(y.quant is not None, op, "the int8 output needs quantization parameters (its zero point pads)")
            lo, hi = INT_RANGES["int8"]
            require(lo <= y.quant.zero_point[0] <= hi, op, "the output zero point is outside the int8 range")

    @staticmethod
    def _value_tensor(op, graph):
        """PADV2's padding value tensor, or None when absent."""
        if len(op.inputs) < 3 or op.inputs[2] < 0:
            return None
        return graph.tensors[op.inputs[2]]

    def _pad_value(self, op, graph, ctx) -> str:
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        value = self._value_tensor(op, graph)
        if value is None:
            if x.dtype == "int8":
                return str(y.quant.zero_point[0])
            return "0.0f" if x.dtype == "float32" else "0"
        if not value.is_constant:
            return f"{ctx.arg(op.inputs[2])}[0]"
        v = np.asarray(value.data).reshape(-1)[0]
        return c_float(float(v)) if x.dtype == "float32" else str(int(v))

    def emit(self, op, graph, ctx):
        x, p = ctx.tensor(op.inputs[0]), ctx.tensor(op.inputs[1])
        outer, inner, block = plan_padding(x.shape, p.data.reshape(-1, 2).tolist())
        ctype = f"{x.dtype}_t" if x.dtype != "float32" else "float"
        pad_value = self._pad_value(op, graph, ctx)
        return ctx.render(
            "pad.c.j2",
            ctype=ctype,
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            outer=outer,
            inner=inner,
            block=block,
            pad_value=pad_value,
            total=x.size,
        )
