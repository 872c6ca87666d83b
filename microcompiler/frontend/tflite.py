"""Import a ``.tflite`` flatbuffer into the graph IR.

Everything the file claims is checked before it is trusted: the file identifier and schema
version, the subgraph count, every tensor/buffer/opcode index, and every constant buffer's size
against its tensor's shape. Any inconsistency raises :class:`ModelFormatError` with one line that
says what is wrong; an operator we do not implement raises :class:`UnsupportedModelError`.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import flatbuffers
import numpy as np
import tflite
from tflite.BuiltinOperator import BuiltinOperator
from tflite.TensorType import TensorType

from microcompiler.errors import ModelFormatError, UnsupportedModelError
from microcompiler.frontend.onnx_read import looks_like_onnx
from microcompiler.frontend.options import custom_options, operator_options
from microcompiler.frontend.subgraphs import link_subgraphs, subgraph_name
from microcompiler.ir import Graph, Operator, Quantization, Tensor
from microcompiler.ops import supported_operators
from microcompiler.ops.tflm_operators import TFLM_CUSTOM, where_it_stands
from microcompiler.user_files import MAX_MODEL_BYTES, read_user_file

_OPCODE_NAMES = {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_")}
_TYPE_NAMES = {
    TensorType.FLOAT32: "float32",
    TensorType.INT32: "int32",
    TensorType.UINT8: "uint8",
    TensorType.INT64: "int64",
    TensorType.BOOL: "bool",
    TensorType.INT16: "int16",
    TensorType.INT8: "int8",
    TensorType.UINT32: "uint32",
    TensorType.UINT64: "uint64",
    TensorType.RESOURCE: "resource",
}
_MAX_ELEMENTS = 1 << 28  # no microcontroller tensor is larger; guards against absurd shapes


def load_tflite(path: str | Path) -> Graph:
    """Read and validate a ``.tflite`` file (or an ``.onnx`` one: frontend/onnx_import.py); the graph is
    named after the file."""
    path = Path(path)
    if path.suffix.lower() == ".onnx":
        return _load_onnx(path)
    buf = read_model_file(path)
    if looks_like_onnx(path, buf[:8]):
        return _load_onnx(path)
    return parse_tflite(buf, model_name(path))


def _load_onnx(path: Path) -> Graph:
    from microcompiler.frontend.onnx_import import load_onnx

    return load_onnx(path, model_name(path))


def read_model_file(path: str | Path) -> bytes:
    """The bytes of a model file; a device, a directory or a file past MAX_MODEL_BYTES is refused unread."""
    return read_user_file(path, "model file", MAX_MODEL_BYTES, ModelFormatError)


def model_name(path: Path) -> str:
    """A C identifier made from the file name (``kws-ref.tflite`` -> ``kws_ref``)."""
    name = re.sub(r"[^0-9a-zA-Z_]", "_", path.stem).strip("_").lower() or "model"
    return name if not name[0].isdigit() else "m_" + name


def parse_tflite(buf: bytes, name: str = "model") -> Graph:
    check_header(buf)
    try:
        return _Importer(buf, name).graph()
    except (ModelFormatError, UnsupportedModelError):
        raise
    except Exception as exc:
        if not raised_by_the_flatbuffer_reader(exc):
            raise  # microcompiler's own fault: a traceback to report, not the user's file
        raise ModelFormatError(
            f"the model file is truncated or corrupted (its flatbuffer offsets point outside the "
            f"{len(buf)}-byte file or at garbage); re-export it from the TFLite converter"
        ) from None


# What reading a corrupt flatbuffer raises (offsets past the end, lengths into garbage, strings that
# are not UTF-8), and where: the flatbuffers runtime, the schema's generated readers (tflite), numpy's
# views of its vectors, and the importer's own reading code (this package).
READER_ERRORS = (struct.error, IndexError, ValueError, TypeError, OverflowError, MemoryError)
READER_MODULES = ("flatbuffers", "tflite", "numpy", "struct")


def raised_by_the_flatbuffer_reader(exc: BaseException) -> bool:
    """Whether exc comes from reading a corrupt flatbuffer rather than from a fault in the rest of
    microcompiler (an operator's checks, a missing import, a syntax error), which must not be blamed
    on the model file."""
    if not isinstance(exc, READER_ERRORS):
        return False
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    module = str(tb.tb_frame.f_globals.get("__name__", "")) if tb is not None else ""
    return module.split(".")[0] in READER_MODULES or module.startswith("microcompiler.frontend")


def check_header(buf: bytes) -> None:
    if len(buf) < 16:
        raise ModelFormatError(
            f"not a TFLite model: the file is only {len(buf)} bytes; re-export it from the TFLite converter "
            "(or pass an .onnx model)"
        )
    if buf[4:8] != b"TFL3":
        raise ModelFormatError(
            "not a TFLite model: missing the 'TFL3' file identifier; pass a .tflite file made by the TFLite converter "
            "or an .onnx model"
        )
    (root,) = struct.unpack_from("<I", buf, 0)
    if root + 4 > len(buf):
        raise ModelFormatError(f"the model file is truncated or corrupted: root table at byte {root} of {len(buf)}")


class _Importer:
    def __init__(self, buf: bytes, name: str):
        self.buf = buf
        self.name = name
        self.model = tflite.Model.GetRootAs(buf, 0)

    def graph(self) -> Graph:
        model = self.model
        if model.Version() != 3:
            raise ModelFormatError(
                f"unsupported TFLite schema version {model.Version()} (expected 3); re-export the model "
                "with a current TFLite converter"
            )
        count = model.SubgraphsLength()
        if count < 1:
            raise ModelFormatError("the model has no subgraphs; the file is corrupted")
        main = self._subgraph(0, self.name)
        names = {"main", self.name}
        for k in range(1, count):
            sub = self._subgraph(k, subgraph_name(model.Subgraphs(k).Name(), k, names))
            main.subgraphs[k] = sub
        return link_subgraphs(main)

    def _subgraph(self, k: int, name: str) -> Graph:
        """Subgraph ``k`` as a Graph; the main graph (k == 0) must have inputs and outputs."""
        sub = self.model.Subgraphs(k)
        what = "model" if k == 0 else f"subgraph {k} ('{name}')"
        tensors = [self._tensor(sub.Tensors(i), i) for i in range(sub.TensorsLength())]
        self.tensors = tensors
        n = len(tensors)
        inputs = [int(i) for i in _ints(sub.InputsAsNumpy())]
        outputs = [int(i) for i in _ints(sub.OutputsAsNumpy())]
        for kind, idxs in (("input", inputs), ("output", outputs)):
            if not idxs and k == 0:
                raise ModelFormatError(f"the model declares no {kind}s; the file is corrupted")
            for i in idxs:
                if not 0 <= i < n:
                    raise ModelFormatError(f"{what} {kind} refers to tensor {i}, but there are {n} tensors")
                if tensors[i].size == 0:
                    raise UnsupportedModelError(
                        f"{what} {kind} tensor {i} ('{tensors[i].name}') has shape {list(tensors[i].shape)} "
                        "with no elements; TFLite Micro cannot run zero-sized tensors either: export the "
                        "model with non-empty shapes"
                    )
        for i in inputs:
            # TFLM copies the caller's values (or a calling IF/WHILE's) over the constant's bytes in
            # the model; we fold the constant: the file contradicts itself.
            if tensors[i].is_constant:
                raise ModelFormatError(
                    f"{what} input tensor {i} ('{tensors[i].name}') is a constant (its values are in the "
                    "file); the file is inconsistent: re-export the model"
                )
        for i in inputs + outputs:
            if tensors[i].persistent:
                raise UnsupportedModelError(
                    f"{what} input/output tensor {i} ('{tensors[i].name}') is a variable tensor (state kept "
                    "across inferences); re-export the model so that its state is internal"
                )
        operators = [self._operator(sub.Operators(i), i, n) for i in range(sub.OperatorsLength())]
        _check_order(tensors, operators, inputs, outputs)
        return Graph(name, tensors, operators, inputs, outputs)

    # --- tensors -------------------------------------------------------------------------------
    def _tensor(self, t, index: int) -> Tensor:
        # printable only: names go into one-line error messages and C comments
        tname = (
            "".join(
                ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in (t.Name() or b"").decode("utf-8", "replace")
            )
            or f"tensor_{index}"
        )
        # 4-bit weights (two per byte, low nibble first) are unpacked to int8 here, as TFLM's kernels
        # unpack them before use.
        int4 = t.Type() == TensorType.INT4
        if t.Type() not in _TYPE_NAMES and not int4:
            names = {v: k for k, v in vars(TensorType).items() if not k.startswith("_")}
            raise UnsupportedModelError(
                f"tensor {index} ('{tname}') has type {names.get(t.Type(), t.Type())}; supported types: "
                f"{', '.join(sorted(set(_TYPE_NAMES.values())))}"
            )
        dtype = "int8" if int4 else _TYPE_NAMES[t.Type()]
        # The shape, not the shape signature: a -1 batch in the signature with a fixed shape of 1
        # is what converters write for "batch size 1", and TFLM runs the fixed shape too.
        shape = tuple(int(d) for d in _ints(t.ShapeAsNumpy()))
        if any(d < 0 for d in shape):
            raise UnsupportedModelError(
                f"tensor {index} ('{tname}') has a dynamic or negative shape {list(shape)}; "
                "export the model with fixed input shapes (batch size 1)"
            )
        elements = int(np.prod(shape, dtype=np.float64)) if shape else 1
        if elements > _MAX_ELEMENTS:
            raise ModelFormatError(f"tensor {index} ('{tname}') claims an absurd shape {list(shape)}")
        data = self._buffer(t.Buffer(), index, tname, dtype, shape, elements, int4)
        if int4 and data is None:
            raise UnsupportedModelError(
                f"tensor {index} ('{tname}') is a 4-bit (INT4) activation; TFLite Micro supports INT4 "
                "tensors only as constant weights"
            )
        if data is None and elements == 0:
            data = np.zeros(shape, dtype=_np(dtype))  # an empty constant (e.g. the shape of a scalar)
        # TFLM's kernels never read the quantization of a bias (a constant int32/int64 tensor): where it
        # is inconsistent, it is dropped instead of calling the file damaged.
        unread = data is not None and dtype in ("int32", "int64")
        quant = self._quantization(t.Quantization(), index, tname, shape, unread)
        if t.IsVariable():
            return _variable(Tensor(tname, shape, dtype, quant), data)
        return Tensor(tname, shape, dtype, quant, data)

    def _quantization(self, q, index, tname, shape, unread=False):
        """Quantization parameters, read as leniently as TFLM reads them (micro_allocator.cc).

        TFLM takes as many zero points as there are scales (one zero point is repeated), uses the
        first scale and zero point wherever a kernel wants per-tensor parameters, and never checks
        ``quantized_dimension`` where no kernel reads it (biases, activations). Per-channel
        parameters that are all equal are per-tensor. Kernels that use per-channel scales check
        the axis themselves; kernels that need per-tensor parameters refuse the rest.
        """
        if q is None or q.ScaleLength() == 0:
            return None
        scale = [float(s) for s in q.ScaleAsNumpy()]
        zp = [int(z) for z in _ints(q.ZeroPointAsNumpy())] or [0]
        file_scales = len(scale)
        axis = int(q.QuantizedDimension())
        if len(zp) == 1:
            zp = zp * len(scale)
        consistent = len(zp) >= len(scale) and all(np.isfinite(s) and s > 0 for s in scale)
        if unread and not consistent:
            return None
        if len(zp) < len(scale):
            raise ModelFormatError(
                f"tensor {index} ('{tname}') has {len(scale)} scales but only {len(zp)} zero points; "
                "the file is corrupted"
            )
        zp = zp[: len(scale)]
        if not all(np.isfinite(s) and s > 0 for s in scale):
            raise ModelFormatError(
                f"tensor {index} ('{tname}') has a non-positive or non-finite scale; the file is corrupted"
            )
        if len(set(scale)) == 1 and len(set(zp)) == 1:
            scale, zp = scale[:1], zp[:1]
        return Quantization(scale, zp, axis, file_scales)

    def _buffer(self, buffer_index, index, tname, dtype, shape, elements, int4=False):
        model = self.model
        if not 0 <= buffer_index < model.BuffersLength():
            raise ModelFormatError(
                f"tensor {index} ('{tname}') refers to buffer {buffer_index}, but there are "
                f"{model.BuffersLength()} buffers"
            )
        b = model.Buffers(buffer_index)
        if b.Offset() > 1:  # large models keep buffers after the flatbuffer
            start, size = b.Offset(), b.Size()
            if start + size > len(self.buf):
                raise ModelFormatError(
                    f"buffer {buffer_index} of tensor {index} ('{tname}') runs past the end of the file; "
                    "the file is truncated"
                )
            raw = self.buf[start : start + size]
        elif b.DataLength() > 0:
            raw = b.DataAsNumpy().tobytes()
        else:
            return None
        if int4:
            if len(raw) != (elements + 1) // 2:
                raise ModelFormatError(
                    f"tensor {index} ('{tname}') has shape {list(shape)} ({(elements + 1) // 2} bytes of "
                    f"packed int4) but its buffer holds {len(raw)} bytes; the file is corrupted"
                )
            packed = np.frombuffer(raw, dtype=np.uint8)
            nibbles = np.stack([packed & 0xF, packed >> 4], axis=1).reshape(-1)[:elements].astype(np.int8)
            return np.where(nibbles > 7, nibbles - 16, nibbles).astype(np.int8).reshape(shape)
        itemsize = np.dtype(_np(dtype)).itemsize
        if len(raw) != elements * itemsize:
            raise ModelFormatError(
                f"tensor {index} ('{tname}') has shape {list(shape)} ({elements * itemsize} bytes of "
                f"{dtype}) but its buffer holds {len(raw)} bytes; the file is corrupted"
            )
        return np.frombuffer(raw, dtype=_np(dtype)).reshape(shape).copy()

    # --- operators -----------------------------------------------------------------------------
    def _operator(self, op, index: int, n_tensors: int) -> Operator:
        model = self.model
        code_index = op.OpcodeIndex()
        if not 0 <= code_index < model.OperatorCodesLength():
            raise ModelFormatError(
                f"operator {index} refers to opcode {code_index}, but there are {model.OperatorCodesLength()} opcodes"
            )
        kind, custom = operator_kind(model.OperatorCodes(code_index))
        kernels = supported_operators()
        if kind not in kernels:
            raise UnsupportedModelError(
                f"unsupported operator {kind} at operator index {index}: {where_it_stands(kind, custom)}; "
                "'microcompiler ops' lists the supported operators"
            )
        inputs = [int(i) for i in _ints(op.InputsAsNumpy())]
        outputs = [int(i) for i in _ints(op.OutputsAsNumpy())]
        for i in inputs + outputs:
            if not -1 <= i < n_tensors:
                raise ModelFormatError(
                    f"operator {index} ({kind}) refers to tensor {i}, but there are {n_tensors} tensors"
                )
        (fewest, most), (fewest_out, most_out) = kernels[kind].io_counts(kind)
        if not fewest_out <= len(outputs) <= most_out or -1 in outputs:
            expected = fewest_out if fewest_out == most_out else f"{fewest_out} to {most_out}"
            raise ModelFormatError(
                f"operator {index} ({kind}) has {len(outputs)} outputs, expected {expected}; the file is corrupted"
            )
        required = inputs[:fewest]
        if not fewest <= len(inputs) <= most or -1 in required:
            raise ModelFormatError(
                f"operator {index} ({kind}) has {len(inputs)} inputs, expected "
                f"{fewest}{'' if fewest == most else f' to {most}'}; the file is corrupted"
            )
        repeated = next((o for k, o in enumerate(outputs) if o in outputs[:k]), None)
        if repeated is not None:  # TFLM writes it twice, in an order of its own (a WHILE's body outputs)
            raise ModelFormatError(
                f"operator {index} ({kind}) lists tensor {repeated} ('{self.tensors[repeated].name}') more "
                "than once among its outputs; the file is corrupted"
            )
        for o in outputs:
            if self.tensors[o].size == 0:
                raise UnsupportedModelError(
                    f"operator {index} ({kind}) writes tensor {o} ('{self.tensors[o].name}') of shape "
                    f"{list(self.tensors[o].shape)}, which has no elements; TFLite Micro cannot run "
                    "zero-sized tensors either: export the model with non-empty shapes"
                )
        if custom is None and op.CustomOptionsLength() > 0:
            # TFLM: "Unsupported behavior: found builtin operator ABS with custom options." (a custom
            # operator whose builtin code field names a builtin, or a builtin with stray options)
            raise ModelFormatError(
                f"operator {index} ({kind}) is a builtin operator carrying custom options (TFLM refuses it "
                "too); the file is corrupted: re-export the model"
            )
        options = custom_options(kind, op, index) if custom is not None else operator_options(kind, op)
        return Operator(kind, inputs, outputs, options, index)


def operator_kind(code) -> tuple[str, str | None]:
    """(kind, custom name) of an OperatorCode: the builtin's name, a custom operator TFLM registers
    under its own name (SignalWindow, ...), or ``CUSTOM ('name')`` for any other custom operator."""
    builtin = _builtin_code(code)
    kind = _OPCODE_NAMES.get(builtin, f"opcode {builtin}")
    if kind != "CUSTOM":
        return kind, None
    custom = (code.CustomCode() or b"?").decode("utf-8", "replace")
    custom = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in custom)
    kind = custom if custom in TFLM_CUSTOM and custom in supported_operators() else f"CUSTOM ('{custom}')"
    return kind, custom


def _builtin_code(code) -> int:
    """The operator code as TFLM reads it (schema_utils.cc GetBuiltinCode): the larger of the int32
    ``builtin_code`` field and the int8 ``deprecated_builtin_code``. (The ``tflite`` package's
    ``BuiltinCode()`` returns the deprecated field whenever the new one is below 127, so a model whose
    two fields disagree would run another operator than TFLM runs: the raw field is read here.)"""
    offset = code._tab.Offset(10)  # builtin_code: the 4th field of OperatorCode
    raw = code._tab.Get(flatbuffers.number_types.Int32Flags, offset + code._tab.Pos) if offset else 0
    return max(int(raw), int(code.DeprecatedBuiltinCode()))


def _variable(tensor: Tensor, data: np.ndarray | None) -> Tensor:
    """A TFLite variable tensor becomes persistent state that starts from zero: the zero point for
    int8, else 0. That is what TFLM does (its ResetVariableTensor fills every variable so on
    AllocateTensors and reset, and ignores a buffer the file may give the variable: the pinned
    interpreter starts from zeros even then), so ``data`` is not used as the initial value;
    ``Tensor.initial`` can still hold any values for state whose start is known otherwise."""
    del data  # TFLM ignores a variable's buffer (see above); a test pins that behaviour
    tensor.persistent = True
    zero = tensor.quant.zero_point[0] if tensor.dtype == "int8" and tensor.quant is not None else 0
    tensor.initial = np.full(tensor.shape, zero, dtype=_np(tensor.dtype))
    return tensor


def _check_order(tensors, operators, inputs, outputs):
    """Every operator input must be a constant, a persistent (state) tensor, a model input, or produced
    by an earlier operator."""
    ready = set(inputs) | {i for i, t in enumerate(tensors) if t.is_constant or t.persistent}
    for op in operators:
        for i in op.inputs:
            if i >= 0 and i not in ready:
                raise ModelFormatError(
                    f"operator {op.index} ({op.kind}) reads tensor {i} ('{tensors[i].name}') before any "
                    "operator writes it; the file is corrupted"
                )
        for o in op.outputs:
            if tensors[o].is_constant:
                raise ModelFormatError(
                    f"operator {op.index} ({op.kind}) writes constant tensor {o}; the file is corrupted"
                )
            if o in inputs:  # the generated <model>_run() reads its inputs through const pointers
                raise UnsupportedModelError(
                    f"operator {op.index} ({op.kind}) writes the model's input tensor {o} ('{tensors[o].name}') "
                    "in place; microcompiler does not overwrite the caller's input: re-export the model so "
                    "that the operator writes a tensor of its own"
                )
            ready.add(o)
    for o in outputs:
        if o not in ready:
            raise ModelFormatError(f"model output tensor {o} is never written; the file is corrupted")
    kernels = supported_operators()
    for op in operators:
        if not kernels[op.kind].quantized_io:
            continue
        for i in op.inputs + op.outputs:
            t = tensors[i] if i >= 0 else None
            if t is not None and t.dtype in ("int8", "int16") and t.quant is None and not t.is_constant:
                raise ModelFormatError(
                    f"tensor {i} ('{t.name}') of operator {op.index} ({op.kind}) is {t.dtype} but has no "
                    "quantization parameters; re-export the model with full-integer quantization"
                )


def _ints(arr) -> np.ndarray:
    # The flatbuffer API returns 0 (not an empty array) for absent vectors.
    return arr if isinstance(arr, np.ndarray) else np.zeros(0, dtype=np.int32)


def _np(dtype: str):
    from microcompiler.ir import np_dtype

    return np_dtype(dtype)
