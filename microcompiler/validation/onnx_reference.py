"""The reference for ``.onnx`` models: ONNX Runtime's default CPU session (graph optimizations on), the
oracle docs/onnx.md holds the generated C to. It answers like :class:`~microcompiler.validation.reference.
Reference` (``run``, ``input_details``, ``output_details``, ``close``), in this process: the model has
already been imported and checked by microcompiler (its operators have no loops), so a run ends.

``onnxruntime`` is imported only here, when an ONNX model is validated (the 'onnx' extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from microcompiler.errors import MicrocompilerError, ModelFormatError, printable
from microcompiler.frontend.onnx_read import looks_like_onnx

ORT_REQUIREMENT = "onnxruntime==1.32.0"  # the same pin as pyproject's 'onnx' and 'test' extras


def onnxruntime_module() -> Any:
    try:
        import onnxruntime
    except ImportError:
        raise MicrocompilerError(
            "validating an ONNX model needs ONNX Runtime, which is not installed: "
            f"pip install 'microcompiler[onnx]' (or pip install {ORT_REQUIREMENT})"
        ) from None
    return onnxruntime


def onnx_model(path: str | Path, model_bytes: bytes) -> str | Path | None:
    """``path`` when the model is an ONNX model (validated against ONNX Runtime), otherwise None."""
    return path if looks_like_onnx(Path(path), model_bytes[:8]) else None


def _dtype(ort_type: str) -> np.dtype:
    name = ort_type[len("tensor(") : -1] if ort_type.startswith("tensor(") else ort_type
    return np.dtype({"float": "float32", "double": "float64"}.get(name, name))


class OnnxReference:
    """ONNX Runtime's session for the model at ``path`` (external-data files beside it)."""

    what = "ONNX Runtime"

    def __init__(self, path: str | Path, n_outputs: int):
        ort = onnxruntime_module()
        options = ort.SessionOptions()
        options.log_severity_level = 3
        try:
            self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - ONNX Runtime's own exception types
            raise ModelFormatError(
                f"ONNX Runtime cannot load {printable(str(path))} ({printable(_first_line(exc))}); "
                "check the model with onnx.checker.check_model"
            ) from None
        self.inputs = self.session.get_inputs()
        self.outputs = self.session.get_outputs()[:n_outputs]

    def input_details(self, k: int) -> dict:
        i = self.inputs[k]
        return {"shape": [d if isinstance(d, int) else 1 for d in i.shape], "dtype": _dtype(i.type)}

    def output_details(self, k: int) -> dict:
        o = self.outputs[k]
        return {"shape": [d if isinstance(d, int) else 1 for d in o.shape], "dtype": _dtype(o.type)}

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        feeds = {}
        for k, (meta, x) in enumerate(zip(self.inputs, inputs)):
            details = self.input_details(k)
            feeds[meta.name] = np.asarray(x, dtype=details["dtype"]).reshape(details["shape"])
        try:
            results = self.session.run([o.name for o in self.outputs], feeds)
        except Exception as exc:  # noqa: BLE001
            raise MicrocompilerError(f"ONNX Runtime failed on the model: {printable(_first_line(exc))}") from None
        return [np.asarray(r) for r in results]

    def close(self) -> None:
        self.session = None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:200]
