"""An operator's builtin options as a plain dict.

Every options table of the TFLite schema is read the same way: each field becomes a snake_case key
(``BeginMask`` -> ``begin_mask``), vectors become lists of ints, the fused activation becomes
``activation`` and the padding ``padding``, both by name. A few fields keep the shorter names the
convolution and pooling kernels have always used (``stride_h``, ``filter_w``, ...). A missing table
gives an empty dict: kernels apply the schema's defaults with ``op.options.get(key, default)``.

A custom operator's options are a flexbuffer map (``custom_options``): its keys are kept as
they are (``max_detections``, ``shift``); the kernel checks the keys and types it reads
(``microcompiler/ops/custom_options.py``).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import tflite
from flatbuffers import flexbuffers

from microcompiler.errors import ModelFormatError

ACTIVATIONS = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}
PADDINGS = {0: "SAME", 1: "VALID"}
_OPTION_CLASSES = {v: k for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_")}
_RENAMED = {
    "fused_activation_function": "activation",
    "dilation_h_factor": "dilation_h",
    "dilation_w_factor": "dilation_w",
    "filter_height": "filter_h",
    "filter_width": "filter_w",
}
_POOLS = ("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D")
# Options fields that hold a TensorType (ARG_MAX/ARG_MIN output_type, SHAPE out_type, CAST's, the
# convolutions' and FULLY_CONNECTED's quantized_bias_type): TFLM's parser refuses a value that names no
# type, whether or not the kernel reads it.
_TENSOR_TYPE_FIELDS = ("output_type", "out_type", "in_data_type", "out_data_type", "quantized_bias_type")
_TENSOR_TYPES = frozenset(v for k, v in vars(tflite.TensorType).items() if not k.startswith("_"))
_NOT_FIELDS = ("GetRootAs", "Init", "BufferHasIdentifier")


def _snake(name: str) -> str:
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)  # HFactor -> H_Factor
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _fields(cls) -> list[str]:
    names = [m for m in dir(cls) if not m.startswith("_") and callable(getattr(cls, m))]
    # "Init" exactly: CallOnceOptions has a field InitSubgraphIndex
    return [
        m
        for m in names
        if m not in _NOT_FIELDS
        and not m.startswith("GetRootAs")
        and not m.endswith(_NOT_FIELDS)
        and not m.endswith(("AsNumpy", "IsNone", "Length"))
    ]


def _read_table(op) -> dict:
    table = op.BuiltinOptions()
    name = _OPTION_CLASSES.get(op.BuiltinOptionsType())
    if table is None or name is None or name == "NONE" or not hasattr(tflite, name):
        return {}
    cls = getattr(tflite, name)
    opts = cls()
    opts.Init(table.Bytes, table.Pos)
    values: dict[str, Any] = {}
    for field in _fields(cls):
        value: Any
        if hasattr(cls, field + "AsNumpy"):
            arr = getattr(opts, field + "AsNumpy")()
            value = [int(v) for v in arr] if isinstance(arr, np.ndarray) else []
        else:
            value = getattr(opts, field)()
            if isinstance(value, (bytes, bytearray)):
                value = value.decode("utf-8", "replace")
        key = _RENAMED.get(_snake(field), _snake(field))
        if key == "activation":
            value = ACTIVATIONS.get(value, f"unknown ({value})")
        elif key == "padding":
            value = PADDINGS.get(value, f"unknown ({value})")
        elif key in _TENSOR_TYPE_FIELDS and value not in _TENSOR_TYPES:
            raise ModelFormatError(
                f"the {name} table's {key} is {value}, which is no tensor type (TFLM: \"Unsupported data type "
                f'{value} in tensor"); the model file is damaged'
            )
        elif isinstance(value, (bool, np.bool_)):
            value = bool(value)
        elif isinstance(value, (np.integer,)):
            value = int(value)
        elif isinstance(value, (np.floating,)):
            value = float(value)
        values[key] = value
    return values


# Schema defaults of the options the existing kernels read without a default of their own.
_DEFAULTS: dict[str, dict[str, Any]] = {
    "CONV_2D": dict(padding="SAME", stride_h=1, stride_w=1, dilation_h=1, dilation_w=1, activation="NONE"),
    "DEPTHWISE_CONV_2D": dict(
        padding="SAME", stride_h=1, stride_w=1, dilation_h=1, dilation_w=1, depth_multiplier=1, activation="NONE"
    ),
    "FULLY_CONNECTED": dict(activation="NONE", keep_num_dims=False, weights_format=0),
    "ADD": dict(activation="NONE", pot_scale_int16=True),
    "MUL": dict(activation="NONE"),
    "SOFTMAX": dict(beta=0.0),  # TFLM: no options table is zeroed parameters (the schema default is 0 too)
    "CONCATENATION": dict(axis=0, activation="NONE"),
    "MEAN": dict(keep_dims=False),
}
# The kernels of these read exactly these keys (nothing more is kept, as before the generic reader).
_KEPT = {
    "CONV_2D": ("padding", "stride_h", "stride_w", "dilation_h", "dilation_w", "activation"),
    "DEPTHWISE_CONV_2D": (
        "padding",
        "stride_h",
        "stride_w",
        "dilation_h",
        "dilation_w",
        "depth_multiplier",
        "activation",
    ),
    "FULLY_CONNECTED": ("activation", "keep_num_dims", "weights_format"),
    "AVERAGE_POOL_2D": ("padding", "stride_h", "stride_w", "filter_h", "filter_w", "activation"),
    "MAX_POOL_2D": ("padding", "stride_h", "stride_w", "filter_h", "filter_w", "activation"),
    "L2_POOL_2D": ("padding", "stride_h", "stride_w", "filter_h", "filter_w", "activation"),
    "ADD": ("activation", "pot_scale_int16"),
    "MUL": ("activation",),
    "SOFTMAX": ("beta",),
    "CONCATENATION": ("axis", "activation"),
    "MEAN": ("keep_dims",),
    "RESHAPE": (),
    "PAD": (),
    "QUANTIZE": (),
    "DEQUANTIZE": (),
    "RELU": (),
    "RELU6": (),
    "LOGISTIC": (),
}


def _letters(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


# Operators whose options table is not named after them.
_OPTIONS_OF = {
    **{kind: "Pool2DOptions" for kind in _POOLS},
    **{kind: "ReducerOptions" for kind in ("MEAN", "SUM", "REDUCE_PROD", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_ANY")},
    "CONV_3D_TRANSPOSE": "Conv3DOptions",  # the schema shares CONV_3D's table
}
_BUILTIN_KINDS = {_letters(k) for k in vars(tflite.BuiltinOperator) if not k.startswith("_")}


def _check_options_type(kind: str, op) -> None:
    """TFLM reads an operator's options only as its own type (``builtin_options_as_<Type>()``); another
    operator's table (a CONV_2D carrying AddOptions) leaves its parameters zeroed, strides of 0 and all,
    where the schema's defaults would compute something else: refused as a damaged file."""
    name = _OPTION_CLASSES.get(op.BuiltinOptionsType())
    if op.BuiltinOptions() is None or name is None or name == "NONE":
        return
    table = _letters(name.removesuffix("Options"))
    expected = _OPTIONS_OF.get(kind)
    wrong = name != expected if expected else table in _BUILTIN_KINDS and table != _letters(kind)
    if wrong:
        raise ModelFormatError(
            f"{kind} operator carries {name} (another operator's options); the file is corrupted: re-export the model"
        )


def operator_options(kind: str, op) -> dict:
    """The options of ``op`` (a tflite.Operator) of builtin ``kind``, with schema defaults filled in
    for the keys the convolution, pooling and elementwise kernels read."""
    _check_options_type(kind, op)
    values = {**_DEFAULTS.get(kind, {}), **_read_table(op)}
    if kind in _POOLS and not all(k in values for k in _KEPT[kind]):
        raise ModelFormatError(f"{kind} operator has no pooling options; the file is corrupted")
    if kind in _KEPT:
        values = {k: v for k, v in values.items() if k in _KEPT[kind]}
    return values


_FLEXBUFFERS = 0  # CustomOptionsFormat.FLEXBUFFERS, the only format the schema defines


def custom_options(kind: str, op, index: int) -> dict:
    """The flexbuffer map of custom operator ``op`` as a dict (empty when it has none)."""
    if op.CustomOptionsIsNone() or op.CustomOptionsLength() == 0:
        return {}
    if op.CustomOptionsFormat() != _FLEXBUFFERS:
        raise ModelFormatError(
            f"operator {index} ({kind}) has custom options in format "
            f"{op.CustomOptionsFormat()} (only flexbuffers exist); the file is corrupted"
        )
    raw = op.CustomOptionsAsNumpy().tobytes()
    try:
        value = flexbuffers.Loads(raw)
    except Exception:  # the flexbuffer reader trips over bad widths, offsets or types
        value = None
    if not isinstance(value, dict):
        raise ModelFormatError(
            f"operator {index} ({kind}) has custom options that are not a flexbuffer map "
            f"({len(raw)} bytes); the file is corrupted: re-export the model"
        )
    return {str(k): v for k, v in value.items()}
