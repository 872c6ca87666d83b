"""Models TFLite Micro refuses in its prepare step are refused, in one line with TFLM's reason; the
operators Keras writes that TFLM lacks get an error naming the Keras layer to use instead.

Each refusal is confirmed against TFLM itself: the oracle, run in a child process, aborts on the
refused model (a failed TFLITE_CHECK: no reference can confirm any answer), and runs the model
just inside the bound, which microcompiler compiles bit-exact (docs/operators.md lists both)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from elementwise_models import activation_options, assert_one_line_cli_error
from harness import assert_matches_oracle
from model_builder import ModelBuilder, softmax_options
from oracle import Oracle, TFLMError

from microcompiler.ops.registry import markdown
from microcompiler.ops.tflm_operators import KERAS_ALTERNATIVES

TESTS = Path(__file__).resolve().parent


def softmax_model(scale, beta=1.0):
    b = ModelBuilder()
    x = b.activation("x", [1, 10], "int8", scale=scale, zero_point=0)
    y = b.activation("y", [1, 10], "int8", scale=1 / 256, zero_point=-128)
    b.op("SOFTMAX", [x], [y], softmax_options(beta))
    return b.finish([x], [y])


def log_softmax_model(scale):
    b = ModelBuilder()
    x = b.activation("x", [1, 10], "int8", scale=scale, zero_point=0)
    y = b.activation("y", [1, 10], "int8", scale=16 / 256, zero_point=127)
    b.op("LOG_SOFTMAX", [x], [y])
    return b.finish([x], [y])


def add_model(output_scale):
    b = ModelBuilder()
    xs = [b.activation(f"x{k}", [1, 10], "int8", scale=0.5, zero_point=0) for k in range(2)]
    y = b.activation("y", [1, 10], "int8", scale=output_scale, zero_point=0)
    b.op("ADD", xs, [y], activation_options("ADD", "NONE"))
    return b.finish(xs, [y])


def less_model(scale):
    b = ModelBuilder()
    xs = [b.activation(f"x{k}", [1, 10], "int8", scale=scale, zero_point=0) for k in range(2)]
    y = b.activation("y", [1, 10], "bool")
    b.op("LESS", xs, [y])
    return b.finish(xs, [y])


# (model refused, the same model just inside TFLM's bound, fragment of the one-line error)
CASES = {
    # a converted MobileNetV2's softmax input scale
    "softmax_tiny_input_scale": (softmax_model(7.8e-9), softmax_model(1.5e-8), "QuantizeMultiplierGreaterThanOne"),
    "softmax_small_beta": (
        softmax_model(0.1, beta=1e-7),
        softmax_model(0.1, beta=1e-6),
        "QuantizeMultiplierGreaterThanOne",
    ),
    "log_softmax_tiny_input_scale": (
        log_softmax_model(1.4e-8),
        log_softmax_model(1.5e-8),
        "QuantizeMultiplierGreaterThanOne",
    ),
    "add_output_scale_too_small": (
        add_model(0.5 / (1 << 20)),
        add_model(1.01 / (1 << 20)),
        "QuantizeMultiplierSmallerThanOneExp",
    ),
    "comparison_input_scale_one": (less_model(1.0), less_model(0.99), "QuantizeMultiplierSmallerThanOneExp"),
}


def tflm_refusal(model: bytes) -> str | None:
    """TFLM's prepare step on the model (tests/oracle.py runs the interpreter in a child process, so its
    abort takes only that child down): the error when it refuses, None when it prepares the model."""
    try:
        Oracle(model)
    except TFLMError as error:
        return str(error)
    return None


@pytest.mark.parametrize("case", list(CASES))
def test_tflm_prepare_refusal_is_refused_in_one_line(tmp_path, case):
    refused, accepted, fragment = CASES[case]
    refusal = tflm_refusal(refused)
    assert refusal is not None and "SIGABRT" in refusal, refusal
    assert_one_line_cli_error(refused, tmp_path, "operator 0", fragment, "prepare step")
    assert tflm_refusal(accepted) is None
    assert_matches_oracle(accepted, tmp_path / "accepted", n_inputs=2)


def test_operators_page_lists_the_refusals_and_keras_advice():
    page = markdown()
    for fragment in (
        "## Models TFLite Micro refuses in its prepare step",
        "- SOFTMAX: int8 input",
        "- LOG_SOFTMAX:",
        "- ADD:",
        "- LESS:",
        "## Keras layers that convert to operators TFLite Micro lacks",
        'Resizing(height, width, interpolation="nearest")',
        "tanh",
    ):
        assert fragment in page


def tile_model():
    b = ModelBuilder()
    x = b.activation("x", [1, 4, 1, 4, 1, 3], "float32")
    multiples = b.constant("multiples", np.array([1, 1, 2, 1, 2, 1], np.int32))
    y = b.activation("y", [1, 4, 2, 4, 2, 3], "float32")
    b.op("TILE", [x, multiples], [y])
    return b.finish([x], [y])


def gelu_model():
    b = ModelBuilder()
    x = b.activation("x", [1, 8], "float32")
    y = b.activation("y", [1, 8], "float32")
    b.op("GELU", [x], [y])
    return b.finish([x], [y])


@pytest.mark.parametrize(
    "model,fragments",
    [
        (
            tile_model,
            (
                "unsupported operator TILE",
                "UpSampling2D",
                'Resizing(height, width, interpolation="nearest")',
                "RepeatVector",
                "broadcast_to",
            ),
        ),
        (gelu_model, ("unsupported operator GELU", "approximate=True", "tanh(sqrt(2 / pi)", "sigmoid(1.702 * x)")),
    ],
)
def test_keras_operator_tflm_lacks_names_the_layer_to_use(tmp_path, model, fragments):
    from elementwise_models import cli_compile

    proc = cli_compile(model(), tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    for fragment in fragments:
        assert fragment in line, (fragment, line)
    assert set(KERAS_ALTERNATIVES) >= {"TILE", "GELU"}
