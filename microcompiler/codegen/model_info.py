"""The model-info record: what a model library's ``metadata.json`` holds, typed and versioned.

The code generator builds a :class:`ModelInfo`; ``metadata.json`` is written from it
(:meth:`ModelInfo.to_json`) and read back into it (:meth:`ModelInfo.from_json`), so the fields a
program relies on are checked in one place. ``format_version`` says which layout a file has: a
library written before the field existed loads as version 1 (the same layout), a file of a newer
version than this microcompiler reads is refused in one line that says to recompile.
``microcompiler_version`` records the compiler that wrote it.

Fields that only some readers use (per-operator details, the memory peak, patches, subgraphs, ...)
stay in :attr:`ModelInfo.details` as written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from microcompiler.errors import MicrocompilerError
from microcompiler.version import __version__

FORMAT_VERSION = 1  # metadata.json's layout; raise it when a field changes meaning or goes away
_NUMBERS = ("arena_bytes", "params_bytes", "scratch_bytes", "state_bytes", "total_macs")
_TENSOR_FIELDS = {"name": str, "c_name": str, "shape": list, "dtype": str, "bytes": int}


class ModelInfoError(MicrocompilerError):
    """A metadata.json that is damaged, or written by a newer microcompiler."""


@dataclass(frozen=True)
class TensorInfo:
    """A model input or output: its names, shape, type, size and (quantized types) scale and zero point."""

    name: str
    c_name: str
    shape: tuple[int, ...]
    dtype: str
    bytes: int
    scale: float | None = None
    zero_point: int | None = None

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "c_name": self.c_name,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "bytes": self.bytes,
            "scale": self.scale,
            "zero_point": self.zero_point,
        }

    @property
    def quantized(self) -> bool:
        """Whether the tensor carries a scale and zero point (int8, int16, ...)."""
        return self.scale is not None and self.zero_point is not None

    @classmethod
    def from_json(cls, data: Any, where: str) -> TensorInfo:
        if not isinstance(data, dict) or not all(isinstance(data.get(k), t) for k, t in _TENSOR_FIELDS.items()):
            raise ModelInfoError(
                f"{where} is damaged (an input or output lacks one of {', '.join(_TENSOR_FIELDS)}); "
                "compile the model again"
            )
        return cls(
            data["name"],
            data["c_name"],
            tuple(int(d) for d in data["shape"]),
            data["dtype"],
            data["bytes"],
            data.get("scale"),
            data.get("zero_point"),
        )


@dataclass
class ModelInfo:
    """A compiled model: name, inputs and outputs, memory, work, fingerprint; the rest in ``details``."""

    name: str
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    arena_bytes: int
    params_bytes: int
    scratch_bytes: int
    state_bytes: int
    total_macs: int
    fingerprint: str
    operators: list[dict] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)  # every other field of metadata.json, as written
    format_version: int = FORMAT_VERSION
    microcompiler_version: str = __version__

    def detail(self, key: str, default: Any = None) -> Any:
        """A field of metadata.json beyond the typed ones (``shared_bodies``, ``ram_budget``, ...)."""
        return self.details.get(key, default)

    @property
    def keeps_state(self) -> bool:
        """Whether the model keeps state from one inference to the next (docs/state.md)."""
        return self.state_bytes > 0

    @property
    def graph_executor_refusal(self) -> str | None:
        """Why the graph executor cannot run this model (the AOT executor runs any), or None."""
        refusal = self.details.get("graph_executor_refusal")
        return str(refusal) if refusal else None

    @property
    def memory_peak(self) -> dict[str, Any]:
        """Where the RAM peak sits (codegen/memory_peak.py); empty in libraries written before it."""
        peak = self.details.get("memory_peak")
        return peak if isinstance(peak, dict) else {}

    @property
    def subgraphs(self) -> list[dict[str, Any]]:
        """The subgraphs of control-flow operators (codegen/subgraphs.py), each with its operators."""
        subgraphs = self.details.get("subgraphs")
        return subgraphs if isinstance(subgraphs, list) else []

    @property
    def input_bytes(self) -> int:
        return sum(t.bytes for t in self.inputs)

    @property
    def output_bytes(self) -> int:
        return sum(t.bytes for t in self.outputs)

    @property
    def has_float_io(self) -> bool:
        return any(t.dtype.startswith("float") for t in self.inputs + self.outputs)

    def to_json(self) -> dict:
        """The metadata.json object (keys in the order users read them)."""
        head = {
            "format_version": self.format_version,
            "microcompiler_version": self.microcompiler_version,
            "name": self.name,
            "inputs": [t.to_json() for t in self.inputs],
            "outputs": [t.to_json() for t in self.outputs],
        }
        numbers = {k: getattr(self, k) for k in _NUMBERS}
        return {**head, **numbers, **self.details, "operators": self.operators, "fingerprint": self.fingerprint}

    @classmethod
    def from_json(cls, data: Any, where: str = "metadata.json") -> ModelInfo:
        if not isinstance(data, dict):
            raise ModelInfoError(f"{where} is damaged (not a JSON object); compile the model again")
        version = data.get("format_version", 1)  # libraries written before the field: the same layout
        if not isinstance(version, int) or version < 1:
            raise ModelInfoError(f"{where} is damaged (format_version {version!r}); compile the model again")
        if version > FORMAT_VERSION:
            raise ModelInfoError(
                f"{where} was written by a newer microcompiler (format {version}, this one reads "
                f"{FORMAT_VERSION}); compile the model again with this version"
            )
        missing = [k for k in ("name", "inputs", "outputs") if k not in data]
        if (
            missing
            or not isinstance(data["name"], str)
            or not isinstance(data["inputs"], list)
            or not isinstance(data["outputs"], list)
        ):
            raise ModelInfoError(
                f"{where} is damaged (not a model library's metadata: "
                f"{', '.join(missing) or 'name, inputs or outputs'} wrong); compile the model again"
            )
        numbers = {k: data.get(k, 0) for k in _NUMBERS}
        if not all(isinstance(v, int) and v >= 0 for v in numbers.values()):
            raise ModelInfoError(
                f"{where} is damaged (a byte or MAC count is not a whole number); compile the model again"
            )
        known = {
            "format_version",
            "microcompiler_version",
            "name",
            "inputs",
            "outputs",
            "operators",
            "fingerprint",
            *_NUMBERS,
        }
        return cls(
            name=data["name"],
            inputs=[TensorInfo.from_json(t, where) for t in data["inputs"]],
            outputs=[TensorInfo.from_json(t, where) for t in data["outputs"]],
            fingerprint=str(data.get("fingerprint", "")),
            operators=list(data.get("operators", [])),
            details={k: v for k, v in data.items() if k not in known},
            format_version=version,
            microcompiler_version=str(data.get("microcompiler_version", "")),
            **numbers,
        )

    @classmethod
    def load(cls, path: str | Path) -> ModelInfo:
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except OSError as exc:
            raise ModelInfoError(f"cannot read {path} ({exc.strerror or exc}); compile the model again") from None
        except ValueError:
            raise ModelInfoError(f"{path} is damaged (not JSON); compile the model again") from None
        return cls.from_json(data, str(path))
