"""TFLM's stateful signal operators (custom operators of streaming audio front ends,
tensorflow/tflite-micro signal/micro/kernels): ``SignalFramer``, ``SignalStacker``,
``SignalDelay`` and ``SignalOverlapAdd``.

TFLM keeps their state in persistent buffers the kernel allocates (circular buffers of int16
samples), not in model tensors; here each kernel declares that state with ``OpKernel.state`` and
gets static arrays in the model's state section that ``<model>_reset()`` restores (docs/state.md).
The arrays hold the samples oldest first (a linear buffer shifted with ``memmove``) plus a count
of the samples held, which gives the same outputs as TFLM's circular buffer.

Framer and Stacker output a "valid" flag: when it is false, TFLM leaves (part of) the data output
unwritten, and so do these kernels; only the frames TFLM writes are defined.
"""

from __future__ import annotations

from microcompiler.ops import custom_options as opt
from microcompiler.ops.base import StateBuffer, register, require
from microcompiler.ops.signal_fft import _TENSOR_TYPES
from microcompiler.ops.signal_spectral import SignalKernel, require_rank


def _innermost(op, graph, tensor) -> tuple[int, int]:
    """(rows, innermost length) of a tensor of rank >= 1."""
    t = graph.tensors[tensor]
    require(
        len(t.shape) >= 1 and t.size > 0, op, f"tensor '{t.name}' of shape {list(t.shape)} must be non-empty, rank >= 1"
    )
    return t.size // t.shape[-1], t.shape[-1]


@register
class Framer(SignalKernel):
    """Cuts a stream into overlapping frames: each step of ``frame_step`` samples joins the row's
    held samples; once ``frame_size`` are held, the oldest ``frame_size`` are a frame and
    ``frame_step`` of them leave. ``prefill`` starts with ``frame_size - frame_step`` zeros held.
    Output 1 (bool) is false when any step of the call gave no frame."""

    kinds = ("SignalFramer",)
    outputs = (2, 2)
    types = ("int16",)
    type_notes = (
        "input int16 [..., steps x frame_step], output int16 [..., steps, frame_size], valid bool (scalar); "
        "state per row"
    )
    options = "custom (flexbuffer): frame_size, frame_step, prefill"
    keys = ("frame_size", "frame_step", "prefill")
    input_types = {0: "int16"}
    output_types = {0: "int16", 1: "bool"}

    def _config(self, op, graph):
        size, step = opt.integer(op, "frame_size"), opt.integer(op, "frame_step")
        prefill = bool(opt.integer(op, "prefill"))
        rows, inner = _innermost(op, graph, op.inputs[0])
        require(step > 0 and size > 0, op, f"frame_size {size} and frame_step {step} must be positive")
        require(
            inner >= step and inner % step == 0,
            op,
            f"the input's innermost dimension {inner} must be a multiple of frame_step {step}",
        )
        require(not prefill or size >= step, op, f"prefill needs frame_size {size} >= frame_step {step}")
        capacity = -(-size // step) * step  # TFLM's: frame_size rounded up to whole steps
        return dict(
            size=size,
            step=step,
            rows=rows,
            frames=inner // step,
            capacity=capacity,
            prefill=(size - step) if prefill else 0,
        )

    def check_config(self, op, graph):
        c = self._config(op, graph)
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        want = list(x.shape[:-1]) + [c["frames"], c["size"]]
        require(list(y.shape) == want, op, f"output shape {list(y.shape)} must be {want}")
        require_rank(op, graph, op.outputs[1], 0, "valid flag")

    def state(self, op, graph):
        c = self._config(op, graph)
        return [
            StateBuffer("samples", "int16", (c["rows"], c["capacity"])),
            StateBuffer("held", "int32", (1,), c["prefill"]),
        ]

    def emit(self, op, graph, ctx):
        return ctx.render(
            "signal_framer.c.j2",
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            valid=ctx.arg(op.outputs[1]),
            samples=ctx.arg(op.state["samples"]),
            held=ctx.arg(op.state["held"]),
            **self._config(op, graph),
        )


@register
class Stacker(SignalKernel):
    """Stacks ``left + 1 + right`` successive frames of ``num_channels`` values (the first frame
    also stands in for the ``left`` frames before it); a stack is output (valid true) once complete,
    then ``stacker_step`` frames leave."""

    kinds = ("SignalStacker",)
    outputs = (2, 2)
    types = ("int16",)
    type_notes = "input int16 [num_channels], output int16 [num_channels x (left + 1 + right)], valid bool (scalar)"
    options = "custom (flexbuffer): num_channels, stacker_left_context, stacker_right_context, stacker_step"
    keys = ("num_channels", "stacker_left_context", "stacker_right_context", "stacker_step")
    input_types = {0: "int16"}
    output_types = {0: "int16", 1: "bool"}

    def _config(self, op, graph):
        channels = opt.integer(op, "num_channels")
        left, right = opt.integer(op, "stacker_left_context"), opt.integer(op, "stacker_right_context")
        step = opt.integer(op, "stacker_step")
        require(
            channels > 0 and left >= 0 and right >= 0,
            op,
            f"num_channels {channels} must be positive and the contexts {left}, {right} not negative",
        )
        frames = left + 1 + right
        require(0 < step <= frames, op, f"stacker_step {step} must lie in [1, {frames}] (the stacked frames)")
        return dict(channels=channels, left=left, stack=channels * frames, step=channels * step)

    def check_config(self, op, graph):
        c = self._config(op, graph)
        x = require_rank(op, graph, op.inputs[0], 1, "input")
        y = require_rank(op, graph, op.outputs[0], 1, "output")
        require(x.size == c["channels"], op, f"input of {x.size} values must hold num_channels {c['channels']}")
        require(y.size == c["stack"], op, f"output of {y.size} values must hold the stack's {c['stack']}")
        require_rank(op, graph, op.outputs[1], 0, "valid flag")

    def state(self, op, graph):
        c = self._config(op, graph)
        started = [StateBuffer("started", "uint8", (1,))] if c["left"] else []  # read only to pad the left context
        return [StateBuffer("frames", "int16", (c["stack"],)), StateBuffer("held", "int32", (1,))] + started

    def emit(self, op, graph, ctx):
        return ctx.render(
            "signal_stacker.c.j2",
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            valid=ctx.arg(op.outputs[1]),
            frames=ctx.arg(op.state["frames"]),
            held=ctx.arg(op.state["held"]),
            started=ctx.arg(op.state["started"]) if "started" in op.state else None,
            **self._config(op, graph),
        )


@register
class Delay(SignalKernel):
    """Delays each row (innermost dimension) by ``delay_length`` samples, zeros first."""

    kinds = ("SignalDelay",)
    types = ("int16",)
    type_notes = "input and output int16, same shape; state per row"
    options = "custom (flexbuffer): delay_length"
    keys = ("delay_length",)
    input_types = {0: "int16"}
    output_types = {0: "int16"}

    def _config(self, op, graph):
        delay = opt.integer(op, "delay_length")
        require(delay >= 0, op, f"delay_length {delay} must not be negative")
        rows, length = _innermost(op, graph, op.inputs[0])
        return dict(delay=delay, rows=rows, length=length)

    def check_config(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        require(
            list(y.shape) == list(x.shape), op, f"output shape {list(y.shape)} must equal the input's {list(x.shape)}"
        )
        self._config(op, graph)

    def state(self, op, graph):
        c = self._config(op, graph)
        return [StateBuffer("delayed", "int16", (c["rows"], c["delay"]))] if c["delay"] else []

    def emit(self, op, graph, ctx):
        c = self._config(op, graph)
        delayed = ctx.arg(op.state["delayed"]) if c["delay"] else None
        return ctx.render(
            "signal_delay.c.j2", input=ctx.arg(op.inputs[0]), output=ctx.arg(op.outputs[0]), delayed=delayed, **c
        )


@register
class OverlapAdd(SignalKernel):
    """Overlap-add synthesis: each frame of ``frame_size`` is added (int16 saturating) to the row's
    held sum, whose first ``frame_step`` values are output and leave (zeros come in behind)."""

    kinds = ("SignalOverlapAdd",)
    types = ("int16", "float32")
    type_notes = "input [..., frames, frame_size], output [..., frames x frame_step], int16 or float32; state per row"
    options = "custom (flexbuffer): T, frame_step"
    keys = ("T", "frame_step")

    def _config(self, op, graph):
        x = graph.tensors[op.inputs[0]]
        require(
            len(x.shape) >= 2 and x.size > 0, op, f"input of shape {list(x.shape)} must be non-empty frames (rank >= 2)"
        )
        size, frames = x.shape[-1], x.shape[-2]
        step = opt.integer(op, "frame_step")
        require(0 < step <= size, op, f"frame_step {step} must lie in [1, frame_size {size}]")
        return dict(size=size, step=step, frames=frames, rows=x.size // (size * frames))

    def check_config(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        require(
            x.dtype in self.types and y.dtype == x.dtype,
            op,
            f"input {x.dtype} and output {y.dtype} must both be int16 or float32",
        )
        require(
            opt.integer(op, "T") == _TENSOR_TYPES[x.dtype],
            op,
            f"option T {opt.integer(op, 'T')} does not name the tensors' type {x.dtype}",
        )
        c = self._config(op, graph)
        want = list(x.shape[:-2]) + [c["frames"] * c["step"]]
        require(list(y.shape) == want, op, f"output shape {list(y.shape)} must be {want}")

    def state(self, op, graph):
        c = self._config(op, graph)
        return [StateBuffer("sum", graph.tensors[op.inputs[0]].dtype, (c["rows"], c["size"]))]

    def emit(self, op, graph, ctx):
        x = graph.tensors[op.inputs[0]]
        return ctx.render(
            "signal_overlap_add.c.j2",
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            sum=ctx.arg(op.state["sum"]),
            ctype="int16_t" if x.dtype == "int16" else "float",
            saturate=x.dtype == "int16",
            **self._config(op, graph),
        )


_UINT32_MASK = 0xFFFFFFFF


@register
class FilterBankSpectralSubtraction(SignalKernel):
    """Spectral subtraction of a smoothed noise estimate (state, one per channel) from filter bank
    channels, never below ``min_signal_remaining`` of the signal; odd channels smooth with the
    alternate coefficients; ``clamping`` pulls the estimate down to the signal. Output 1 is a copy
    of the estimate. uint32 and uint64 arithmetic wraps as TFLM's."""

    kinds = ("SignalFilterBankSpectralSubtraction",)
    outputs = (2, 2)
    types = ("uint32",)
    type_notes = "input, output and noise estimate uint32 [num_channels]; state: the noise estimate"
    options = (
        "custom (flexbuffer): num_channels, smoothing, one_minus_smoothing, alternate_smoothing, "
        "alternate_one_minus_smoothing, min_signal_remaining, smoothing_bits, spectral_subtraction_bits, clamping"
    )
    keys = (
        "alternate_one_minus_smoothing",
        "alternate_smoothing",
        "clamping",
        "min_signal_remaining",
        "num_channels",
        "one_minus_smoothing",
        "smoothing",
        "smoothing_bits",
        "spectral_subtraction_bits",
    )
    input_types = {0: "uint32"}
    output_types = {0: "uint32", 1: "uint32"}

    def _config(self, op):
        c = {k: opt.integer(op, k) & _UINT32_MASK for k in self.keys}  # TFLM keeps them as uint32
        c["clamping"] = bool(c["clamping"])
        channels = opt.integer(op, "num_channels")
        require(channels > 0, op, f"num_channels {channels} must be positive")
        require(c["smoothing_bits"] < 32, op, f"smoothing_bits {opt.integer(op, 'smoothing_bits')} must lie in [0, 31]")
        require(
            c["spectral_subtraction_bits"] < 64,
            op,
            f"spectral_subtraction_bits {opt.integer(op, 'spectral_subtraction_bits')} must lie in [0, 63]",
        )
        c["num_channels"] = channels
        return c

    def check_config(self, op, graph):
        channels = self._config(op)["num_channels"]
        for what, t in (("input", op.inputs[0]), ("output", op.outputs[0]), ("noise estimate", op.outputs[1])):
            tensor = require_rank(op, graph, t, 1, what)
            require(tensor.size == channels, op, f"{what} of {tensor.size} values must hold num_channels {channels}")

    def state(self, op, graph):
        return [StateBuffer("noise", "uint32", (self._config(op)["num_channels"],))]

    def emit(self, op, graph, ctx):
        return ctx.render(
            "signal_spectral_subtraction.c.j2",
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            noise_out=ctx.arg(op.outputs[1]),
            noise=ctx.arg(op.state["noise"]),
            **self._config(op),
        )
