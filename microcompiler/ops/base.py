"""The interface every operator kernel implements, and the helpers they share."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from microcompiler.errors import ModelFormatError, UnsupportedModelError
from microcompiler.ir import Graph, Operator, Tensor, c_type
from microcompiler.ops.plan import REFERENCE_PLAN, KernelPlan
from microcompiler.templating import render

KERNELS: dict[str, OpKernel] = {}


def register(cls):
    """Class decorator: make a kernel available for each operator kind it lists."""
    instance = cls()
    for kind in cls.kinds:
        KERNELS[kind] = instance
    return cls


def kernel_for(op: Operator) -> OpKernel:
    from microcompiler.ops import load_kernels

    load_kernels()
    try:
        return KERNELS[op.kind]
    except KeyError:
        raise UnsupportedModelError(f"no kernel for operator {op.kind} at index {op.index}") from None


@dataclass(frozen=True)
class StateBuffer:
    """A persistent array an operator's kernel owns (``OpKernel.state``): what TFLM keeps in a
    persistent buffer the kernel allocates (a signal operator's circular buffer), not a model tensor.
    ``initial`` (broadcast to ``shape``) is what it starts from and what ``<model>_reset()`` restores."""

    role: str  # names the C array: <model>_<layer>_<role>
    dtype: str
    shape: tuple[int, ...]
    initial: float | int | np.ndarray = 0


class OpKernel:
    """Turns one operator instance into one C function.

    ``check`` rejects configurations the kernel cannot run (with a message naming the operator);
    ``macs`` counts multiply-accumulates for metadata and benchmarks; ``emit`` returns the body of
    the C function, using ``ctx`` to name the operator's tensors and to place constants in flash.

    The class attributes describe the kernel to the importer and to ``microcompiler ops``:
    ``inputs``/``outputs`` the (fewest, most) tensors the TFLite schema allows (the importer
    checks a model against them; optional trailing inputs may be -1), ``types`` the tensor types
    supported (the activation type; ``type_notes`` for anything finer), ``options`` the builtin
    options honoured, and ``fast`` the CPU features that have a fast kernel, with what it covers.
    ``arity`` overrides ``inputs``/``outputs`` per kind for kernels that serve several kinds.
    """

    kinds: tuple[str, ...] = ()
    inputs: tuple[int, int] = (1, 1)
    outputs: tuple[int, int] = (1, 1)
    arity: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {}
    types: tuple[str, ...] = ("int8", "int16", "float32")
    type_notes: str = ""
    options: str = ""
    fast: dict[str, str] = {}
    # Models TFLM refuses in its prepare step (it aborts or fails to allocate), so no reference can
    # confirm an answer: check() refuses them with TFLM's reason (require_like_tflm); docs/operators.md
    # lists them.
    tflm_refusals: tuple[str, ...] = ()
    kind_refusals: dict[str, tuple[str, ...]] = {}  # the same, for one of several kinds a kernel serves
    # Names of the operator's inputs by position, for constant arrays in the generated C
    # (e.g. ("input", "filter", "bias") makes conv1's weights "<model>_conv1_filter").
    input_roles: tuple[str, ...] = ()
    # int8/int16 activations must carry quantization parameters (False for kernels that only move
    # or compare raw values, such as GATHER or CAST).
    quantized_io: bool = True
    # The knobs ``emit`` honours in ``ctx.tuning`` and the values worth trying (``microcompiler tune``,
    # docs/tuning.md): e.g. {"weights": ("s8", "s16")}. {"variant": "reference"} is every kernel's.
    tuning_knobs: dict[str, tuple] = {}

    def tuning_candidates(self, op, graph, features: frozenset[str]) -> list[dict]:
        """Knob settings to try for this operator instance, the heuristic's ({}) first: one knob set at
        a time to each of its values, and the reference loop nest. Kernels may narrow this per shape.
        Settings that generate the same code are dropped by the tuner."""
        knobs: list[dict] = [{}] + [{name: value} for name, values in self.tuning_knobs.items() for value in values]
        return knobs + [{"variant": "reference"}]

    def io_counts(self, kind: str) -> tuple[tuple[int, int], tuple[int, int]]:
        """((fewest, most) inputs, (fewest, most) outputs) of operator ``kind``."""
        return self.arity.get(kind, (self.inputs, self.outputs))

    def describe(self, kind: str) -> dict:
        """What ``microcompiler ops`` says of operator ``kind``; kernels serving several kinds
        override it where the kinds differ."""
        return {
            "types": list(self.types),
            "type_notes": self.type_notes,
            "options": self.options,
            "fast_kernels": dict(self.fast),
            "tflm_refusals": [*self.tflm_refusals, *self.kind_refusals.get(kind, ())],
        }

    def fold(self, op: Operator, graph: Graph) -> list[np.ndarray] | None:
        """The operator's outputs computed at compile time, or None when it cannot be folded.

        Called by the ``fold_constants`` pass when every input is a constant (and for operators
        such as SHAPE whose result depends only on static shapes). A kernel folds only what it
        computes exactly as its C code would."""
        return None

    def check(self, op: Operator, graph: Graph) -> None:
        pass

    def int8_table(self, op: Operator, graph: Graph) -> np.ndarray | None:
        """For an int8 -> int8 elementwise function of the operator's one input: its 256 results,
        computed at compile time as TFLM computes them, indexed by the input byte read as unsigned
        (ops/lut.py); None otherwise. Kernels that have one emit a table lookup, and the
        ``fuse_tables`` pass composes them."""
        return None

    def macs(self, op: Operator, graph: Graph) -> int:
        return 0

    def emit(self, op: Operator, graph: Graph, ctx: EmitContext) -> str:
        raise NotImplementedError

    def kernel_plan(
        self, op: Operator, graph: Graph, features: frozenset[str] = frozenset(), tuning: dict | None = None
    ) -> KernelPlan:
        """Which implementation and knobs ``emit`` chooses (ops/plan.py; recorded in metadata.json). Kernels
        with fast variants choose by ``features`` and ``tuning``; called without them, the plan for a
        target without features."""
        return REFERENCE_PLAN

    def state(self, op: Operator, graph: Graph) -> list[StateBuffer]:
        """The persistent arrays the operator keeps across inferences besides its tensors (called
        after ``check``). The ``add_operator_state`` pass makes each one a persistent tensor in
        ``op.state[role]``; ``emit`` reaches it with ``ctx.arg(op.state[role])`` (docs/state.md)."""
        return []

    def inplace_inputs(self, op: Operator, graph: Graph) -> tuple[int, ...]:
        """Positions in ``op.inputs`` whose memory the output may take over when that input is not
        read after this operator (the memory planner's in-place opt-in). A kernel lists an input
        only if it has the output's size and the generated code reads each of its elements before
        writing the output element at the same offset."""
        return ()

    def inplace_scratch(self, op: Operator, graph: Graph) -> int:
        """Scratch bytes the kernel's in-place schedule may need (0: none, e.g. elementwise kernels).
        A kernel with a non-zero figure (DEPTHWISE_CONV_2D: one input channel kept in scratch while
        that channel's output overwrites it) may also write an output smaller than the input, over
        its first bytes; the memory planner puts it in place only where that lowers the arena by
        more than this figure (passes/memory_plan.py, ``share_in_place_with_scratch``)."""
        return 0


class EmitContext:
    """What a kernel needs from the code generator while emitting one operator.

    ``arg(i)`` is the C expression for tensor i: the function parameter for activations, the
    flash array of a constant tensor, or the writable static array of a persistent (state) tensor,
    which the kernel updates in place (docs/state.md). ``const(suffix, array)`` adds a derived constant array
    (requantization multipliers, folded biases) and returns its C name.
    """

    def __init__(
        self,
        graph: Graph,
        op: Operator,
        prefix: str,
        params: ParamSink,
        features: frozenset[str] = frozenset(),
        tuning: dict | None = None,
    ):
        self.graph = graph
        self.op = op
        self.prefix = prefix
        self.params = params
        self.features = features  # CPU features of the target, e.g. {"dsp"}
        self.plan: KernelPlan | None = None  # set by emit() to the plan it generated (metadata.json)
        self.tuning: dict = tuning or {}  # knob overrides for this operator (e.g. {"weights": "s16"})
        # {"variant": "reference"} in the knobs: emit the reference loop nest, not a fast kernel
        self.reference_only = self.tuning.get("variant") == "reference"
        self.param_names: dict[int, str] = {}
        n_in = 0
        for i in op.inputs:
            if (
                i >= 0
                and not graph.tensors[i].is_constant
                and not graph.tensors[i].persistent
                and i not in self.param_names
            ):
                self.param_names[i] = f"input{n_in}"
                n_in += 1
        for n, o in enumerate(op.outputs):
            if not graph.tensors[o].persistent:
                self.param_names[o] = f"output{n}"
        if op.notes.subgraph_arena:  # a control-flow operator's last output (ops/control_flow.py)
            self.param_names[op.outputs[-1]] = "subgraph_arena"

    def note(self, **knobs) -> KernelPlan:
        """Add to ``plan`` what only emitting decides (e.g. requant="smmlar"); returns the new plan."""
        assert self.plan is not None, "emit() sets ctx.plan before noting what it decided"
        self.plan = self.plan.with_knobs(**knobs)
        return self.plan

    def arg(self, tensor: int) -> str:
        if tensor in self.param_names:
            return self.param_names[tensor]
        if tensor in self.params.state_names:
            return self.params.state_names[tensor]
        t = self.graph.tensors[tensor]
        pos = self.op.inputs.index(tensor) if tensor in self.op.inputs else -1
        roles = kernel_for(self.op).input_roles
        role = roles[pos] if 0 <= pos < len(roles) else f"input{pos}"
        return self.params.tensor(tensor, t, f"{self.prefix}_{role}")

    def const(
        self,
        suffix: str,
        array: np.ndarray,
        ctype: str | None = None,
        comment: str = "",
        symbols: dict[int, str] | None = None,
    ) -> str:
        """A derived constant array in flash; ``comment`` (one line above it in the C) says what it
        holds and, for records, their layout. Without one, the comment names the operator and the
        array's length. ``symbols``: the C constant expressions (a kernel's address, say) written in
        place of the values at these flat indices."""
        patch = self.op.notes.patch  # the patches of one layer (passes/patches.py) share equal arrays
        return self.params.add(
            f"{self.prefix}_{suffix}",
            np.asarray(array),
            ctype,
            comment or f"{self.op.kind} operator {self.op.index}: {suffix}, {np.asarray(array).size} values",
            share=(patch.of, suffix) if patch else None,
            symbols=symbols,
        )

    def model_const(self, name: str, array: np.ndarray, comment: str) -> str:
        """A constant array in flash that is not the layer's own (``<model>_<name>``): every operator
        asking for the same contents under the same name reads one array. Layers whose code is the
        same apart from such arrays then share their body with fewer parameters
        (codegen/shared_bodies.py)."""
        data = np.asarray(array)
        array_name = self.params.add(f"{self.params.model}_{name}", data, None, comment, share=("model", name))
        self.params.model_arrays.add(array_name)
        return array_name

    def tensor(self, i: int) -> Tensor:
        return self.graph.tensors[i]

    def render(self, template: str, **values) -> str:
        if "ort_requant" not in values:  # _requant.j2: ONNX Runtime's requantization (ops/requant_float.py)
            from microcompiler.ops.requant_float import post_table_const, requant_function

            values["ort_requant"] = requant_function(self.op, self.tensor)
            values.setdefault("ort_table", post_table_const(self) if values["ort_requant"] else None)
        return render(template, **values)

    def scratch(self, nbytes: int) -> str:
        """The C name of the model's scratch buffer (int32_t-aligned, at least nbytes), shared by
        every operator of the model (one runs at a time); it lives in .bss, not on the stack."""
        return self.params.scratch(nbytes)

    def helper(
        self, what: str, params: str, cases: dict[int, str], render: Callable[[dict[int, str]], str], comment: str
    ) -> str:
        """A ``static void`` function of the model (C name ``<model>_<what>``) with this parameter
        list, defined before the operators; the operator calls it. Its body is ``render(cases)``
        over the cases every caller asked for (a switch over them, say): layers asking for the same
        ``what`` and parameters share one function, its cases the union of theirs, as long as the
        cases they both ask for have the same code and their ``render`` gives the same body for the
        union (else a function of their own). ``comment`` says
        what it computes, ``{cases}`` in it standing for its cases."""
        return self.params.helper(what, params, cases, render, comment, self.prefix)


@dataclass
class Helper:
    """A static function of the model that operators call (EmitContext.helper)."""

    name: str
    what: str  # what it computes: the C name without the model's prefix and without a _2 of its own
    params: str
    cases: dict[int, str]  # case -> its code, the union over the callers
    render: Callable[[dict[int, str]], str]  # the body from the cases
    comment: str  # what it computes; "{cases}" in it stands for the list of its cases
    callers: list[str] = field(default_factory=list)

    @property
    def body(self) -> str:
        return self.render(self.cases)

    @property
    def description(self) -> str:
        return self.comment.format(cases=", ".join(str(k) for k in self.cases))


class ParamSink:
    """Collects the ``static const`` arrays that end up in flash, and the size of the kernels'
    shared scratch buffer."""

    _CTYPES = {
        np.dtype(np.int8): "int8_t",
        np.dtype(np.int16): "int16_t",
        np.dtype(np.int32): "int32_t",
        np.dtype(np.int64): "int64_t",
        np.dtype(np.float32): "float",
        np.dtype(np.uint8): "uint8_t",
    }

    def __init__(self, model: str):
        self.model = model
        self.arrays: list[tuple[str, str, np.ndarray, str]] = []  # (name, ctype, data, comment)
        self.symbols: dict[str, dict[int, str]] = {}  # array -> C expressions in place of values (add)
        self._by_tensor: dict[int, str] = {}  # id(Tensor) -> array (subgraphs number tensors from 0 too)
        self._by_content: dict[tuple, str] = {}  # constants shared between subgraphs
        self.scratch_bytes = 0  # the largest scratch any operator asked for (multiple of 4)
        self._shared: dict = {}  # ParamSink.add's share key -> array name
        self.model_arrays: set[str] = set()  # arrays of no one layer (EmitContext.model_const)
        self.helpers: list[Helper] = []  # static functions the operators call (EmitContext.helper)
        # persistent tensor -> its static state array (codegen/state.py), set before emitting
        self.state_names: dict[int, str] = {}
        # the model's other subgraphs (planned), for the control-flow kernels (ops/control_flow.py)
        self.subgraphs: dict[int, Graph] = {}

    def scratch(self, nbytes: int) -> str:
        self.scratch_bytes = max(self.scratch_bytes, -(-int(nbytes) // 4) * 4)
        return f"{self.model}_scratch"

    def tensor(self, index: int, t: Tensor, name: str | None = None) -> str:
        """The flash array of constant tensor ``index``, named ``name`` (default ``<model>_t<index>``)
        by the first operator that reads it."""
        if id(t) not in self._by_tensor:
            content = (t.dtype, tuple(t.shape), np.ascontiguousarray(t.data).tobytes()) if self.subgraphs else None
            if content in self._by_content:  # the same constant in another subgraph: one array in flash
                self._by_tensor[id(t)] = self._by_content[content]
                return self._by_content[content]
            name = self._unique(name or f"{self.model}_t{index}")
            self.arrays.append((name, c_type(t.dtype), t.data, f"tensor {index}: {t.name} {list(t.shape)}"))
            self._by_tensor[id(t)] = name
            if content is not None:
                self._by_content[content] = name
        return self._by_tensor[id(t)]

    def _unique(self, name: str) -> str:
        taken = {a[0] for a in self.arrays}
        candidate, n = name, 2
        while candidate in taken:
            candidate, n = f"{name}_{n}", n + 1
        return candidate

    def add(
        self,
        name: str,
        data: np.ndarray,
        ctype: str | None = None,
        comment: str = "",
        share=None,
        symbols: dict[int, str] | None = None,
    ) -> str:
        """A new array, or with ``share`` (a key) the array added before under the same key with the
        same type and contents. ``symbols``: C expressions in place of the values at these flat indices."""
        ctype = ctype or self._CTYPES[data.dtype]
        contents = (ctype, data.shape, np.ascontiguousarray(data).tobytes(), tuple(sorted((symbols or {}).items())))
        key = None if share is None else (share, *contents)
        if key in self._shared:
            return self._shared[key]
        name = self._unique(name)
        self.arrays.append((name, ctype, data, comment))
        if symbols:
            self.symbols[name] = dict(symbols)
        if key is not None:
            self._shared[key] = name
        return name

    def helper(
        self,
        what: str,
        params: str,
        cases: dict[int, str],
        render: Callable[[dict[int, str]], str],
        comment: str,
        caller: str,
    ) -> str:
        for h in self.helpers:
            if (h.what, h.params) != (what, params) or any(h.cases.get(k, c) != c for k, c in cases.items()):
                continue
            merged = dict(sorted({**h.cases, **cases}.items()))
            # the same body for both callers: what lies outside the cases (an output zero point in an
            # enum, say) must agree too
            if h.render(merged) == render(merged):
                h.cases = merged
                if caller not in h.callers:
                    h.callers.append(caller)
                return h.name
        taken = {h.name for h in self.helpers}
        name, n = f"{self.model}_{what}", 2
        while name in taken:
            name, n = f"{self.model}_{what}_{n}", n + 1
        self.helpers.append(Helper(name, what, params, dict(sorted(cases.items())), render, comment, [caller]))
        return name

    @property
    def nbytes(self) -> int:
        return sum(int(a.nbytes) for _, _, a, _ in self.arrays)


def require(cond: bool, op: Operator, what: str) -> None:
    """Reject an operator configuration with a message naming the operator."""
    if not cond:
        raise UnsupportedModelError(f"operator {op.index} ({op.kind}): {what}")


def require_consistent(cond: bool, op: Operator, what: str) -> None:
    """Refuse a model whose tensors contradict each other or the operator (a count, a shape, a
    length, an index or a type the operator's arithmetic relies on): a damaged or inconsistent file,
    not something microcompiler lacks. ``what`` says what does not match (TFLM's reason where its
    prepare step refuses the same)."""
    if not cond:
        raise ModelFormatError(
            f"operator {op.index} ({op.kind}): {what}; the model is damaged or inconsistent: re-export it "
            "with the TFLite converter"
        )


@contextmanager
def operator_context(op: Operator) -> Iterator[None]:
    """Name ``op`` in a ModelFormatError raised without it (the compile-time arithmetic of
    ops/quant.py does not know which operator it serves)."""
    try:
        yield
    except ModelFormatError as exc:
        if str(exc).startswith("operator "):
            raise
        raise type(exc)(f"operator {op.index} ({op.kind}): {exc}") from None


def require_like_tflm(cond: bool, op: Operator, what: str) -> None:
    """Refuse what TFLM's prepare step refuses (``what``: its reason), where no reference can
    confirm any answer: TFLM aborts or fails to allocate the model."""
    if not cond:
        raise UnsupportedModelError(
            f"operator {op.index} ({op.kind}): {what}; TFLite Micro refuses this model in its "
            "prepare step, so no reference can confirm any answer: re-quantize or convert "
            "the model again"
        )


def require_elementwise(op: Operator, graph: Graph) -> tuple[Tensor, Tensor]:
    """Check a one-input, one-output operator whose tensors hold the same number of elements."""
    require(
        len(op.inputs) == 1 and op.inputs[0] >= 0 and len(op.outputs) == 1,
        op,
        "expects exactly one input and one output",
    )
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    require_consistent(
        x.size == y.size, op, f"input shape {list(x.shape)} and output shape {list(y.shape)} differ in size"
    )
    return x, y


def require_same_shape(op: Operator, x: Tensor, y: Tensor) -> None:
    """Input and output of the same shape, dimension by dimension (TFLM's HaveSameShapes, which the
    prepare steps of EXP, ROUND, LOG_SOFTMAX, CUMSUM, ... check)."""
    require_consistent(
        tuple(x.shape) == tuple(y.shape),
        op,
        f"input shape {list(x.shape)} and output shape {list(y.shape)} differ (TFLM requires the same shape)",
    )


def require_unary(op: Operator, graph: Graph, types: tuple[str, ...]) -> tuple[Tensor, Tensor]:
    """Check an elementwise operator: one input and one output of the same size and the same type,
    one of ``types``; integer tensors carry quantization parameters."""
    x, y = require_elementwise(op, graph)
    require(x.dtype in types, op, f"input type {x.dtype} is not supported ({', '.join(types)})")
    require(y.dtype == x.dtype, op, f"output type {y.dtype} differs from input type {x.dtype}")
    if x.dtype != "float32":
        require(
            x.quant is not None and y.quant is not None, op, f"{x.dtype} input and output need quantization parameters"
        )
    return x, y


class ElementwiseKernel(OpKernel):
    """An operator computing each output element from the input element at the same offset: one
    operation per element, and safe in place (the element is read before it is written)."""

    def macs(self, op: Operator, graph: Graph) -> int:
        return graph.tensors[op.inputs[0]].size

    def inplace_inputs(self, op: Operator, graph: Graph) -> tuple[int, ...]:
        return (0,)


def activation_dtype(op: Operator, graph: Graph) -> str:
    return graph.tensors[op.outputs[0]].dtype
