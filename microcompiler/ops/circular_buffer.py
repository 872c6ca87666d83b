"""``CIRCULAR_BUFFER``: TFLM's custom operator for strided streaming convolutions
(tensorflow/lite/micro/kernels/circular_buffer.cc). Each call shifts the buffer of ``num_slots``
int8 samples of ``depth`` values by one sample and appends the input; the output is the buffer.

TFLM keeps the buffer in the output tensor's arena memory; here it is operator-owned state
(``OpKernel.state``, docs/state.md) copied to the output, so it survives whatever the planner puts
in the arena. It starts at zero, where TFLM's holds whatever its arena held until the inputs have
filled every slot (a fresh arena: zeros; tests compare the filled slots). One more difference:
TFLM's ``MicroInterpreter::Reset`` leaves the buffer as it is (the kernel has no reset hook), while
``<model>_reset()`` clears it, so a reset model starts as a freshly loaded one.

Only ``cycles_max`` 1 is compiled (the operator runs on every call). With ``cycles_max`` N > 1,
TFLM aborts the rest of the invocation on N - 1 calls out of N, and with ``cycles_max`` <= 0 it
guesses the period from the output shape; both are refused as not supported yet, as is the second
("valid") output, which TFLM never writes.
"""

from __future__ import annotations

from microcompiler.ops import custom_options as opt
from microcompiler.ops.base import OpKernel, StateBuffer, register, require

_RANK = 4  # input [1, 1, height, depth], output [1, num_slots, height, depth]


@register
class CircularBuffer(OpKernel):
    kinds = ("CIRCULAR_BUFFER",)
    outputs = (1, 2)
    types = ("int8",)
    type_notes = (
        "input int8 [1, 1, h, d], output int8 [1, num_slots, h, d] with the same quantization; state: the buffer"
    )
    options = "custom (flexbuffer): cycles_max (1: runs on every call)"
    quantized_io = False  # raw values are copied

    def _slots(self, op, graph) -> tuple[int, int]:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        require(
            len(x.shape) == _RANK and len(y.shape) == _RANK,
            op,
            f"input {list(x.shape)} and output {list(y.shape)} must have rank {_RANK}",
        )
        require(
            x.shape[0] == y.shape[0] == 1 and x.shape[1] == 1 and list(x.shape[2:]) == list(y.shape[2:]),
            op,
            f"input {list(x.shape)} must be one sample [1, 1, h, d] of the output [1, num_slots, h, d] {list(y.shape)}",
        )
        return y.shape[1], x.size

    def check(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        require(
            x.dtype == "int8" and y.dtype == "int8", op, f"input {x.dtype} and output {y.dtype}: TFLM runs only int8"
        )
        require(x.quant == y.quant, op, "input and output must share their quantization (TFLM copies raw values)")
        if op.options:  # TFLM reads the map by position: it must hold just this key
            opt.exact_keys(op, ("cycles_max",))
        cycles = opt.integer(op, "cycles_max", default=0)
        require(
            cycles == 1,
            op,
            f"cycles_max {cycles} (TFLM ends the invocation early on some calls, or guesses "
            "the period when it is not positive) is not supported yet; only cycles_max 1",
        )
        require(len(op.outputs) == 1, op, "the second ('valid') output is not supported yet (TFLM never writes it)")
        slots, depth = self._slots(op, graph)
        require(slots >= 1, op, f"num_slots {slots} must be positive")

    def state(self, op, graph):
        slots, depth = self._slots(op, graph)
        return [StateBuffer("samples", "int8", (slots, depth))]

    def emit(self, op, graph, ctx):
        slots, depth = self._slots(op, graph)
        return ctx.render(
            "circular_buffer.c.j2",
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            samples=ctx.arg(op.state["samples"]),
            slots=slots,
            depth=depth,
        )
