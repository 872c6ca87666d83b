"""What the host needs to drive a model on a device: its metadata and its graph description.

The graph description is the one the on-device graph executor runs (format in
microcompiler/codegen/graph_description.py): memory slots inside a pool, the model's input and
output slots, and each operator's function name and argument slots. In host-driven mode the host
walks it instead of the device, so tensors sit at the same offsets as on-device execution.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

from microcompiler.codegen.graph_description import ARG_BYTES, HEADER, MAGIC, OP_HEADER
from microcompiler.codegen.model_info import ModelInfo, ModelInfoError
from microcompiler.errors import MicrocompilerError

PLAN_FILE = "host_driven.json"


@dataclass(frozen=True)
class PlannedOp:
    function: str
    slots: tuple[int, ...]


@dataclass
class ModelPlan:
    metadata: dict
    description: bytes

    def __post_init__(self):
        _ = self.info  # the fields every reader relies on, checked before anything uses them
        self._parse()

    @property
    def info(self) -> ModelInfo:
        """The metadata, typed (codegen/model_info.py)."""
        try:
            return ModelInfo.from_json(self.metadata, "the model's metadata")
        except ModelInfoError as exc:
            raise MicrocompilerError(
                f"{str(exc).rpartition(';')[0]}; create the project with mode host-driven again"
            ) from None

    def _parse(self) -> None:
        d = self.description
        try:
            magic, n_slots, n_ops, n_in, n_out, max_args, pool, n_strings = HEADER.unpack_from(d)
            if magic == b"MCG1":
                raise MicrocompilerError(
                    "the host-driven plan was written by an older microcompiler (graph description MCG1); "
                    "create the project with mode host-driven again"
                )
            if magic != MAGIC:
                raise ValueError(f"magic {magic!r}, not {MAGIC!r}")
            pos = HEADER.size
            self.slots = [struct.unpack_from("<II", d, pos + 8 * i) for i in range(n_slots)]
            pos += 8 * n_slots
            self.input_slots = list(struct.unpack_from(f"<{n_in}H", d, pos))
            pos += 2 * n_in
            self.output_slots = list(struct.unpack_from(f"<{n_out}H", d, pos))
            pos += 2 * n_out
            if n_strings > len(d) - pos:
                raise ValueError("string table size")
            strings = d[len(d) - n_strings :]
            self.ops = []
            for _ in range(n_ops):
                name_offset, argc = OP_HEADER.unpack_from(d, pos)
                slots = struct.unpack_from(f"<{argc}H", d, pos + OP_HEADER.size)
                pos += OP_HEADER.size + 2 * argc
                if argc > max_args or pos > len(d) - n_strings:
                    raise ValueError("operator records")
                name = strings[name_offset : strings.index(b"\0", name_offset)].decode()
                self.ops.append(PlannedOp(name, tuple(slots)))
            if pos != len(d) - n_strings or ARG_BYTES * max_args > pool:
                raise ValueError("operator records")
            # the host allocates the tensors' part: the pointer table at the end is the on-device
            # graph executor's (the RPC server keeps its own)
            self.pool_bytes = pool - ARG_BYTES * max_args
            self.max_args = max_args
        except (struct.error, ValueError, UnicodeDecodeError) as exc:
            raise MicrocompilerError(
                f"the model's graph description is damaged ({exc}); compile the model again"
            ) from None
        if any(s >= len(self.slots) for op in self.ops for s in op.slots):
            raise MicrocompilerError("the model's graph description refers to a missing tensor; compile it again")

    @property
    def name(self) -> str:
        return self.info.name

    @classmethod
    def from_library(cls, library) -> ModelPlan:
        from microcompiler.codegen.graph_description import build_description

        description, _ = build_description(library.graph, library.functions)
        return cls(library.metadata, description)

    def to_json(self) -> dict:
        return {"format": 1, "metadata": self.metadata, "graph_description": self.description.hex()}

    def save(self, directory: str | Path) -> Path:
        path = Path(directory) / PLAN_FILE
        path.write_text(json.dumps(self.to_json(), indent=1) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> ModelPlan:
        path = Path(path)
        if path.is_dir():
            path = path / PLAN_FILE
        try:
            data = json.loads(path.read_text())
            return cls(data["metadata"], bytes.fromhex(data["graph_description"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise MicrocompilerError(
                f"cannot read the host-driven plan {path}: {exc}; create the project with mode host-driven"
            ) from None
