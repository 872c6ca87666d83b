"""Single-operator and front-end models of TFLM's signal operators (custom operators), shared by
tests/test_op_signal.py and the board test."""

from __future__ import annotations

import numpy as np
from model_builder import ModelBuilder

CHANNELS = 6
SPECTRUM_BINS = 33  # a 64-point FFT


def filter_bank_config(channels=CHANNELS, bins=SPECTRUM_BINS, seed=0):
    """A mel-like configuration: channels + 1 overlapping bands over the spectrum, weights in 1/4096
    and their unweights (4096 - weight); the first band only feeds channel 1's unweights."""
    rng = np.random.default_rng(seed)
    edges = np.linspace(1, bins - 1, channels + 2).astype(np.int16)
    freq_starts = edges[:-1]
    widths = np.maximum(edges[1:] - edges[:-1], 1).astype(np.int16)
    weight_starts = np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.int16)
    weights = rng.integers(0, 4097, int(widths.sum())).astype(np.int16)
    return dict(
        weights=weights,
        unweights=(4096 - weights).astype(np.int16),
        freq_starts=freq_starts,
        weight_starts=weight_starts,
        widths=widths,
    )


def add_filter_bank(b, energy, channels=CHANNELS, bins=SPECTRUM_BINS, prefix="", seed=0, options=None):
    c = filter_bank_config(channels, bins, seed)
    config = [b.constant(f"{prefix}{k}", v) for k, v in c.items()]
    y = b.activation(f"{prefix}filter_bank", [channels], "uint64")
    b.custom_op(
        "SignalFilterBank", [energy] + config, [y], options if options is not None else {"num_channels": channels}
    )
    return y


def pcan_gain_lut(entries=132):
    """A gain table with realistic magnitudes (a gain that falls with the noise estimate)."""
    k = np.arange(entries)
    return (2048 + 1500 * np.cos(k / 7.0) - 8 * k).astype(np.int16)


def add_pcan(b, x, noise, channels=CHANNELS, prefix="", snr_shift=6, lut_entries=132):
    lut = b.constant(f"{prefix}gain_lut", pcan_gain_lut(lut_entries))
    y = b.activation(f"{prefix}pcan", [channels], "uint32")
    b.custom_op("SignalPCAN", [x, noise, lut], [y], {"snr_shift": snr_shift})
    return y


def add_log(b, x, channels=CHANNELS, prefix="", bits=3, scale=1600):
    y = b.activation(f"{prefix}log", [channels], "int16")
    b.custom_op("SignalFilterBankLog", [x], [y], {"input_correction_bits": bits, "output_scale": scale})
    return y


def add_square_root(b, x, channels=CHANNELS, prefix="", scale_bits=3):
    bits = b.constant(f"{prefix}scale_bits", np.array([scale_bits], np.int32))
    b.tensors[bits].shape = []  # a scalar, as TFLM wants (the builder stores constants at least 1-D)
    y = b.activation(f"{prefix}sqrt", [channels], "uint32")
    b.custom_op("SignalFilterBankSquareRoot", [x, bits], [y])
    return y


FRAME = 48  # samples per audio frame, zero-padded to a 64-point FFT


def front_end_model() -> bytes:
    """A whole audio front end but its stateful steps: an int16 audio frame -> window -> FFT auto
    scale -> real FFT -> energy -> mel filter bank -> square root (shifted back by the auto scale's
    bits, computed at run time) -> PCAN (noise estimate input) -> log; outputs the log features."""
    b = ModelBuilder()
    audio = b.activation("audio", [FRAME], "int16")
    hann = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(FRAME) / FRAME)) * (1 << 12)
    window = b.constant("hann", hann.astype(np.int16))
    windowed = b.activation("windowed", [FRAME], "int16")
    b.custom_op("SignalWindow", [audio, window], [windowed], {"shift": 12})
    scaled, bits = b.activation("scaled", [FRAME], "int16"), b.activation("scale_bits", [], "int32")
    b.custom_op("SignalFftAutoScale", [windowed], [scaled, bits])
    spectrum = b.activation("spectrum", [2 * SPECTRUM_BINS], "int16")
    b.custom_op("SignalRfft", [scaled], [spectrum], {"T": 7, "fft_length": 2 * (SPECTRUM_BINS - 1)})
    energy = b.activation("energy", [SPECTRUM_BINS], "uint32")
    b.custom_op("SignalEnergy", [spectrum], [energy], {"start_index": 0, "end_index": SPECTRUM_BINS})
    bank = add_filter_bank(b, energy)
    root = b.activation("sqrt", [CHANNELS], "uint32")
    b.custom_op("SignalFilterBankSquareRoot", [bank, bits], [root])
    noise = b.activation("noise_estimate", [CHANNELS], "uint32")
    pcan = add_pcan(b, root, noise)
    features = add_log(b, pcan, bits=0, scale=1 << 10)
    return b.finish([audio, noise], [features, bits])


def front_end_inputs(seed):
    rng = np.random.default_rng(seed)
    loudness = 1 << int(rng.integers(6, 15))
    return [
        rng.integers(-loudness, loudness, FRAME).astype(np.int16),
        rng.integers(0, 1 << int(rng.integers(4, 24)), CHANNELS).astype(np.uint32),
    ]
