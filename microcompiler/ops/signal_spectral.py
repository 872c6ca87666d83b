"""TFLM's stateless signal operators on frames and spectra (custom operators an audio front end is
made of; tensorflow/tflite-micro signal/micro/kernels): ``SignalWindow``, ``SignalEnergy`` and
``SignalFftAutoScale``. Integer arithmetic exactly as TFLM's signal library, wrapping included.

Their options are flexbuffer maps that TFLM reads by position, so the keys must be exactly the
expected ones (``custom_options.exact_keys``).
"""

from __future__ import annotations

from microcompiler.ops import custom_options as opt
from microcompiler.ops.base import OpKernel, register, require

_INT16_BITS = 16


def require_types(op, graph, inputs, outputs):
    """Each listed input/output position has the listed dtype (TFLM's Prepare checks)."""
    for kind, positions, tensors in (("input", inputs, op.inputs), ("output", outputs, op.outputs)):
        for k, dtype in positions.items():
            t = graph.tensors[tensors[k]]
            require(t.dtype == dtype, op, f"{kind} {k} ('{t.name}') is {t.dtype}; TFLM runs only {dtype} here")


def require_rank(op, graph, tensor, rank, what):
    t = graph.tensors[tensor]
    require(len(t.shape) == rank, op, f"{what} of shape {list(t.shape)} must have rank {rank}")
    return t


def integer_option(op, key, low, high) -> int:
    """Integer option ``key``, which must lie in [low, high]."""
    value = opt.integer(op, key)
    require(low <= value <= high, op, f"{key} {value} must lie in [{low}, {high}]")
    return value


class SignalKernel(OpKernel):
    """A signal operator's checks: its option keys and the dtypes TFLM's Prepare requires (the
    positions of ``input_types`` / ``output_types``), then the kernel's own ``check_config``."""

    quantized_io = False  # the signal operators read raw integers, with no quantization parameters
    keys: tuple[str, ...] = ()
    input_types: dict[int, str] = {}
    output_types: dict[int, str] = {}

    def check(self, op, graph):
        if self.keys:  # operators without options ignore whatever map they carry, as TFLM
            opt.exact_keys(op, self.keys)
        require_types(op, graph, self.input_types, self.output_types)
        self.check_config(op, graph)

    def check_config(self, op, graph):
        """Shapes and options beyond the keys and dtypes (none by default)."""


@register
class Window(SignalKernel):
    """Multiplies each frame (input rows as long as the window) by the window, then shifts right
    (arithmetic) and saturates to int16."""

    kinds = ("SignalWindow",)
    input_roles = ("input", "window")
    inputs = (2, 2)
    types = ("int16",)
    type_notes = "input, window (rank 1) and output int16; the input holds whole frames"
    options = "custom (flexbuffer): shift (0-31)"
    keys = ("shift",)
    input_types = {0: "int16", 1: "int16"}
    output_types = {0: "int16"}

    def check_config(self, op, graph):
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        w = require_rank(op, graph, op.inputs[1], 1, "window")
        require(
            len(x.shape) >= 1 and list(y.shape) == list(x.shape),
            op,
            f"output shape {list(y.shape)} must equal the input shape {list(x.shape)}",
        )
        require(x.size % w.size == 0, op, f"input of {x.size} values is not whole frames of the {w.size}-value window")
        integer_option(op, "shift", 0, 31)

    def inplace_inputs(self, op, graph):
        return (0,)

    def emit(self, op, graph, ctx):
        x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
        return ctx.render(
            "signal_window.c.j2",
            input=ctx.arg(op.inputs[0]),
            window=ctx.arg(op.inputs[1]),
            output=ctx.arg(op.outputs[0]),
            frames=x.size // w.size,
            length=w.size,
            shift=opt.integer(op, "shift"),
        )


@register
class Energy(SignalKernel):
    """Squared magnitude of the complex bins [start_index, end_index) of an int16 spectrum
    (real, imaginary interleaved) as uint32; the other output bins are zero (TFLM leaves them)."""

    kinds = ("SignalEnergy",)
    types = ("int16",)
    type_notes = "input int16 (interleaved complex), output uint32"
    options = "custom (flexbuffer): start_index, end_index"
    keys = ("end_index", "start_index")
    input_types = {0: "int16"}
    output_types = {0: "uint32"}

    def _range(self, op, graph):
        x = require_rank(op, graph, op.inputs[0], 1, "input")
        y = require_rank(op, graph, op.outputs[0], 1, "output")
        start, end = opt.integer(op, "start_index"), opt.integer(op, "end_index")
        require(
            0 <= start <= end <= y.size and 2 * end <= x.size,
            op,
            f"bins [{start}, {end}) must lie within the output's {y.size} and the input's {x.size // 2} bins",
        )
        return start, end, y.size

    def check_config(self, op, graph):
        self._range(op, graph)

    def emit(self, op, graph, ctx):
        start, end, bins = self._range(op, graph)
        return ctx.render(
            "signal_energy.c.j2",
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            start=start,
            end=end,
            bins=bins,
        )


@register
class FftAutoScale(SignalKernel):
    """Shifts an int16 frame left as far as its largest magnitude allows (output 0) and returns the
    shift (output 1, int32 scalar); the largest magnitude is found as TFLM's MaxAbs16, whose int16
    arithmetic wraps for -32768 (then no shift)."""

    kinds = ("SignalFftAutoScale",)
    outputs = (2, 2)
    types = ("int16",)
    type_notes = "input and output int16 (rank 1), scale bits int32 (scalar)"
    options = "-"
    keys = ()
    input_types = {0: "int16"}
    output_types = {0: "int16", 1: "int32"}

    def check_config(self, op, graph):
        x = require_rank(op, graph, op.inputs[0], 1, "input")
        y = require_rank(op, graph, op.outputs[0], 1, "output")
        require(y.size == x.size, op, f"output of {y.size} values must match the input's {x.size}")
        require_rank(op, graph, op.outputs[1], 0, "scale bits")

    def emit(self, op, graph, ctx):
        return ctx.render(
            "signal_fft_auto_scale.c.j2",
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            scale_bits=ctx.arg(op.outputs[1]),
            size=graph.tensors[op.inputs[0]].size,
            int16_bits=_INT16_BITS,
        )
