"""MIRROR_PAD: int8 and float32 (TFLM's types), REFLECT and SYMMETRIC, constant int32/int64 paddings.

Each output index maps to an input index per dimension exactly as TFLM's mirror_pad.cc computes it
(REFLECT mirrors around the edge element, SYMMETRIC repeats it); the maps are resolved at compile
time into per-dimension offset tables and the output is written in one pass. Values are copied
unchanged (no requantization), as TFLM does.
"""

from __future__ import annotations

import numpy as np

from microcompiler.ops.base import OpKernel, register, require
from microcompiler.ops.spatial_common import Axis, constant_ints, render_copy, require_same_type

MODES = {0: "REFLECT", 1: "SYMMETRIC"}


def mirror_index(i: int, left: int, size: int, offset: int) -> int:
    """The input index read by output index ``i`` of one dimension (offset 1 REFLECT, 0 SYMMETRIC)."""
    if i < left:
        edge = left + offset - 1
        return edge - min(i, edge - offset)
    i -= left
    if i >= size:
        i -= size
        edge = size - (1 + offset)
        return edge - min(i, edge)
    return i


# Without an options table TFLM's parameters stay zeroed (mode "unknown"), and its kernel pads with an
# offset of 0 unless the mode is REFLECT: the SYMMETRIC copy (found by the structure-aware mutator, a PAD
# whose operator code became MIRROR_PAD). A table whose mode field is absent reads REFLECT, the schema's.
_NO_OPTIONS_MODE = 1


@register
class MirrorPad(OpKernel):
    kinds = ("MIRROR_PAD",)
    input_roles = ("input", "paddings")
    inputs = (2, 2)
    types = ("int8", "float32")
    options = "mode (REFLECT, SYMMETRIC), constant paddings"

    def _plan(self, op, graph):
        x = graph.tensors[op.inputs[0]]
        pads = constant_ints(op, graph, 1, "paddings", ("int32", "int64"))
        mode = op.options.get("mode", _NO_OPTIONS_MODE)
        require(mode in MODES, op, f"mirror padding mode {mode} is not supported (REFLECT, SYMMETRIC)")
        require(
            pads.shape == (len(x.shape), 2),
            op,
            f"paddings {list(pads.shape)} should be [{len(x.shape)}, 2] for a {len(x.shape)}D input",
        )
        offset = 1 if MODES[mode] == "REFLECT" else 0
        maps = []
        for size, (left, right) in zip(x.shape, pads.tolist()):
            require(left >= 0 and right >= 0, op, f"negative paddings {pads.tolist()} are not supported")
            idx = [mirror_index(i, left, size, offset) for i in range(left + size + right)]
            require(
                all(0 <= k < size for k in idx),
                op,
                f"paddings {[left, right]} are too large for a dimension of {size} in {MODES[mode]} mode",
            )
            maps.append(idx)
        return maps

    def check(self, op, graph):
        x, y = require_same_type(op, graph, self.types)
        require(len(x.shape) >= 1, op, "the input must have at least one dimension")
        maps = self._plan(op, graph)
        want = [len(m) for m in maps]
        require(list(y.shape) == want, op, f"output shape {list(y.shape)} should be {want}")

    def emit(self, op, graph, ctx):
        x = ctx.tensor(op.inputs[0])
        strides = np.cumprod([1] + list(x.shape[::-1]))[:-1][::-1]
        axes = []
        for idx, stride in zip(self._plan(op, graph), strides):
            axes.append(Axis(len(idx), int(stride), [k * int(stride) for k in idx]))
        return f"  /* {MODES[op.options.get('mode', _NO_OPTIONS_MODE)]} */\n" + render_copy(
            ctx, x.dtype, ctx.arg(op.inputs[0]), ctx.arg(op.outputs[0]), axes
        )
