"""MC_PATCH_COPY: not a TFLite operator but the glue of patch-based execution (passes/patches.py).

It copies a rectangle of ``rows`` x ``cols`` pixels (all channels) from the input, starting at
``src_origin`` (row, column), to the output, starting at ``dst_origin``: the stage input's window
into a patch buffer, a residual operand out of a larger patch buffer, or a patch of the stage's last
layer into the full stage output (which every patch writes a part of). One memcpy per row, or one in
all when the rows are contiguous on both sides.
"""

from __future__ import annotations

from microcompiler.ir import c_type
from microcompiler.ops.base import OpKernel, register
from microcompiler.ops.plan import KernelPlan, Variant

MEMCPY = Variant("memcpy")

PATCH_COPY = "MC_PATCH_COPY"


@register
class PatchCopy(OpKernel):
    kinds = (PATCH_COPY,)
    inputs = (1, 1)
    internal = True  # made by a pass, never read from a model: not listed by `microcompiler ops`
    input_roles = ("input",)

    def kernel_plan(self, op, graph, features=frozenset(), tuning=None):
        """memcpy, and the elements it moves (what the cost model counts, ops/cost_model.py)."""
        return KernelPlan.of(
            MEMCPY, elements=op.options["rows"] * op.options["cols"] * graph.tensors[op.outputs[0]].shape[3]
        )

    def emit(self, op, graph, ctx):
        x, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        o = op.options
        channels = y.shape[3]
        src_row, dst_row = x.shape[2] * channels, y.shape[2] * channels
        src = o["src_origin"][0] * src_row + o["src_origin"][1] * channels
        dst = o["dst_origin"][0] * dst_row + o["dst_origin"][1] * channels
        row_bytes = o["cols"] * channels
        contiguous = o["rows"] == 1 or (row_bytes == src_row == dst_row)
        return ctx.render(
            "patch_copy.c.j2",
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            ctype=c_type(y.dtype),
            rows=o["rows"],
            cols=o["cols"],
            channels=channels,
            src=src,
            dst=dst,
            src_row=src_row,
            dst_row=dst_row,
            block=o["rows"] * row_bytes if contiguous else row_bytes,
            contiguous=contiguous,
        )
