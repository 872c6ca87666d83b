"""DEPTH_TO_SPACE and SPACE_TO_DEPTH: int8 and float32 (TFLM's types), NHWC, constant block size.

Both are permutations of a 6-D view of the tensor (DEPTH_TO_SPACE reads [B, H, W, by, bx, C] in the
order [B, H, by, W, bx, C]; SPACE_TO_DEPTH the reverse), generated as one copy loop nest over the
output with compile-time input strides; values are copied unchanged, as TFLM does.
"""

from __future__ import annotations

from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.spatial_common import Axis, render_copy, require_same_type


@register
class DepthSpace(OpKernel):
    kinds = ("DEPTH_TO_SPACE", "SPACE_TO_DEPTH")
    types = ("int8", "float32")
    options = "block_size"

    def check(self, op, graph):
        x, y = require_same_type(op, graph, self.types)
        require(len(x.shape) == 4, op, f"the input must be 4D (NHWC), not {len(x.shape)}D")
        bs = op.options.get("block_size", 0)
        require(bs >= 1, op, f"block size {bs} must be at least 1")
        b, h, w, c = x.shape
        if op.kind == "DEPTH_TO_SPACE":
            require(c % (bs * bs) == 0, op, f"input depth {c} is not a multiple of block size {bs} squared")
            want = [b, h * bs, w * bs, c // (bs * bs)]
        else:
            require(
                h % bs == 0 and w % bs == 0, op, f"input height {h} and width {w} must be multiples of block size {bs}"
            )
            want = [b, h // bs, w // bs, c * bs * bs]
        require(list(y.shape) == want, op, f"output shape {list(y.shape)} should be {want}")

    def emit(self, op, graph, ctx):
        x = ctx.tensor(op.inputs[0])
        bs = op.options["block_size"]
        b, h, w, c = x.shape
        if op.kind == "DEPTH_TO_SPACE":
            co = c // (bs * bs)
            axes = [Axis(b, h * w * c), Axis(h, w * c), Axis(bs, bs * co), Axis(w, c), Axis(bs, co), Axis(co, 1)]
        else:
            axes = [
                Axis(b, h * w * c),
                Axis(h // bs, bs * w * c),
                Axis(w // bs, bs * c),
                Axis(bs, w * c),
                Axis(bs, c),
                Axis(c, 1),
            ]
        return render_copy(ctx, x.dtype, ctx.arg(op.inputs[0]), ctx.arg(op.outputs[0]), axes)
