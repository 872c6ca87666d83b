"""The typed graph IR that every pass consumes and produces.

A :class:`Graph` is a list of :class:`Tensor` and a topologically ordered list of :class:`Operator`.
Operators refer to tensors by index. Passes return a new graph (see ``microcompiler.passes``);
they never mutate their input, so each one can be tested alone.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
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
    # a TFLite resource handle (VAR_HANDLE's output); the importer resolves every handle to the
    # variable it names, so no generated code ever holds one
    "resource": (np.int32, "int32_t"),
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
    # how many scales the file gave (equal per-channel scales are kept as one): kernels that read
    # per-channel scales check it against the channels, as TFLM does; 0 when not from a file
    file_scales: int = 0

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
    # For state shared by several subgraphs (a resource variable, keyed by container/shared_name as
    # TFLM keys it): the same key in two subgraphs is the same memory. None: state of this graph only.
    variable: str | None = None

    @property
    def is_constant(self) -> bool:
        return self.data is not None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(np_dtype(self.dtype)).itemsize


@dataclass(frozen=True)
class PatchNote:
    """An operator that computes one patch of a layer (passes/patches.py)."""

    of: int  # the index of the layer it is a patch of
    index: int  # which patch of the grid
    window: tuple[int, int, int, int]  # the output rows r0..r1 and columns c0..c1 it computes


@dataclass(frozen=True)
class OperatorNotes:
    """What passes record about an operator beside its schema options. Codegen and metadata read
    them; C comments and tuning signatures are built from the schema options only."""

    layer_suffix: str | None = None  # an operator a pass split off a layer is named <layer>_<suffix>
    patch: PatchNote | None = None
    dropped_channels: int = 0  # all-zero output channels drop_zero_channels removed
    # DEPTHWISE_CONV_2D after drop_zero_channels: the input channel each remaining output channel reads
    input_channels: tuple[int, ...] | None = None
    # a patch of a CONV_2D/DEPTHWISE_CONV_2D/pool layer (passes/patches.py): the (top, left) padding
    # left at the true image border, instead of the layer's own
    patch_padding: tuple[int, int] | None = None
    subgraph_arena: int = 0  # bytes of a control-flow operator's subgraph arena (its last output)
    # the fused activation was a standalone RELU/RELU6 the ``fuse_activations`` pass folded in (the
    # model's own may be refused: TFLM's CONCATENATION allows none)
    activation_fused: bool = False


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
    notes: OperatorNotes = field(default_factory=OperatorNotes)  # what passes recorded (never options)

    @property
    def name(self) -> str:
        return f"{self.kind.lower()}_{self.index}"


def _copy_tensor(t: Tensor) -> Tensor:
    new = copy.copy(t)  # data and initial are shared read-only arrays
    if isinstance(t.shape, list):
        new.shape = list(t.shape)
    if t.quant is not None:
        new.quant = copy.copy(t.quant)
        new.quant.scale, new.quant.zero_point = list(t.quant.scale), list(t.quant.zero_point)
    return new


def _copy_operator(op: Operator, memo: dict) -> Operator:
    new = copy.copy(op)
    new.inputs, new.outputs = list(op.inputs), list(op.outputs)
    new.options = copy.deepcopy(op.options, memo)
    new.state = dict(op.state)
    return new


@dataclass
class Graph:
    name: str
    tensors: list[Tensor]
    operators: list[Operator]
    inputs: list[int]
    outputs: list[int]
    # Filled by passes: tensor index -> index of the tensor whose memory it shares.
    aliases: dict[int, int] = field(default_factory=dict)
    # Filled by the patch pass: input tensor -> output tensor of a 1x1 convolution that grows the
    # channels and reads each group of pixels before it writes theirs: the input may lie in the last
    # bytes of the output's buffer (memory_plan.tail_pairs; the planner checks it still holds).
    tail_shares: dict[int, int] = field(default_factory=dict)
    # Filled by the memory planner: tensor index -> byte offset in the arena.
    offsets: dict[int, int] = field(default_factory=dict)
    arena_bytes: int = 0
    # Filled by the memory planner: persistent tensor -> byte offset in the state section, a RAM
    # section of its own that is never reused (docs/state.md), and that section's size.
    state_offsets: dict[int, int] = field(default_factory=dict)
    state_bytes: int = 0
    # The other subgraphs of the model (TFLite subgraph index -> Graph), held by the main graph only:
    # the branches of IF, the condition and body of WHILE, the initialisation of CALL_ONCE. Each is
    # a Graph of its own (own tensors; its inputs/outputs are the caller's buffers) that every pass
    # transforms too; the planner gives it an arena of its own inside the caller's (docs/state.md).
    subgraphs: dict[int, Graph] = field(default_factory=dict)
    # Filled by the patch pass (passes/patches.py): the leading stage run in patches, its grid and
    # cost ({} when the model runs layer by layer).
    patches: dict = field(default_factory=dict)
    # Filled by the RAM-budget planner (passes/ram_budget.py): the plans it tried and the one it chose;
    # "in_place_depthwise": False keeps plan_memory from writing depthwise layers over their input.
    ram_plan: dict = field(default_factory=dict)

    @property
    def state_tensors(self) -> list[int]:
        """The persistent tensors (state kept across inferences), in tensor order."""
        return [i for i, t in enumerate(self.tensors) if t.persistent]

    def copy(self) -> Graph:
        """A deep copy, sharing the (read-only) constant arrays."""
        memo = {id(a): a for t in self.tensors for a in (t.data, t.initial) if a is not None}
        # field by field, not one generic deepcopy: every pass copies the graph, and a generic
        # deepcopy of 20,000 operators took seconds per pass
        new = copy.copy(self)
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "tensors":
                value = [_copy_tensor(t) for t in value]
            elif f.name == "operators":
                value = [_copy_operator(op, memo) for op in value]
            elif f.name == "subgraphs":
                value = {k: g.copy() for k, g in value.items()}
            elif f.name in ("inputs", "outputs"):
                value = list(value)
            elif isinstance(value, (dict, list, set)):
                value = copy.deepcopy(value, memo)
            setattr(new, f.name, value)
        return new

    def all_graphs(self) -> list[Graph]:
        """This graph and its subgraphs, main graph first."""
        return [self] + [self.subgraphs[k] for k in sorted(self.subgraphs)]

    def consumers(self, tensor: int) -> list[Operator]:
        return [op for op in self.operators if tensor in op.inputs]

    def producer(self, tensor: int) -> Operator | None:
        for op in self.operators:
            if tensor in op.outputs:
                return op
        return None

    def producers_and_readers(self) -> tuple[dict[int, Operator], dict[int, int]]:
        """(tensor -> the first operator writing it, tensor -> how many operators read it), built in
        one sweep: passes look these up per operator instead of scanning (``producer``, ``consumers``)."""
        producer_of: dict[int, Operator] = {}
        readers: dict[int, int] = {}
        for op in self.operators:
            for o in op.outputs:
                producer_of.setdefault(o, op)
            for i in set(op.inputs):
                readers[i] = readers.get(i, 0) + 1
        return producer_of, readers

    def storage(self, tensor: int) -> int:
        """The tensor whose memory ``tensor`` lives in (itself unless aliased)."""
        while tensor in self.aliases:
            tensor = self.aliases[tensor]
        return tensor


def called_subgraphs(op: Operator) -> list[int]:
    """The subgraph indices a control-flow operator calls (IF: then, else; WHILE: cond, body;
    CALL_ONCE: init), read from its options; [] for every other operator."""
    keys = (
        "then_subgraph_index",
        "else_subgraph_index",
        "cond_subgraph_index",
        "body_subgraph_index",
        "init_subgraph_index",
    )
    return [int(op.options[k]) for k in keys if k in op.options]
