"""The activation and normalisation kernels together: standalone on an emulated Cortex-M4
(mps2_an386, QEMU), one model with ELU, HARD_SWISH, LEAKY_RELU, PRELU, TANH, LOG_SOFTMAX and
L2_NORMALIZATION side by side, int8 (one input holding every int8 value) and float32; and a chain of the
elementwise ones, each writing over its input (the memory planner's in-place sharing)."""

import numpy as np
from activation_cases import ALL_INT8, every_int8_value, l2_norm_options, leaky_relu_options
from board_oracle import assert_matches_oracle_on_board, needs_board_tools
from harness import assert_matches_oracle
from model_builder import ModelBuilder

SHAPE = [1, 4, 4, 16]


def activation_family_model() -> bytes:
    """Each kernel twice: on an int8 input holding every value, and on a float32 input (the float
    kernels call the C library's expm1f, tanhf, logf and sqrtf on the device)."""
    b = ModelBuilder()
    x = b.activation("x", SHAPE, "int8", scale=0.05, zero_point=-7)
    xf = b.activation("xf", SHAPE, "float32")
    alpha = b.constant("alpha", np.linspace(-100, 120, 16).astype(np.int8), scale=0.01, zero_point=2)
    alpha_f = b.constant("alpha_f", np.linspace(-1.0, 1.2, 16).astype(np.float32))
    outputs = []

    def add(kind, out_q, options=None, alphas=None):
        y = b.activation(kind.lower(), SHAPE, "int8", scale=out_q[0], zero_point=out_q[1])
        b.op(kind, [x, *alphas[:1]] if alphas else [x], [y], options)
        yf = b.activation(kind.lower() + "_f", SHAPE, "float32")
        b.op(kind, [xf, *alphas[1:]] if alphas else [xf], [yf], options)
        outputs.extend([y, yf])

    add("ELU", (0.04, 60))
    add("HARD_SWISH", (0.03, -90))
    add("LEAKY_RELU", (0.04, -5), leaky_relu_options(0.15))
    add("PRELU", (0.05, 0), alphas=[alpha, alpha_f])
    add("TANH", (1.0 / 128, 0))
    add("LOG_SOFTMAX", (16.0 / 256, 127))
    add("L2_NORMALIZATION", (1.0 / 128, 0), l2_norm_options())
    return b.finish([x, xf], outputs)


@needs_board_tools
def test_activation_family_on_mps2_an386(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.permutation(ALL_INT8).reshape(SHAPE)
    xf = rng.uniform(-6.0, 6.0, SHAPE).astype(np.float32)
    run = assert_matches_oracle_on_board(activation_family_model(), tmp_path, inputs=[x, xf])
    assert len(run.outputs) == 14


def elementwise_chain_model(dtype: str) -> bytes:
    """x -> ELU -> TANH -> HARD_SWISH -> LEAKY_RELU -> PRELU -> y (int16: the kernels that have it)."""
    quantized = dtype != "float32"
    kinds = (
        ["ELU", "TANH", "HARD_SWISH", "LEAKY_RELU", "PRELU"] if dtype != "int16" else ["TANH", "LEAKY_RELU", "PRELU"]
    )
    quant = {
        "int8": [(0.05, -7), (0.04, 60), (1.0 / 128, 0), (0.01, -100), (0.012, -20), (0.02, 3)],
        "int16": [(0.001, 0), (1.0 / 32768, 0), (0.0001, 0), (0.0002, 0)],
    }.get(dtype)
    b = ModelBuilder()
    tensors = [b.activation("t0", SHAPE, dtype, *(quant[0] if quantized else ()))]
    for k, kind in enumerate(kinds, start=1):
        out = b.activation(f"t{k}", SHAPE, dtype, *(quant[k] if quantized else ()))
        extra, options = [], None
        if kind == "LEAKY_RELU":
            options = leaky_relu_options(0.3)
        if kind == "PRELU":
            values = np.linspace(-1.0, 2.0, 16)
            extra = [
                b.constant("alpha", (values * 50).astype(np.int8), scale=0.02, zero_point=0)
                if quantized
                else b.constant("alpha", values.astype(np.float32))
            ]
        b.op(kind, [tensors[-1], *extra], [out], options)
        tensors.append(out)
    return b.finish([tensors[0]], [tensors[-1]])


def test_elementwise_kernels_run_in_place(tmp_path):
    for dtype in ("int8", "int16", "float32"):
        inputs = every_int8_value(SHAPE) if dtype == "int8" else None
        lib = assert_matches_oracle(elementwise_chain_model(dtype), tmp_path / dtype, sanitize=True, inputs=inputs)
        graph = lib.graph
        if dtype == "int8":  # the four table functions fuse into one lookup (fuse_tables): no intermediate left
            assert [op.kind for op in graph.operators] == ["MC_TABLE_INT8", "PRELU"]
            continue
        shared = [t for t in range(1, len(graph.operators)) if graph.storage(t) != t]
        assert shared, f"{dtype}: no intermediate tensor was computed in place"
