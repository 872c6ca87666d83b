"""What TensorFlow Lite Micro runs, for telling users where an operator we do not compile stands.

An operator missing from microcompiler's registry is either on our roadmap (TFLM runs it; it needs
state across inferences, several subgraphs, or is a custom operator TFLM registers that is not
compiled yet) or not in TFLM at all (then no microcontroller runtime of this family runs the model as it is).
"""

from __future__ import annotations

# Stateless builtin operators TFLM registers (tensorflow/lite/micro/micro_mutable_op_resolver.h).
STATELESS_BUILTINS = frozenset(
    {
        "ABS",
        "ADD",
        "ADD_N",
        "ARG_MAX",
        "ARG_MIN",
        "AVERAGE_POOL_2D",
        "BATCH_MATMUL",
        "BATCH_TO_SPACE_ND",
        "BROADCAST_ARGS",
        "BROADCAST_TO",
        "CAST",
        "CEIL",
        "CONCATENATION",
        "CONV_2D",
        "COS",
        "CUMSUM",
        "DEPTH_TO_SPACE",
        "DEPTHWISE_CONV_2D",
        "DEQUANTIZE",
        "DIV",
        "ELU",
        "EQUAL",
        "EXP",
        "EXPAND_DIMS",
        "FILL",
        "FLOOR",
        "FLOOR_DIV",
        "FLOOR_MOD",
        "FULLY_CONNECTED",
        "GATHER",
        "GATHER_ND",
        "GREATER",
        "GREATER_EQUAL",
        "HARD_SWISH",
        "L2_NORMALIZATION",
        "L2_POOL_2D",
        "LEAKY_RELU",
        "LESS",
        "LESS_EQUAL",
        "LOG",
        "LOGICAL_AND",
        "LOGICAL_NOT",
        "LOGICAL_OR",
        "LOGISTIC",
        "LOG_SOFTMAX",
        "MAXIMUM",
        "MAX_POOL_2D",
        "MEAN",
        "MINIMUM",
        "MIRROR_PAD",
        "MUL",
        "NEG",
        "NOT_EQUAL",
        "PACK",
        "PAD",
        "PADV2",
        "PRELU",
        "QUANTIZE",
        "REDUCE_MAX",
        "REDUCE_MIN",
        "RELU",
        "RELU6",
        "RELU_N1_TO_1",
        "RESHAPE",
        "RESIZE_BILINEAR",
        "RESIZE_NEAREST_NEIGHBOR",
        "REVERSE_V2",
        "ROUND",
        "RSQRT",
        "SELECT_V2",
        "SHAPE",
        "SIN",
        "SLICE",
        "SOFTMAX",
        "SPACE_TO_BATCH_ND",
        "SPACE_TO_DEPTH",
        "SPLIT",
        "SPLIT_V",
        "SQUEEZE",
        "SQRT",
        "SQUARE",
        "SQUARED_DIFFERENCE",
        "STRIDED_SLICE",
        "SUB",
        "SUM",
        "TANH",
        "TRANSPOSE",
        "TRANSPOSE_CONV",
        "UNPACK",
        "ZEROS_LIKE",
        "EMBEDDING_LOOKUP",
    }
)

# Builtin operators TFLM registers that keep state or need several subgraphs, and that microcompiler
# compiles (docs/state.md).
STATEFUL_BUILTINS = frozenset(
    {
        "SVDF",
        "UNIDIRECTIONAL_SEQUENCE_LSTM",
        "VAR_HANDLE",
        "READ_VARIABLE",
        "ASSIGN_VARIABLE",
        "CALL_ONCE",
        "IF",
        "WHILE",
    }
)

# Builtin operators TFLM registers that keep state or need several subgraphs (not compiled yet).
ROADMAP_BUILTINS: dict[str, str] = {}

# Custom operators TFLM registers (those microcompiler compiles are listed by their name in
# ``microcompiler ops``; the others are on the roadmap).
TFLM_CUSTOM = {
    "TFLite_Detection_PostProcess",
    "CIRCULAR_BUFFER",
    "ETHOSU",
    "SignalWindow",
    "SignalFftAutoScale",
    "SignalRfft",
    "SignalIrfft",
    "SignalEnergy",
    "SignalFilterBank",
    "SignalFilterBankLog",
    "SignalFilterBankSquareRoot",
    "SignalFilterBankSpectralSubtraction",
    "SignalPCAN",
    "SignalFramer",
    "SignalOverlapAdd",
    "SignalStacker",
    "SignalDelay",
}


# Operators TFLM lacks that the TFLite converter writes for common Keras layers, with the Keras
# layer or option that converts to operators TFLM runs (each checked with tensorflow-cpu 2.21's
# converter: docs/operators.md).
KERAS_ALTERNATIVES: dict[str, str] = {
    "TILE": (
        "Keras writes TILE for UpSampling1D/UpSampling2D with the default interpolation='nearest' and "
        'for RepeatVector: use layers.Resizing(height, width, interpolation="nearest") '
        '(RESIZE_NEAREST_NEIGHBOR) or UpSampling2D(interpolation="bilinear") (RESIZE_BILINEAR), and '
        "keras.ops.broadcast_to (BROADCAST_TO) for RepeatVector"
    ),
    "GELU": (
        "Keras' gelu converts to GELU with approximate=False and approximate=True alike: write the tanh "
        "form out, 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3))) (MUL, ADD, TANH), or "
        "x * sigmoid(1.702 * x) (MUL, LOGISTIC)"
    ),
    "POW": (
        "keras.ops.power with a non-integer exponent converts to POW (an exponent of 2 to MUL): for "
        "positive x write exp(y * log(x)) (EXP, LOG, MUL)"
    ),
    "TOPK_V2": "keras.ops.top_k converts to TOPK_V2: for k = 1 use keras.ops.max and keras.ops.argmax (REDUCE_MAX, ARG_MAX)",
}


def where_it_stands(kind: str, custom_name: str | None = None) -> str:
    """A short clause for the unsupported-operator error: roadmap, or not in TFLM at all."""
    if custom_name is not None:
        if custom_name in TFLM_CUSTOM:
            return "TFLite Micro runs this custom operator; it is on microcompiler's roadmap"
        return (
            "this custom operator is not in TFLite Micro either; register it as a builtin in the "
            "converter or replace it in the model"
        )
    if kind in ROADMAP_BUILTINS:
        return f"TFLite Micro runs it ({ROADMAP_BUILTINS[kind]}); it is on microcompiler's roadmap"
    if kind in STATELESS_BUILTINS:
        return "TFLite Micro runs it; it is on microcompiler's roadmap"
    if kind in KERAS_ALTERNATIVES:
        return f"it is not in TFLite Micro either. {KERAS_ALTERNATIVES[kind]}"
    return (
        "it is not in TFLite Micro either; replace it in the model (e.g. convert with "
        "TFLite builtins that TFLite Micro supports)"
    )
