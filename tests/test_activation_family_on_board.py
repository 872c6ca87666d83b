"""The int8 activation and normalisation kernels standalone on an emulated Cortex-M4 (mps2_an386,
QEMU): one model with ELU, HARD_SWISH, LEAKY_RELU, PRELU, TANH, LOG_SOFTMAX and L2_NORMALIZATION
side by side on one input holding every int8 value, compared with TFLM."""
import numpy as np

from activation_cases import ALL_INT8, l2_norm_options, leaky_relu_options
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from model_builder import ModelBuilder

SHAPE = [1, 4, 4, 16]


def activation_family_model() -> bytes:
    b = ModelBuilder()
    x = b.activation("x", SHAPE, "int8", scale=0.05, zero_point=-7)
    outputs = []

    def add(kind, out_q, options=None, extra_inputs=()):
        y = b.activation(kind.lower(), SHAPE, "int8", scale=out_q[0], zero_point=out_q[1])
        b.op(kind, [x, *extra_inputs], [y], options)
        outputs.append(y)

    add("ELU", (0.04, 60))
    add("HARD_SWISH", (0.03, -90))
    add("LEAKY_RELU", (0.04, -5), leaky_relu_options(0.15))
    alpha = b.constant("alpha", np.linspace(-100, 120, 16).astype(np.int8), scale=0.01, zero_point=2)
    add("PRELU", (0.05, 0), extra_inputs=[alpha])
    add("TANH", (1.0 / 128, 0))
    add("LOG_SOFTMAX", (16.0 / 256, 127))
    add("L2_NORMALIZATION", (1.0 / 128, 0), l2_norm_options())
    return b.finish([x], outputs)


@needs_board_tools
def test_int8_activation_family_on_mps2_an386(tmp_path):
    x = np.random.default_rng(0).permutation(ALL_INT8).reshape(SHAPE)
    run = assert_matches_oracle_on_board(activation_family_model(), tmp_path, inputs=[x])
    assert len(run.outputs) == 7
