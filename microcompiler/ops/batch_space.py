"""BATCH_TO_SPACE_ND and SPACE_TO_BATCH_ND: int8 and float32 (TFLM's types), 3-D or 4-D input,
constant int32 block shape and crops/paddings.

BATCH_TO_SPACE_ND is a gather: each output row and column reads a compile-time offset (block
position and input row/column) from a table in flash. SPACE_TO_BATCH_ND walks the output blocks and
fills positions that fall into the padding with 0 (TFLM pads int8 with 0 too, not with the zero
point). Values are copied unchanged, as TFLM does.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.spatial_common import CTYPES, Axis, constant_ints, render_copy, require_same_type


def _as_4d(shape):
    """[B, H, W, C] of a 3-D ([B, H, C], width 1) or 4-D input."""
    return list(shape) if len(shape) == 4 else [shape[0], shape[1], 1, shape[2]]


@register
class BatchSpace(OpKernel):
    kinds = ("BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND")
    input_roles = ("input", "block_shape", "crops")
    inputs = (3, 3)
    types = ("int8", "float32")
    options = "constant block_shape, crops"

    def describe(self, kind):
        info = super().describe(kind)
        if kind == "SPACE_TO_BATCH_ND":
            info["options"] = "constant block_shape, paddings (padded with 0)"
        return info

    def _params(self, op, graph):
        """(block [2], pads [[2], [2]]) for the 4-D view of the input."""
        x = graph.tensors[op.inputs[0]]
        what = "crops" if op.kind == "BATCH_TO_SPACE_ND" else "paddings"
        block = constant_ints(op, graph, 1, "block shape").reshape(-1).tolist()
        pads = constant_ints(op, graph, 2, what)
        spatial = len(x.shape) - 2
        require(
            len(block) == spatial, op, f"block shape {block} should have {spatial} values for a {len(x.shape)}D input"
        )
        require(pads.shape == (spatial, 2), op, f"{what} {list(pads.shape)} should be [{spatial}, 2]")
        require(all(v >= 1 for v in block), op, f"block shape {block} values must be at least 1")
        require(bool(np.all(pads >= 0)), op, f"negative {what} {pads.tolist()} are not supported")
        pads = pads.tolist()
        if spatial == 1:
            block, pads = block + [1], pads + [[0, 0]]
        return block, pads

    def check(self, op, graph):
        x, y = require_same_type(op, graph, self.types)
        require(len(x.shape) in (3, 4), op, f"the input must be 3D or 4D, not {len(x.shape)}D")
        (bh, bw), ((p0, p1), (p2, p3)) = self._params(op, graph)
        b, h, w, c = _as_4d(x.shape)
        if op.kind == "BATCH_TO_SPACE_ND":
            require(b % (bh * bw) == 0, op, f"input batch {b} is not a multiple of the block size {bh * bw}")
            out = [b // (bh * bw), h * bh - p0 - p1, w * bw - p2 - p3, c]
            require(out[1] >= 1 and out[2] >= 1, op, "the crops remove the whole output")
        else:
            require(
                (h + p0 + p1) % bh == 0 and (w + p2 + p3) % bw == 0,
                op,
                f"padded spatial size {[h + p0 + p1, w + p2 + p3]} is not a multiple of the block shape",
            )
            out = [b * bh * bw, (h + p0 + p1) // bh, (w + p2 + p3) // bw, c]
        want = out if len(x.shape) == 4 else [out[0], out[1], out[3]]
        require(list(y.shape) == want, op, f"output shape {list(y.shape)} should be {want}")

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        (bh, bw), pads = self._params(op, graph)
        if op.kind == "BATCH_TO_SPACE_ND":
            return self._batch_to_space(op, ctx, x, (bh, bw), pads)
        return self._space_to_batch(op, ctx, x, y, (bh, bw), pads)

    @staticmethod
    def _batch_to_space(op, ctx, x, block, crops):
        b, h, w, c = _as_4d(x.shape)
        (bh, bw), ((top, bottom), (left, right)) = block, crops
        ob = b // (bh * bw)
        batch = h * w * c  # input elements per batch
        rows = [(y // bh) * w * c + (y % bh) * bw * ob * batch for y in range(top, h * bh - bottom)]
        cols = [(x_ // bw) * c + (x_ % bw) * ob * batch for x_ in range(left, w * bw - right)]
        axes = [Axis(ob, batch), Axis(len(rows), offsets=rows), Axis(len(cols), offsets=cols), Axis(c, 1)]
        return render_copy(ctx, x.dtype, ctx.arg(op.inputs[0]), ctx.arg(op.outputs[0]), axes)

    @staticmethod
    def _space_to_batch(op, ctx, x, y, block, paddings):
        b, h, w, c = _as_4d(x.shape)
        (bh, bw), ((top, bottom), (left, right)) = block, paddings
        oh, ow = (h + top + bottom) // bh, (w + left + right) // bw
        pad = "0.0f" if x.dtype == "float32" else "0"
        return ctx.render(
            "space_to_batch_nd.c.j2",
            ctype=CTYPES[x.dtype],
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            batches=b,
            h=h,
            w=w,
            c=c,
            bh=bh,
            bw=bw,
            top=top,
            left=left,
            oh=oh,
            ow=ow,
            pad=pad,
            pad_rows=top > 0 or bottom > 0 or oh * bh > h + top,
            pad_cols=left > 0 or right > 0 or ow * bw > w + left,
        )
