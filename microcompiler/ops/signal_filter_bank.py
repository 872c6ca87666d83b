"""TFLM's stateless filter-bank signal operators (custom operators of an audio front end;
tensorflow/tflite-micro signal/micro/kernels): ``SignalFilterBank`` (triangular mel channels over
an energy spectrum), ``SignalFilterBankSquareRoot``, ``SignalFilterBankLog`` and ``SignalPCAN``
(per-channel automatic gain control). Integer arithmetic exactly as TFLM's signal library; the
helpers live in crt's kernel_signal.h.
"""

from __future__ import annotations

import numpy as np

from microcompiler.errors import UnsupportedModelError
from microcompiler.ops import custom_options as opt
from microcompiler.ops.base import register, require
from microcompiler.ops.signal_spectral import SignalKernel, integer_option, require_rank

_LOG_SEGMENTS = 128  # TFLM's log table: log2(1 + f) - f at f = k / 128, in 1/65536
_LOG_SCALE = 1 << 16
_PCAN_LUT_ENTRIES = 4 * 32 - 6 + 3  # the largest octave (32) reads lut[4 * 32 - 6 + 2]


def log_table() -> np.ndarray:
    """The 129 segment corrections of mc_log32 plus one zero of padding (TFLM's table)."""
    f = np.arange(_LOG_SEGMENTS + 1, dtype=np.float64) / _LOG_SEGMENTS
    table = np.floor((np.log2(1.0 + f) - f) * _LOG_SCALE + 0.5).astype(np.uint16)
    return np.concatenate([table, np.zeros(1, np.uint16)])


def _channels(op, graph, *tensors):
    """The common length of the listed rank-1 tensors (op.inputs / op.outputs indices)."""
    sizes = {t: require_rank(op, graph, t, 1, f"tensor '{graph.tensors[t].name}'").size for t in tensors}
    require(len(set(sizes.values())) == 1, op, f"channel counts {sorted(set(sizes.values()))} differ")
    return next(iter(sizes.values()))


@register
class FilterBank(SignalKernel):
    """Accumulates each channel's weighted energy in uint64; each frequency also adds its unweight
    to the next channel. The configuration (weights, unweights, channel starts and widths) must be
    constant (it is in every converted front end) and is checked against the spectrum's size."""

    kinds = ("SignalFilterBank",)
    input_roles = (
        "input",
        "weights",
        "unweights",
        "channel_frequency_starts",
        "channel_weight_starts",
        "channel_widths",
    )
    inputs = (6, 6)
    types = ("uint32",)
    type_notes = "energy uint32, configuration int16 (constant), output uint64"
    options = "custom (flexbuffer): num_channels"
    keys = ("num_channels",)
    input_types = {0: "uint32", 1: "int16", 2: "int16", 3: "int16", 4: "int16", 5: "int16"}
    output_types = {0: "uint64"}

    def _config(self, op, graph):
        x = require_rank(op, graph, op.inputs[0], 1, "input")
        tensors = [graph.tensors[i] for i in op.inputs[1:]]
        for t in tensors:
            if not t.is_constant:
                raise UnsupportedModelError(
                    f"operator {op.index} ({op.kind}): a filter bank whose configuration "
                    f"'{t.name}' is computed at run time is not supported yet"
                )
            require(len(t.shape) == 1, op, f"'{t.name}' of shape {list(t.shape)} must have rank 1")
        weights, unweights, freq_starts, weight_starts, widths = (t.data.astype(np.int64) for t in tensors)
        channels = opt.integer(op, "num_channels")
        y = require_rank(op, graph, op.outputs[0], 1, "output")
        require(
            channels >= 1 and y.size == channels,
            op,
            f"num_channels {channels} must be at least 1 and the output's {y.size} values",
        )
        require(weights.size == unweights.size, op, f"{weights.size} weights but {unweights.size} unweights")
        require(
            min(freq_starts.size, weight_starts.size, widths.size) >= channels + 1,
            op,
            f"channel starts and widths need {channels + 1} entries (a first one that is discarded)",
        )
        for ch in range(channels + 1):
            w = max(int(widths[ch]), 0)
            require(
                w == 0
                or (
                    0 <= freq_starts[ch]
                    and freq_starts[ch] + w <= x.size
                    and 0 <= weight_starts[ch]
                    and weight_starts[ch] + w <= weights.size
                ),
                op,
                f"channel {ch} reads past the {x.size}-bin spectrum or the {weights.size} weights",
            )
        return channels

    def check_config(self, op, graph):
        self._config(op, graph)

    def macs(self, op, graph):
        return 2 * int(np.maximum(graph.tensors[op.inputs[5]].data, 0).sum())

    def emit(self, op, graph, ctx):
        channels = self._config(op, graph)
        return ctx.render(
            "signal_filter_bank.c.j2",
            input=ctx.arg(op.inputs[0]),
            config=[ctx.arg(i) for i in op.inputs[1:]],
            output=ctx.arg(op.outputs[0]),
            channels=channels,
        )


@register
class FilterBankSquareRoot(SignalKernel):
    """Rounded square root of each uint64 channel, shifted right by the scale bits (a constant, or
    computed at run time, e.g. by SignalFftAutoScale; a run-time shift outside [0, 31], undefined
    in TFLM, gives 0)."""

    kinds = ("SignalFilterBankSquareRoot",)
    input_roles = ("input", "scale_bits")
    inputs = (2, 2)
    types = ("uint64",)
    type_notes = "input uint64, scale bits int32 (scalar), output uint32"
    options = "-"
    keys = ()
    input_types = {0: "uint64", 1: "int32"}
    output_types = {0: "uint32"}

    def _shift(self, op, graph):
        """The constant shift, or None when it is computed at run time."""
        bits = require_rank(op, graph, op.inputs[1], 0, "scale bits")
        if not bits.is_constant:
            return None
        shift = int(bits.data)
        require(0 <= shift < 32, op, f"scale bits {shift} must lie in [0, 31]")
        return shift

    def check_config(self, op, graph):
        _channels(op, graph, op.inputs[0], op.outputs[0])
        self._shift(op, graph)

    def emit(self, op, graph, ctx):
        shift = self._shift(op, graph)
        return ctx.render(
            "signal_filter_bank_sqrt.c.j2",
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            channels=_channels(op, graph, op.inputs[0], op.outputs[0]),
            shift=shift,
            scale_bits=ctx.arg(op.inputs[1]) if shift is None else None,
        )


@register
class FilterBankLog(SignalKernel):
    """ln(channel << input_correction_bits) * output_scale in 1/65536, saturated to int16; 0 for
    channels of 0 or 1."""

    kinds = ("SignalFilterBankLog",)
    types = ("uint32",)
    type_notes = "input uint32, output int16"
    options = "custom (flexbuffer): input_correction_bits (0-31), output_scale"
    keys = ("input_correction_bits", "output_scale")
    input_types = {0: "uint32"}
    output_types = {0: "int16"}

    def check_config(self, op, graph):
        _channels(op, graph, op.inputs[0], op.outputs[0])
        integer_option(op, "input_correction_bits", 0, 31)
        opt.integer(op, "output_scale")

    def emit(self, op, graph, ctx):
        bits = opt.integer(op, "input_correction_bits")
        scale = opt.integer(op, "output_scale") & 0xFFFFFFFF  # TFLM passes it as uint32
        table = ctx.const("log_table", log_table(), "uint16_t")
        return ctx.render(
            "signal_filter_bank_log.c.j2",
            input=ctx.arg(op.inputs[0]),
            output=ctx.arg(op.outputs[0]),
            channels=_channels(op, graph, op.inputs[0], op.outputs[0]),
            bits=bits,
            scale=scale,
            table=table,
        )


@register
class Pcan(SignalKernel):
    """Per-channel energy normalisation: the gain for each channel's noise estimate (from the gain
    table), times the channel, shifted right by snr_shift, then PCAN's shrink function."""

    kinds = ("SignalPCAN",)
    input_roles = ("input", "noise_estimate", "gain_lut")
    inputs = (3, 3)
    types = ("uint32",)
    type_notes = f"input, noise estimate and output uint32, gain table int16 ({_PCAN_LUT_ENTRIES} entries or more)"
    options = "custom (flexbuffer): snr_shift (0-63)"
    keys = ("snr_shift",)
    input_types = {0: "uint32", 1: "uint32", 2: "int16"}
    output_types = {0: "uint32"}

    def check_config(self, op, graph):
        _channels(op, graph, op.inputs[0], op.inputs[1], op.outputs[0])
        lut = require_rank(op, graph, op.inputs[2], 1, "gain table")
        require(
            lut.size >= _PCAN_LUT_ENTRIES,
            op,
            f"gain table of {lut.size} entries is shorter than the "
            f"{_PCAN_LUT_ENTRIES} that noise estimates up to 2^32 read",
        )
        integer_option(op, "snr_shift", 0, 63)

    def inplace_inputs(self, op, graph):
        return (0,)

    def emit(self, op, graph, ctx):
        return ctx.render(
            "signal_pcan.c.j2",
            input=ctx.arg(op.inputs[0]),
            noise=ctx.arg(op.inputs[1]),
            lut=ctx.arg(op.inputs[2]),
            output=ctx.arg(op.outputs[0]),
            channels=_channels(op, graph, op.inputs[0], op.outputs[0]),
            snr_shift=opt.integer(op, "snr_shift"),
        )
