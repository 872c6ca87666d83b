"""Read and check an ``.onnx`` file before the ONNX importer (``onnx_import.py``) trusts it.

The protobuf is parsed by the ``onnx`` package; everything it claims is checked here: the opset of the
default domain (13 or later), every initializer's size against its shape and type, external-data files
(read only inside the model's own folder, within their length), fixed input shapes, and the operator
list (every operator the importer does not convert is named, all at once, in one line). Any problem
is one :class:`ModelFormatError` or :class:`UnsupportedModelError` line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from microcompiler.errors import ModelFormatError, UnsupportedModelError, printable
from microcompiler.user_files import MAX_MODEL_BYTES, read_user_file

MIN_OPSET = 13
_MAX_ELEMENTS = 1 << 28  # as for TFLite tensors: no microcontroller holds more
# ONNX TensorProto.DataType -> numpy dtype of the values the importer accepts
_DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 5: np.int16, 6: np.int32, 7: np.int64, 9: np.bool_, 11: np.float64}
_DTYPE_NAMES = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64", 9: "bool", 11: "float64"}
# The quantized operators of ONNX (QDQ models from quantize_static, QOperator models): not converted yet
QDQ_OPERATORS = frozenset(
    "QuantizeLinear DequantizeLinear QLinearConv QLinearMatMul MatMulInteger ConvInteger DynamicQuantizeLinear".split()
)


def onnx_module() -> Any:
    """The ``onnx`` package, or a one-line error saying how to install it."""
    try:
        import onnx
    except ImportError:
        raise UnsupportedModelError(
            "reading .onnx models needs the 'onnx' package: pip install 'microcompiler[onnx]'"
        ) from None
    return onnx


def looks_like_onnx(path: Path, head: bytes) -> bool:
    """An ``.onnx`` file name, or a protobuf whose first field is ModelProto's ir_version (field 1, varint)."""
    return path.suffix.lower() == ".onnx" or (len(head) > 1 and head[0] == 0x08 and head[4:8] != b"TFL3")


def read_onnx(path: Path) -> Any:
    """The checked ``onnx.ModelProto`` of ``path``, its external data loaded."""
    onnx = onnx_module()
    buf = read_user_file(path, "model file", MAX_MODEL_BYTES, ModelFormatError)
    model = onnx.ModelProto()
    try:
        model.ParseFromString(buf)
    except Exception:  # the protobuf runtime's DecodeError, or a RuntimeWarning-style failure
        raise ModelFormatError(
            f"not an ONNX model: {printable(path.name)} ({len(buf)} bytes) is not a readable ONNX protobuf; "
            "re-export it (torch.onnx.export, tf2onnx) or pass a .tflite file"
        ) from None
    if not model.HasField("graph") or not model.graph.output:
        raise ModelFormatError(
            f"not an ONNX model: {printable(path.name)} has no graph with outputs; the file is truncated or "
            "not a model: re-export it"
        )
    _check_opset(model)
    _load_external_data(model, path.resolve().parent)
    return model


def _check_opset(model: Any) -> None:
    opsets = {o.domain: o.version for o in model.opset_import}
    version = opsets.get("", opsets.get("ai.onnx"))
    if version is None:
        raise ModelFormatError("the ONNX model imports no opset of the default domain; the file is corrupted")
    if version < MIN_OPSET:
        raise UnsupportedModelError(
            f"the ONNX model uses opset {version}; microcompiler reads opset {MIN_OPSET} and later: re-export it "
            f"with opset_version={MIN_OPSET} or later (or convert it with onnx.version_converter)"
        )


def _load_external_data(model: Any, folder: Path) -> None:
    """Read external-data initializers, refusing any location outside the model's folder."""
    for t in model.graph.initializer:
        if t.data_location != 1:  # TensorProto.EXTERNAL
            continue
        info = {e.key: e.value for e in t.external_data}
        location = info.get("location", "")
        name = printable(t.name)
        target = (folder / location).resolve()
        if not location or Path(location).is_absolute() or not target.is_relative_to(folder):
            raise ModelFormatError(
                f"initializer '{name}' keeps its data in {printable(location)!r}, outside the model's folder; "
                "microcompiler reads external data only beside the model: save it with a relative location"
            )
        try:
            offset, length = int(info.get("offset", "0")), int(info.get("length", "-1"))
        except ValueError:
            raise ModelFormatError(f"initializer '{name}' has a non-numeric external-data offset or length") from None
        raw = read_user_file(target, "external-data file", MAX_MODEL_BYTES, ModelFormatError)
        end = len(raw) if length < 0 else offset + length
        if offset < 0 or end > len(raw):
            raise ModelFormatError(
                f"initializer '{name}' asks for bytes {offset}..{end} of {printable(location)!r}, which has "
                f"{len(raw)} bytes; the external data is truncated"
            )
        t.raw_data = raw[offset:end]
        t.data_location = 0
        del t.external_data[:]


def initializer_array(t: Any) -> np.ndarray:
    """The values of a TensorProto, checked against its type and shape."""
    onnx = onnx_module()
    name = printable(t.name)
    if t.data_type not in _DTYPES:
        raise UnsupportedModelError(
            f"constant '{name}' has ONNX data type {t.data_type}; supported: {', '.join(_DTYPE_NAMES.values())}"
        )
    shape = tuple(int(d) for d in t.dims)
    if any(d < 0 for d in shape) or int(np.prod(shape, dtype=np.float64)) > _MAX_ELEMENTS:
        raise ModelFormatError(f"constant '{name}' claims an impossible shape {list(shape)}")
    elements = int(np.prod(shape, dtype=np.int64))
    dtype = np.dtype(_DTYPES[t.data_type])
    if t.HasField("raw_data") or t.raw_data:
        if len(t.raw_data) != elements * dtype.itemsize:
            raise ModelFormatError(
                f"constant '{name}' has shape {list(shape)} ({elements * dtype.itemsize} bytes of "
                f"{_DTYPE_NAMES[t.data_type]}) but holds {len(t.raw_data)} bytes; the file is corrupted"
            )
        return np.frombuffer(t.raw_data, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)
    try:
        values = onnx.numpy_helper.to_array(t)
    except Exception:
        raise ModelFormatError(f"constant '{name}' cannot be read; the file is corrupted") from None
    if values.size != elements:
        raise ModelFormatError(
            f"constant '{name}' has shape {list(shape)} but holds {values.size} values; the file is corrupted"
        )
    return np.asarray(values, dtype=dtype).reshape(shape)


def value_shape(v: Any, what: str) -> tuple[int, ...]:
    """The fixed shape of a graph input/output ValueInfo; a symbolic first dimension is the batch, 1."""
    tt = v.type.tensor_type
    if not v.type.HasField("tensor_type") or not tt.HasField("shape"):
        raise UnsupportedModelError(
            f"model {what} '{printable(v.name)}' has no shape; export the model with fixed input shapes"
        )
    dims = []
    for k, d in enumerate(tt.shape.dim):
        if d.HasField("dim_value") and d.dim_value > 0:
            dims.append(int(d.dim_value))
        elif k == 0:
            dims.append(1)  # a symbolic batch (tf2onnx's 'unk__', torch's dynamic_axes): one sample
        else:
            raise UnsupportedModelError(
                f"model {what} '{printable(v.name)}' has a dynamic dimension {k} ({printable(d.dim_param or '?')}); "
                "export the model with fixed input shapes (batch size 1)"
            )
    if int(np.prod(dims, dtype=np.float64)) > _MAX_ELEMENTS:
        raise ModelFormatError(f"model {what} '{printable(v.name)}' claims an absurd shape {dims}")
    return tuple(dims)


def value_dtype(v: Any, what: str) -> str:
    elem = v.type.tensor_type.elem_type
    if elem != 1:
        raise UnsupportedModelError(
            f"model {what} '{printable(v.name)}' is {_DTYPE_NAMES.get(elem, f'ONNX type {elem}')}; microcompiler "
            "imports float32 ONNX models (QDQ int8 models keep float32 inputs and outputs too)"
        )
    return "float32"


def check_operators(model: Any, supported: frozenset[str]) -> None:
    """Name every operator the importer does not convert, all at once, in one line."""
    missing: dict[str, int] = {}
    for node in model.graph.node:
        kind = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        if kind not in supported:
            missing[kind] = missing.get(kind, 0) + 1
    if not missing:
        return
    listed = ", ".join(f"{printable(k)} (x{n})" if n > 1 else printable(k) for k, n in sorted(missing.items()))
    qdq = sorted(k for k in missing if k.split(".")[-1] in QDQ_OPERATORS or k.split(".")[-1].startswith("QLinear"))
    hint = (
        "; these quantized operators (as ONNX Runtime's graph optimizer fuses the QDQ model) are not supported yet: "
        "docs/onnx.md lists the QDQ int8 patterns that are; or compile the float32 model"
        if qdq
        else "; docs/onnx.md lists the supported ONNX operators"
    )
    raise UnsupportedModelError(f"unsupported ONNX operators: {listed}{hint}")
