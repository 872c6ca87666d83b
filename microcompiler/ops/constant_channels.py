"""MC_CONSTANT_CHANNELS: not a TFLite operator but the second half of an operator whose all-zero
output channels the ``drop_zero_channels`` pass removed (passes/zero_channels.py).

Input 0 holds the computed channels of every pixel, packed; it shares the output's memory, so the
loop runs from the last pixel and channel to the first: each element is read before anything is
written over it (element (p, c) of the output lies at or after element (p, source[c]) of the input).
``source_channel[c]`` is the packed channel that output channel c comes from, or -1 for a constant
channel, whose value is ``constant_value[c]``.
"""

from __future__ import annotations

from microcompiler.ops.base import OpKernel, register

CONSTANT_CHANNELS = "MC_CONSTANT_CHANNELS"


@register
class ConstantChannels(OpKernel):
    kinds = (CONSTANT_CHANNELS,)
    inputs = (3, 3)
    types = ("int8",)
    internal = True  # made by a pass, never read from a model: not listed by `microcompiler ops`
    input_roles = ("input", "source_channel", "constant_value")

    def emit(self, op, graph, ctx):
        packed, y = ctx.tensor(op.inputs[0]), ctx.tensor(op.outputs[0])
        channels, kept = y.shape[-1], packed.shape[-1]
        return ctx.render(
            "constant_channels.c.j2",
            pixels=y.size // channels,
            channels=channels,
            kept=kept,
            dropped=channels - kept,
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            source=ctx.arg(op.inputs[1]),
            constant=ctx.arg(op.inputs[2]),
        )
