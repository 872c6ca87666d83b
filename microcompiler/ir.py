"""The typed graph IR that every pass consumes and produces.

A :class:`Graph` is a list of :class:`Tensor` and a topologically ordered list of :class:`Operator`.
Operators refer to tensors by index. Passes return a new graph (see ``microcompiler.passes``);
they never mutate their input, so each one can be tested alone.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# dtype name -> (numpy dtype, C type)
DTYPES = {
    "int8": (np.int8, "int8_t"),
    "uint8": (np.uint8, "uint8_t"),
    "int16": (np.int16, "int16_t"),
    "int32": (np.int32, "int32_t"),
    "int64": (np.int64, "int64_t"),
    "float32": (np.float32, "float"),
    "bool": (np.bool_, "uint8_t"),
    "uint32": (np.uint32, "uint32_t"),
    "uint64": (np.uint64, "uint64_t"),
}


def c_type(dtype: str) -> str:
    return DTYPES[dtype][1]


def np_dtype(dtype: str):
    return DTYPES[dtype][0]


@dataclass
class Quantization:
    """Affine quantization: real = scale * (q - zero_point), per tensor or per channel."""

    scale: list[float]
    zero_point: list[int]
    axis: int = 0  # the quantized dimension, meaningful when there is more than one scale

    @property
    def per_channel(self) -> bool:
        return len(self.scale) > 1

    def single(self) -> tuple[float, int]:
        """The (scale, zero_point) of a per-tensor quantization."""
        return self.scale[0], self.zero_point[0]


@dataclass
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str
    quant: Quantization | None = None
    data: np.ndarray | None = None  # constant data, or None for activations
    # State that lives across inferences (a TFLite variable tensor, e.g. SVDF's activation state):
    # never a constant, never in the arena; ``initial`` holds the values it starts from and that
    # ``<model>_reset()`` restores (see docs/state.md).
    persistent: bool = False
    initial: np.ndarray | None = None

    @property
    def is_constant(self) -> bool:
        return self.data is not None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(np_dtype(self.dtype)).itemsize


@dataclass
class Operator:
    kind: str  # TFLite builtin name, e.g. "CONV_2D"
    inputs: list[int]  # tensor indices; -1 marks an omitted optional input
    outputs: list[int]
    options: dict[str, Any] = field(default_factory=dict)
    index: int = 0  # position in the original model, for error messages and comments
    # State the operator's kernel owns (not a model tensor: TFLM keeps it in a persistent buffer of
    # the kernel), role -> persistent tensor; added by the ``add_operator_state`` pass from
    # ``OpKernel.state`` (docs/state.md).
    state: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.kind.lower()}_{self.index}"


@dataclass
class Graph:
    name: str
    tensors: list[Tensor]
    operators: list[Operator]
    inputs: list[int]
    outputs: list[int]
    # Filled by passes: tensor index -> index of the tensor whose memory it shares.
    aliases: dict[int, int] = field(default_factory=dict)
    # Filled by the memory planner: tensor index -> byte offset in the arena.
    offsets: dict[int, int] = field(default_factory=dict)
    arena_bytes: int = 0
    # Filled by the memory planner: persistent tensor -> byte offset in the state section, a RAM
    # section of its own that is never reused (docs/state.md), and that section's size.
    state_offsets: dict[int, int] = field(default_factory=dict)
    state_bytes: int = 0

    @property
    def state_tensors(self) -> list[int]:
        """The persistent tensors (state kept across inferences), in tensor order."""
        return [i for i, t in enumerate(self.tensors) if t.persistent]

    def copy(self) -> "Graph":
        """A deep copy, sharing the (read-only) constant arrays."""
        memo = {id(a): a for t in self.tensors for a in (t.data, t.initial) if a is not None}
        return copy.deepcopy(self, memo)

    def consumers(self, tensor: int) -> list[Operator]:
        return [op for op in self.operators if tensor in op.inputs]

    def producer(self, tensor: int) -> Operator | None:
        for op in self.operators:
            if tensor in op.outputs:
                return op
        return None

    def storage(self, tensor: int) -> int:
        """The tensor whose memory ``tensor`` lives in (itself unless aliased)."""
        while tensor in self.aliases:
            tensor = self.aliases[tensor]
        return tensor
