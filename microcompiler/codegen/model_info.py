"""The model-info record: what a model library's ``metadata.json`` holds, typed and versioned.

The code generator builds a :class:`ModelInfo`; ``metadata.json`` is written from it
(:meth:`ModelInfo.to_json`) and read back into it (:meth:`ModelInfo.from_json`), so the fields a
program relies on are checked in one place. ``format_version`` says which layout a file has: a
library written before the field existed loads as version 1 (the same layout), a file of a newer
version than this microcompiler reads is refused in one line that says to recompile.
``microcompiler_version`` records the compiler that wrote it.

The records programs read are typed too, each refusing a damaged entry in one line that names it:
every operator (:class:`OperatorInfo`: kind, layer names, shapes, MACs, weights, kernel plan), the
other subgraphs with their operators (:class:`SubgraphInfo`), the bodies shared by identical layers
(:class:`SharedBodyInfo`) and where the RAM peak sits (:class:`MemoryPeak`). Fields that only some
readers use (the state arrays, patches, the RAM-budget plans, ...) stay in :attr:`ModelInfo.details`
as written. :meth:`ModelInfo.to_json` writes the keys in one fixed order, so a newly compiled
library's metadata.json reads back into a record that writes the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from microcompiler.errors import MicrocompilerError
from microcompiler.version import __version__

FORMAT_VERSION = 1  # metadata.json's layout; raise it when a field changes meaning or goes away
_NUMBERS = ("arena_bytes", "params_bytes", "scratch_bytes", "state_bytes", "total_macs")
_TENSOR_FIELDS = {"name": str, "c_name": str, "shape": list, "dtype": str, "bytes": int}
# metadata.json's keys in the order to_json writes them (users read them in this order); a key not
# listed (a detail only some readers use) goes before "operators", in the order it was given
_KEY_ORDER = (
    "format_version",
    "microcompiler_version",
    "name",
    "inputs",
    "outputs",
    *_NUMBERS,
    "memory_peak",
    "shared_arena",
    "weights_bytes",
    "state",
    "patches",
    "ram_budget",
    "dropped_channels",
    "subgraphs",
    "shared_bodies",
    "operators",
    "fingerprint",
    "graph_executor_refusal",  # the code generator adds it last
    "generator",  # compile -o adds these two when it writes the library (compiler.write_atomically)
    "files",
)
_RANK = {key: float(rank) for rank, key in enumerate(_KEY_ORDER)}


class ModelInfoError(MicrocompilerError):
    """A metadata.json that is damaged, or written by a newer microcompiler."""


def _damaged(where: str, what: str) -> ModelInfoError:
    return ModelInfoError(f"{where} is damaged ({what}); compile the model again")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _shapes(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(s, list) and all(isinstance(d, int) and not isinstance(d, bool) for d in s) for s in value
    )


def _kernel_record(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) for k in value) and _text(value.get("variant", ""))


def _text_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or check(value)


# what each kind of field must be, and how a refusal names it
_WHOLE = (_whole, "not a whole number")
_TEXT = (_text, "not text")
_Check = tuple[Callable[[Any], bool], str]


def _checked(data: Any, fields: Mapping[str, _Check], required: tuple[str, ...], where: str, what: str) -> dict:
    """``data`` as a JSON object whose ``fields`` (those present; every ``required`` one) pass their
    checks, or a one-line ModelInfoError naming ``what`` (the record) and the first field that fails."""
    if not isinstance(data, dict):
        raise _damaged(where, f"{what} is not a JSON object")
    for key in required:
        if key not in data:
            raise _damaged(where, f'{what} has no "{key}"')
    for key, (check, problem) in fields.items():
        if key in data and not check(data[key]):
            raise _damaged(where, f'{what}: "{key}" is {problem}')
    return data


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

    def to_json(self) -> dict[str, Any]:
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


_OPERATOR_FIELDS: dict[str, _Check] = {
    "index": _WHOLE,
    "kind": _TEXT,
    "function": _TEXT,
    "layer": _TEXT,
    "layer_name": _TEXT,
    "inputs": (_shapes, "not a list of shapes"),
    "outputs": (_shapes, "not a list of shapes"),
    "macs": _WHOLE,
    "weights_bytes": _WHOLE,
    "kernel": (_kernel_record, 'not a kernel record ({"variant": name, ...})'),
    "shared_body": _TEXT,
    "dropped_channels": _WHOLE,
    "dtype": _TEXT,
}
# a subgraph's operator (no layer names) is written in the order its record has had since it was added
_SUBGRAPH_OPERATOR_ORDER = ("index", "kind", "function", "macs", "inputs", "outputs", "kernel", "dtype")


@dataclass(frozen=True)
class OperatorInfo:
    """One operator of metadata.json's "operators" (or of a subgraph's): its position in the model
    (``index``), ``kind``, C ``function``, the layer's full (``layer``) and short (``layer_name``)
    names, its input and output shapes, ``macs``, the flash bytes of its own arrays
    (``weights_bytes``), the ``kernel`` plan it runs (``KernelPlan.as_json()``: {"variant", "isa",
    knobs..., "scratch_bytes"}), the body it shares with identical layers (``shared_body``), the
    all-zero output channels a pass dropped (``dropped_channels``) and, for a subgraph's operator,
    its input type (``dtype``). Fields a record does not have are None (0 for dropped_channels)."""

    index: int
    kind: str
    function: str
    macs: int
    inputs: tuple[tuple[int, ...], ...] = ()
    outputs: tuple[tuple[int, ...], ...] = ()
    kernel: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    layer: str | None = None
    layer_name: str | None = None
    weights_bytes: int | None = None
    shared_body: str | None = None
    dropped_channels: int = 0
    dtype: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(tuple(s) for s in self.inputs))
        object.__setattr__(self, "outputs", tuple(tuple(s) for s in self.outputs))
        object.__setattr__(self, "kernel", MappingProxyType(dict(self.kernel)))

    @property
    def variant(self) -> str:
        """The kernel variant it runs ("reference", "im2col", ...)."""
        return str(self.kernel.get("variant", "reference"))

    @property
    def isa(self) -> str | None:
        """The instruction set of its kernel ("dsp", "mve", ...), None for portable C."""
        isa = self.kernel.get("isa")
        return str(isa) if isa is not None else None

    @property
    def name(self) -> str:
        """The name a reader knows the layer by: its short name, else its full name, else its function."""
        return self.layer_name or self.layer or self.function

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "index": self.index,
            "kind": self.kind,
            "function": self.function,
            "layer": self.layer,
            "layer_name": self.layer_name,
            "inputs": [list(s) for s in self.inputs],
            "outputs": [list(s) for s in self.outputs],
            "macs": self.macs,
            "weights_bytes": self.weights_bytes,
            "kernel": dict(self.kernel),
            "shared_body": self.shared_body,
            "dropped_channels": self.dropped_channels or None,
            "dtype": self.dtype,
        }
        if self.layer is None and self.layer_name is None:
            record = {k: record[k] for k in _SUBGRAPH_OPERATOR_ORDER}
        return {k: v for k, v in record.items() if v is not None}

    @classmethod
    def from_json(cls, data: Any, where: str, what: str = "an operator") -> OperatorInfo:
        record = _checked(data, _OPERATOR_FIELDS, ("index", "kind", "function", "macs"), where, what)
        return cls(**{k: record[k] for k in _OPERATOR_FIELDS if k in record})


@dataclass(frozen=True)
class SubgraphInfo:
    """One of the other subgraphs (IF branches, WHILE condition and body, CALL_ONCE: codegen/subgraphs.py):
    its TFLite ``index``, ``name``, C ``function``, ``arena_bytes`` and operators."""

    index: int
    name: str
    function: str
    arena_bytes: int
    operators: tuple[OperatorInfo, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "function": self.function,
            "arena_bytes": self.arena_bytes,
            "operators": [op.to_json() for op in self.operators],
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> SubgraphInfo:
        fields = {
            "index": _WHOLE,
            "name": _TEXT,
            "function": _TEXT,
            "arena_bytes": _WHOLE,
            "operators": (lambda v: isinstance(v, list), "not a list"),
        }
        what = f"subgraph {data.get('index', '?')}" if isinstance(data, dict) else "a subgraph"
        record = _checked(data, fields, tuple(fields), where, what)
        operators = tuple(
            OperatorInfo.from_json(op, where, f"{what}, operator {k}") for k, op in enumerate(record["operators"])
        )
        return cls(record["index"], record["name"], record["function"], record["arena_bytes"], operators)


@dataclass(frozen=True)
class SharedBodyInfo:
    """A body emitted once for several identical layers (codegen/shared_bodies.py): its C ``function``
    and the layers' functions that call it."""

    function: str
    layers: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"function": self.function, "layers": list(self.layers)}

    @classmethod
    def from_json(cls, data: Any, where: str) -> SharedBodyInfo:
        fields = {"function": _TEXT, "layers": (_text_list, "not a list of function names")}
        record = _checked(data, fields, tuple(fields), where, "a shared body")
        return cls(record["function"], tuple(record["layers"]))


@dataclass(frozen=True)
class PeakTensor:
    """A tensor live at the RAM peak: its ``name``, the layer that writes it (None: a model input),
    its ``bytes`` and arena ``offset``."""

    name: str
    layer_name: str | None
    bytes: int
    offset: int | None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "layer_name": self.layer_name, "bytes": self.bytes, "offset": self.offset}


_PEAK_TENSOR_FIELDS: dict[str, _Check] = {
    "name": _TEXT,
    "layer_name": (_optional(_text), "not text"),
    "bytes": _WHOLE,
    "offset": (_optional(_whole), "not a whole number"),
}
_PEAK_FIELDS: dict[str, _Check] = {
    "bytes": _WHOLE,
    "arena_bytes": _WHOLE,
    "step": (_optional(_whole), "not a whole number"),
    "operator": (_optional(_whole), "not a whole number"),
    "kind": (_optional(_text), "not text"),
    "layer_name": (_optional(_text), "not text"),
    "tensors": (lambda v: isinstance(v, list), "not a list"),
}


@dataclass(frozen=True)
class MemoryPeak:
    """Where the RAM peak sits (codegen/memory_peak.py): the ``bytes`` live at the ``step`` with the
    largest live set, the model's ``arena_bytes``, the ``operator`` (its index) running there, its
    ``kind`` and ``layer_name``, and the tensors live there. ``step`` and the operator are None when
    the model has no arena buffers."""

    bytes: int
    arena_bytes: int
    step: int | None = None
    operator: int | None = None
    kind: str | None = None
    layer_name: str | None = None
    tensors: tuple[PeakTensor, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "bytes": self.bytes,
            "arena_bytes": self.arena_bytes,
            "step": self.step,
            "operator": self.operator,
            "kind": self.kind,
            "layer_name": self.layer_name,
            "tensors": [t.to_json() for t in self.tensors],
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> MemoryPeak:
        record = _checked(data, _PEAK_FIELDS, tuple(_PEAK_FIELDS), where, "the memory peak")
        tensors = tuple(
            PeakTensor(
                **_checked(t, _PEAK_TENSOR_FIELDS, tuple(_PEAK_TENSOR_FIELDS), where, "a tensor of the memory peak")
            )
            for t in record["tensors"]
        )
        return cls(**{**{k: record[k] for k in _PEAK_FIELDS if k != "tensors"}, "tensors": tensors})


def _records(data: Any, key: str, where: str) -> list[Any]:
    """metadata.json's list ``key`` ([] when a library written before it has none)."""
    value = data.get(key, [])
    if not isinstance(value, list):
        raise _damaged(where, f'"{key}" is not a list')
    return value


@dataclass
class ModelInfo:
    """A compiled model: name, inputs and outputs, memory, work, fingerprint, its operators and
    subgraphs, shared bodies and RAM peak; the rest in ``details``."""

    name: str
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    arena_bytes: int
    params_bytes: int
    scratch_bytes: int
    state_bytes: int
    total_macs: int
    fingerprint: str
    operators: list[OperatorInfo] = field(default_factory=list)
    subgraphs: list[SubgraphInfo] = field(default_factory=list)
    shared_bodies: list[SharedBodyInfo] = field(default_factory=list)
    memory_peak: MemoryPeak | None = None  # None in libraries written before it
    details: dict[str, Any] = field(default_factory=dict)  # every other field of metadata.json, as written
    format_version: int = FORMAT_VERSION
    microcompiler_version: str = __version__

    def detail(self, key: str, default: Any = None) -> Any:
        """A field of metadata.json beyond the typed ones (``ram_budget``, ``shared_arena``, ...)."""
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

    def subgraph(self, index: int) -> SubgraphInfo:
        """The subgraph with this TFLite index."""
        return next(s for s in self.subgraphs if s.index == index)

    @property
    def input_bytes(self) -> int:
        return sum(t.bytes for t in self.inputs)

    @property
    def output_bytes(self) -> int:
        return sum(t.bytes for t in self.outputs)

    @property
    def has_float_io(self) -> bool:
        return any(t.dtype.startswith("float") for t in self.inputs + self.outputs)

    def to_json(self) -> dict[str, Any]:
        """The metadata.json object, its keys in one fixed order (``_KEY_ORDER``)."""
        values: dict[str, Any] = {
            "format_version": self.format_version,
            "microcompiler_version": self.microcompiler_version,
            "name": self.name,
            "inputs": [t.to_json() for t in self.inputs],
            "outputs": [t.to_json() for t in self.outputs],
            **{k: getattr(self, k) for k in _NUMBERS},
            **({"memory_peak": self.memory_peak.to_json()} if self.memory_peak is not None else {}),
            "subgraphs": [s.to_json() for s in self.subgraphs],
            "shared_bodies": [b.to_json() for b in self.shared_bodies],
            **{k: v for k, v in self.details.items() if k not in _TYPED},
            "operators": [op.to_json() for op in self.operators],
            "fingerprint": self.fingerprint,
        }
        # sorted is stable: the details not in _KEY_ORDER keep their order, just before "operators"
        return {k: values[k] for k in sorted(values, key=lambda k: _RANK.get(k, _RANK["operators"] - 0.5))}

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
        peak = data.get("memory_peak")
        return cls(
            name=data["name"],
            inputs=[TensorInfo.from_json(t, where) for t in data["inputs"]],
            outputs=[TensorInfo.from_json(t, where) for t in data["outputs"]],
            fingerprint=str(data.get("fingerprint", "")),
            operators=[
                OperatorInfo.from_json(op, where, f"operator {k}")
                for k, op in enumerate(_records(data, "operators", where))
            ],
            subgraphs=[SubgraphInfo.from_json(s, where) for s in _records(data, "subgraphs", where)],
            shared_bodies=[SharedBodyInfo.from_json(b, where) for b in _records(data, "shared_bodies", where)],
            memory_peak=MemoryPeak.from_json(peak, where) if peak is not None else None,
            details={k: v for k, v in data.items() if k not in _KNOWN},
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


# the keys ModelInfo's own fields hold (the rest go to details as written)
_TYPED = {"operators", "subgraphs", "shared_bodies", "memory_peak"}
_KNOWN = {"format_version", "microcompiler_version", "name", "inputs", "outputs", "fingerprint", *_NUMBERS, *_TYPED}
