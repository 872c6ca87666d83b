"""LSTM models built in the tests (no TensorFlow): UNIDIRECTIONAL_SEQUENCE_LSTM as TFLM runs it
(all four gates; no peephole, projection or layer norm), int8 with an int16 cell state and float32.
The hidden and cell states are variable tensors, so each output depends on every earlier inference
(and, within one inference, on the earlier time steps of its input)."""

from __future__ import annotations

import numpy as np
from model_builder import ModelBuilder, lstm_options

GATES = ("input", "forget", "cell", "output")
HIDDEN_SCALE = {"int8": 1 / 128, "int16": 2.0**-15}  # the hidden state is o * tanh(c), within [-1, 1]
INT_STD = {"int8": 73, "int16": 18918}  # standard deviation of integers uniform over the type's range
CELL_SCALE = 2.0**-11  # power of two (TFLM's int16 tanh reads it with a shift): cell values within +-16


def _lstm_inputs(
    b: ModelBuilder,
    x: int,
    n_input: int,
    n_state: int,
    batch: int,
    rng,
    name: str,
    x_scale: float | None,
    hidden_zp: int,
    dtype: str = "int8",
) -> list[int]:
    """The 24 inputs of one LSTM layer (absent ones -1), integer when x_scale is given."""
    inputs = [-1] * 24
    inputs[0] = x
    integer = x_scale is not None
    for k, gate in enumerate(GATES):
        if integer:
            # scales that keep the gate pre-activations within Q3.12's +-8 without saturating
            w_scale = 1.2 / (np.sqrt(n_input) * 73 * INT_STD[dtype] * x_scale)
            r_scale = 0.8 / (np.sqrt(n_state) * 73 * 0.5)  # hidden values of about 0.5 (real units)
            w = b.constant(
                f"{name}/input_to_{gate}_weights",
                rng.integers(-127, 128, (n_state, n_input)).astype(np.int8),
                scale=w_scale,
                zero_point=0,
            )
            r = b.constant(
                f"{name}/recurrent_to_{gate}_weights",
                rng.integers(-127, 128, (n_state, n_state)).astype(np.int8),
                scale=r_scale,
                zero_point=0,
            )
            bias_scale = float(np.float32(x_scale) * np.float32(w_scale))
            bias = b.constant(
                f"{name}/{gate}_gate_bias",
                np.round(rng.uniform(-0.5, 0.5, n_state) / bias_scale).astype(
                    np.int32 if dtype == "int8" else np.int64
                ),
                scale=bias_scale,
                zero_point=0,
            )
        else:
            w = b.constant(
                f"{name}/input_to_{gate}_weights",
                (rng.standard_normal((n_state, n_input)) / np.sqrt(n_input)).astype(np.float32),
            )
            r = b.constant(
                f"{name}/recurrent_to_{gate}_weights",
                (rng.standard_normal((n_state, n_state)) / np.sqrt(n_state)).astype(np.float32),
            )
            bias = b.constant(f"{name}/{gate}_gate_bias", (0.3 * rng.standard_normal(n_state)).astype(np.float32))
        inputs[1 + k], inputs[5 + k], inputs[12 + k] = w, r, bias
    if integer:
        inputs[18] = b.variable(
            f"{name}/hidden_state", [batch, n_state], dtype, scale=HIDDEN_SCALE[dtype], zero_point=hidden_zp
        )
        inputs[19] = b.variable(f"{name}/cell_state", [batch, n_state], "int16", scale=CELL_SCALE, zero_point=0)
    else:
        inputs[18] = b.variable(f"{name}/hidden_state", [batch, n_state], "float32")
        inputs[19] = b.variable(f"{name}/cell_state", [batch, n_state], "float32")
    return inputs


def _layer(
    b, x, shape, n_input, n_state, rng, name, x_scale, hidden_zp=0, time_major=False, cell_clip=0.0, dtype="int8"
):
    batch = shape[1] if time_major else shape[0]
    inputs = _lstm_inputs(b, x, n_input, n_state, batch, rng, name, x_scale, hidden_zp, dtype)
    if x_scale is not None:
        y = b.activation(
            f"{name}/output", [*shape[:2], n_state], dtype, scale=HIDDEN_SCALE[dtype], zero_point=hidden_zp
        )
    else:
        y = b.activation(f"{name}/output", [*shape[:2], n_state], "float32")
    b.op("UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [y], lstm_options(cell_clip=cell_clip, time_major=time_major))
    return y


def lstm_int8(
    seed: int = 0,
    layers: int = 1,
    batch: int = 1,
    steps: int = 3,
    n_input: int = 8,
    n_state: int = 6,
    time_major: bool = False,
    cell_clip: float = 0.0,
) -> bytes:
    """One or more int8 LSTM layers: [batch, steps, n_input] -> [batch, steps, n_state] (time major:
    [steps, batch, ...])."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    shape = [steps, batch] if time_major else [batch, steps]
    x_scale = 0.02
    h = x = b.activation("input", [*shape, n_input], "int8", scale=x_scale, zero_point=3)
    width = n_input
    for layer in range(layers):
        h = _layer(
            b,
            h,
            shape,
            width,
            n_state,
            rng,
            f"lstm_{layer + 1}" if layers > 1 else "lstm",
            x_scale,
            hidden_zp=-2 + layer,
            time_major=time_major,
            cell_clip=cell_clip,
        )
        x_scale, width = HIDDEN_SCALE["int8"], n_state
    return b.finish(inputs=[x], outputs=[h])


def lstm_float(
    seed: int = 2, batch: int = 1, steps: int = 3, n_input: int = 5, n_state: int = 4, cell_clip: float = 0.0
) -> bytes:
    """One float32 LSTM layer."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.activation("input", [batch, steps, n_input], "float32")
    y = _layer(b, x, [batch, steps], n_input, n_state, rng, "lstm", None, cell_clip=cell_clip)
    return b.finish(inputs=[x], outputs=[y])


def lstm_int16(
    seed: int = 3, layers: int = 1, batch: int = 1, steps: int = 3, n_input: int = 8, n_state: int = 6
) -> bytes:
    """TFLM's 16x8 LSTM: int16 activations and states (zero points 0), int8 weights, int64 biases."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x_scale = 2.0**-12
    h = x = b.activation("input", [batch, steps, n_input], "int16", scale=x_scale, zero_point=0)
    width = n_input
    for layer in range(layers):
        h = _layer(
            b,
            h,
            [batch, steps],
            width,
            n_state,
            rng,
            f"lstm_{layer + 1}" if layers > 1 else "lstm",
            x_scale,
            dtype="int16",
        )
        x_scale, width = HIDDEN_SCALE["int16"], n_state
    return b.finish(inputs=[x], outputs=[h])
