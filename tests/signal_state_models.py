"""Models of TFLM's stateful signal operators (SignalFramer, SignalStacker, SignalDelay,
SignalOverlapAdd), several configurations side by side in one model per operator, shared by
tests/test_op_signal_state.py and the board test. Each maker returns (model bytes, pairs, buffers):
pairs lists (data output, valid output) positions (TFLM leaves the data unwritten when the flag is
false, so only valid steps compare their data); buffers lists (output, num_slots) of
CIRCULAR_BUFFER outputs, whose slots TFLM has not filled yet hold whatever its arena held."""

from __future__ import annotations

import numpy as np
from model_builder import ModelBuilder, reshape_options
from signal_models import CHANNELS, FRAME, SPECTRUM_BINS, add_filter_bank, add_log, add_pcan

INT16, FLOAT32 = 7, 0  # TFLite's TensorType numbers (the option 'T')


def framer_model(configs=((2, 2, 5, 3, False), (1, 1, 10, 4, True), (1, 3, 4, 4, False), (3, 1, 6, 2, True))):
    """configs: (rows, steps per call, frame_size, frame_step, prefill)."""
    b = ModelBuilder()
    inputs, outputs, pairs = [], [], []
    for n, (rows, steps, size, step, prefill) in enumerate(configs):
        x = b.activation(f"audio{n}", [rows, steps * step], "int16")
        y = b.activation(f"frames{n}", [rows, steps, size], "int16")
        valid = b.activation(f"valid{n}", [], "bool")
        b.custom_op("SignalFramer", [x], [y, valid], {"frame_size": size, "frame_step": step, "prefill": prefill})
        inputs.append(x)
        pairs.append((len(outputs), len(outputs) + 1))
        outputs += [y, valid]
    return b.finish(inputs, outputs), pairs, []


def stacker_model(configs=((3, 2, 1, 1), (4, 0, 2, 3), (2, 1, 0, 2), (5, 3, 2, 6))):
    """configs: (num_channels, left context, right context, step)."""
    b = ModelBuilder()
    inputs, outputs, pairs = [], [], []
    for n, (channels, left, right, step) in enumerate(configs):
        x = b.activation(f"features{n}", [channels], "int16")
        y = b.activation(f"stacked{n}", [channels * (left + 1 + right)], "int16")
        valid = b.activation(f"valid{n}", [], "bool")
        b.custom_op(
            "SignalStacker",
            [x],
            [y, valid],
            {
                "num_channels": channels,
                "stacker_left_context": left,
                "stacker_right_context": right,
                "stacker_step": step,
            },
        )
        inputs.append(x)
        pairs.append((len(outputs), len(outputs) + 1))
        outputs += [y, valid]
    return b.finish(inputs, outputs), pairs, []


def delay_model(configs=(([2, 5], 3), ([7], 10), ([3], 3), ([2, 2, 4], 1))):
    """configs: (shape, delay_length)."""
    b = ModelBuilder()
    inputs, outputs = [], []
    for n, (shape, delay) in enumerate(configs):
        x = b.activation(f"audio{n}", shape, "int16")
        y = b.activation(f"delayed{n}", shape, "int16")
        b.custom_op("SignalDelay", [x], [y], {"delay_length": delay})
        inputs.append(x)
        outputs.append(y)
    return b.finish(inputs, outputs), [], []


def overlap_add_model(
    configs=(("int16", [2, 2, 8], 4), ("int16", [1, 6], 6), ("float32", [3, 6], 2), ("float32", [2, 1, 5], 3)),
):
    """configs: (dtype, input shape [..., frames, frame_size], frame_step)."""
    b = ModelBuilder()
    inputs, outputs = [], []
    for n, (dtype, shape, step) in enumerate(configs):
        x = b.activation(f"frames{n}", shape, dtype)
        y = b.activation(f"audio{n}", shape[:-2] + [shape[-2] * step], dtype)
        b.custom_op("SignalOverlapAdd", [x], [y], {"T": INT16 if dtype == "int16" else FLOAT32, "frame_step": step})
        inputs.append(x)
        outputs.append(y)
    return b.finish(inputs, outputs), [], []


def spectral_subtraction_options(
    channels, smoothing=655, alternate=655, bits=14, smoothing_bits=10, min_remaining=1638, clamping=False
):
    return {
        "num_channels": channels,
        "smoothing": smoothing,
        "one_minus_smoothing": (1 << bits) - smoothing,
        "alternate_smoothing": alternate,
        "alternate_one_minus_smoothing": (1 << bits) - alternate,
        "min_signal_remaining": min_remaining,
        "smoothing_bits": smoothing_bits,
        "spectral_subtraction_bits": bits,
        "clamping": clamping,
    }


def spectral_subtraction_model(
    configs=(
        (6, dict(alternate=4000)),
        (1, dict(clamping=True)),
        (5, dict(smoothing=9000, alternate=300, clamping=True, smoothing_bits=0)),
        (4, dict(smoothing_bits=20, bits=3, smoothing=3, alternate=5, min_remaining=0)),
    ),
):
    """configs: (channels, options different from spectral_subtraction_options' defaults); the last
    one wraps uint32 (signal << 20)."""
    b = ModelBuilder()
    inputs, outputs = [], []
    for n, (channels, extra) in enumerate(configs):
        x = b.activation(f"bank{n}", [channels], "uint32")
        y = b.activation(f"subtracted{n}", [channels], "uint32")
        noise = b.activation(f"noise{n}", [channels], "uint32")
        b.custom_op(
            "SignalFilterBankSpectralSubtraction", [x], [y, noise], spectral_subtraction_options(channels, **extra)
        )
        inputs.append(x)
        outputs += [y, noise]
    return b.finish(inputs, outputs), [], []


def circular_buffer_model(configs=(([1, 1, 1, 3], 4), ([1, 1, 2, 5], 3), ([1, 1, 1, 7], 1))):
    """configs: (input shape [1, 1, h, d], num_slots); TFLM's micro_speech-style streaming buffer."""
    b = ModelBuilder()
    inputs, outputs, buffers = [], [], []
    for n, (shape, slots) in enumerate(configs):
        x = b.activation(f"sample{n}", shape, "int8", 0.25, -3)
        y = b.activation(f"window{n}", [1, slots] + shape[2:], "int8", 0.25, -3)
        b.custom_op("CIRCULAR_BUFFER", [x], [y], {"cycles_max": 1})
        inputs.append(x)
        buffers.append((len(outputs), slots))
        outputs.append(y)
    return b.finish(inputs, outputs), [], buffers


MAKERS = {
    "CIRCULAR_BUFFER": circular_buffer_model,
    "SignalDelay": delay_model,
    "SignalFramer": framer_model,
    "SignalFilterBankSpectralSubtraction": spectral_subtraction_model,
    "SignalOverlapAdd": overlap_add_model,
    "SignalStacker": stacker_model,
}


STEP = 16  # new audio samples per call


def streaming_front_end_model() -> bytes:
    """A streaming audio front end as micro_speech's, with its state: 16 new int16 samples per call ->
    framer (48-sample frames, prefilled) -> window -> FFT auto scale -> real FFT -> energy -> mel
    filter bank -> square root -> spectral subtraction (its noise estimate feeds PCAN) -> PCAN -> log
    -> stacker (3 frames of features). Outputs: the stack, its valid flag and this call's features."""
    b = ModelBuilder()
    audio = b.activation("audio", [STEP], "int16")
    # RESHAPE wants int16 tensors quantized: scale 1 (the signal operators ignore it)
    framed, framed_valid = b.activation("framed", [1, FRAME], "int16", 1.0, 0), b.activation("framed_valid", [], "bool")
    b.custom_op(
        "SignalFramer", [audio], [framed, framed_valid], {"frame_size": FRAME, "frame_step": STEP, "prefill": True}
    )
    frame_shape = b.constant("frame_shape", np.array([FRAME], np.int32))
    frame = b.activation("frame", [FRAME], "int16", 1.0, 0)
    b.op("RESHAPE", [framed, frame_shape], [frame], reshape_options([FRAME]))
    hann = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(FRAME) / FRAME)) * (1 << 12)
    windowed = b.activation("windowed", [FRAME], "int16")
    b.custom_op("SignalWindow", [frame, b.constant("hann", hann.astype(np.int16))], [windowed], {"shift": 12})
    scaled, bits = b.activation("scaled", [FRAME], "int16"), b.activation("scale_bits", [], "int32")
    b.custom_op("SignalFftAutoScale", [windowed], [scaled, bits])
    spectrum = b.activation("spectrum", [2 * SPECTRUM_BINS], "int16")
    b.custom_op("SignalRfft", [scaled], [spectrum], {"T": INT16, "fft_length": 2 * (SPECTRUM_BINS - 1)})
    energy = b.activation("energy", [SPECTRUM_BINS], "uint32")
    b.custom_op("SignalEnergy", [spectrum], [energy], {"start_index": 0, "end_index": SPECTRUM_BINS})
    root = b.activation("sqrt", [CHANNELS], "uint32")
    b.custom_op("SignalFilterBankSquareRoot", [add_filter_bank(b, energy), bits], [root])
    cleaned, noise = b.activation("cleaned", [CHANNELS], "uint32"), b.activation("noise", [CHANNELS], "uint32")
    b.custom_op(
        "SignalFilterBankSpectralSubtraction",
        [root],
        [cleaned, noise],
        spectral_subtraction_options(CHANNELS, smoothing=1638, alternate=1638, smoothing_bits=4),
    )
    features = add_log(b, add_pcan(b, cleaned, noise), bits=0, scale=1 << 10)
    stacked, valid = b.activation("stacked", [3 * CHANNELS], "int16"), b.activation("stacked_valid", [], "bool")
    b.custom_op(
        "SignalStacker",
        [features],
        [stacked, valid],
        {"num_channels": CHANNELS, "stacker_left_context": 1, "stacker_right_context": 1, "stacker_step": 2},
    )
    return b.finish([audio], [stacked, valid, features])
