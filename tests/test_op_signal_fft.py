"""SignalRfft and SignalIrfft (TFLM's real FFT and its inverse, custom operators) against the TFLM
oracle: int16 and int32 bit-exact (KISS FFT's fixed-point arithmetic), float32 within 1e-5 relative plus
1e-6 * n absolute; lengths whose half is a power of 4 and not, zero-padded frames, several frames;
ASan/UBSan; rejections."""

import numpy as np
import pytest
from harness import assert_matches_oracle
from model_builder import ModelBuilder
from movement_models import assert_clean_rejection

T = {"int16": 7, "float32": 0, "int32": 2, "int8": 9}


def rfft_model(cases, inverse=False) -> bytes:
    """One SignalRfft (or SignalIrfft: input shapes are then spectra) per (dtype, input shape,
    fft_length), side by side."""
    b = ModelBuilder()
    inputs, outputs = [], []
    for k, (dtype, shape, n) in enumerate(cases):
        x = b.activation(f"input{k}", shape, dtype)
        y = b.activation(f"output{k}", list(shape[:-1]) + [n if inverse else n + 2], dtype)
        b.custom_op("SignalIrfft" if inverse else "SignalRfft", [x], [y], {"T": T[dtype], "fft_length": n})
        inputs.append(x)
        outputs.append(y)
    return b.finish(inputs, outputs)


def frames(cases, seed):
    rng = np.random.default_rng(seed)
    out = []
    for dtype, shape, _ in cases:
        if dtype in ("int16", "int32"):  # loud and quiet frames, extremes included
            full = np.iinfo(dtype).max + 1
            amplitude = [full, full >> 3, full >> 7][seed % 3]
            x = rng.integers(-amplitude, amplitude, shape)
            x.flat[0] = -full if seed % 3 == 0 else x.flat[0]
            out.append(x.astype(dtype))
        else:
            out.append(rng.uniform(-1, 1, shape).astype(np.float32))
    return out


INT16_CASES = [
    ("int16", [16], 16),
    ("int16", [2, 25], 32),
    ("int16", [64], 64),
    ("int16", [3, 100], 128),
    ("int16", [4], 4),
    ("int16", [8], 8),
    ("int32", [2, 30], 32),
    ("int32", [64], 64),
]
FLOAT_CASES = [("float32", [8], 8), ("float32", [2, 50], 64), ("float32", [512], 512)]


def test_fixed_point_rfft_is_bit_exact_under_sanitizers(tmp_path):
    """int16 and int32."""
    assert_matches_oracle(
        rfft_model(INT16_CASES), tmp_path, inputs=[frames(INT16_CASES, s) for s in range(3)], sanitize=True
    )


def test_float_rfft_matches_tflm(tmp_path):
    assert_matches_oracle(
        rfft_model(FLOAT_CASES), tmp_path, inputs=[frames(FLOAT_CASES, s) for s in range(2)], float_atol=1e-6 * 512
    )


IRFFT_CASES = [
    ("int16", [18], 16),
    ("int16", [2, 34], 32),
    ("int16", [130], 128),
    ("int16", [6], 4),
    ("int32", [2, 34], 32),
    ("int32", [18], 16),
    ("float32", [10], 8),
    ("float32", [3, 66], 64),
]


def test_irfft_matches_tflm_under_sanitizers(tmp_path):
    """int16 bit-exact, float32 within tolerance (spectra of unit-range values: sums up to n)."""
    assert_matches_oracle(
        rfft_model(IRFFT_CASES, inverse=True),
        tmp_path,
        inputs=[frames(IRFFT_CASES, s) for s in range(3)],
        sanitize=True,
        float_atol=1e-6 * 64,
    )


@pytest.mark.parametrize(
    "case,options,match",
    [
        (("int16", [16], 24), None, "fft_length 24 is not supported yet"),
        (("int16", [40], 32), None, "frames of 40 samples do not fit the 32-point transform"),
        (("int8", [16], 16), None, "type int8 is not supported (int16, int32, float32)"),
        (("int16", [16], 16), {"T": 0, "fft_length": 16}, "option T 0 does not name the tensors' type int16"),
        (("int16", [16], 16), {"fft_length": 16}, "differ from the expected ['T', 'fft_length']"),
        (("int16", [16], 16, True), None, "input frames of 16 values are not the 9 complex bins"),
    ],
)
def test_rfft_rejections(tmp_path, case, options, match):
    model = rfft_model([case[:3]], inverse=len(case) > 3)
    if options is not None:
        b = ModelBuilder()
        x = b.activation("x", case[1], case[0])
        y = b.activation("y", [case[2] + 2], case[0])
        b.custom_op("SignalRfft", [x], [y], options)
        model = b.finish([x], [y])
    assert_clean_rejection(model, tmp_path, match)
