"""Kernel plans: which implementation of an operator ``emit`` generates, as a typed record.

A kernel declares each implementation it has once, as a ``Variant`` (its name in metadata.json and
tuning logs, and the runtime headers its C always uses), next to the code that emits it::

    IM2COL = Variant("im2col", headers=("kernel_simd.h",))

and picks one for an operator with named predicates, tried in order (``choose``)::

    CHOICES = (
        Choice(im2col_fits, im2col_plan),   # im2col_fits(request) -> bool; im2col_plan(request) -> KernelPlan | None
        ...
    )
    def kernel_plan(self, op, graph, features=frozenset(), tuning=None) -> KernelPlan:
        return choose(CHOICES, PlanRequest(op, graph, features, tuning))

The ``KernelPlan`` it returns (frozen) names the variant, the instruction set ("c", "dsp", "mve", "fpu",
"mve-f"), the knobs that shape the loops, the scratch bytes and the runtime headers. ``emit`` dispatches
on ``plan.variant`` and records what it generated in ``ctx.plan`` (``ctx.note(requant=...)`` adds what only
emitting decides); the code generator writes ``plan.as_json()`` into metadata.json ("kernel") and
includes ``plan.headers``. Tuning knobs still come in as plain data (``{"variant": "reference"}``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from microcompiler.ops.features import has_dsp, has_fpu, has_long_multiply, has_mve

if TYPE_CHECKING:
    from microcompiler.ir import Graph, Operator, Tensor

# instruction sets a plan names ("isa" in metadata.json)
ISA_C = "c"  # the fast kernel's loops in portable C (no DSP extension)
ISA_DSP = "dsp"  # the DSP extension's SIMD instructions (SMLAD, SXTB16, SMMLAR)
ISA_MVE = "mve"  # Helium integer vectors (Cortex-M55)
ISA_FPU = "fpu"  # scalar single-precision FPU
ISA_MVE_F = "mve-f"  # Helium float vectors
ISAS = (ISA_C, ISA_DSP, ISA_MVE, ISA_FPU, ISA_MVE_F)


@dataclass(frozen=True)
class Variant:
    """One implementation an operator kernel may generate: its name (metadata.json's "variant", the
    tuning knob ``{"variant": name}``) and the runtime headers (crt/include/microcompiler/) its C
    always uses. ``shared_body``: whether layers that generate the same C apart from their arrays
    may share one body (codegen/shared_bodies.py); False for a variant whose body, given its arrays
    as parameters instead of at addresses the linker fixes, needs a larger stack frame than the
    layer's own function (the registers the arrays take), which would raise the stack high-water."""

    name: str
    headers: tuple[str, ...] = ()
    shared_body: bool = True


REFERENCE = Variant("reference")  # the portable reference loop nest, every kernel's
REFERENCE_FLOAT = Variant("reference-float")  # the float32 reference of a kernel whose integer variant differs
LUT = Variant("lut")  # an int8 function as a 256-entry table (ops/lut.py)


@dataclass(frozen=True)
class KernelPlan:
    """What ``emit`` generates for one operator: ``variant``, ``isa`` (None: the portable reference,
    no instruction set recorded), ``knobs`` (what shapes the loops: "weights", "pixels", "requant", ...;
    metadata.json's "kernel" record and the cost model's key), ``scratch_bytes`` (of the model's shared
    kernel scratch) and ``headers`` (the runtime headers its C uses: the variant's unless given)."""

    variant: Variant = REFERENCE
    isa: str | None = None
    knobs: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    scratch_bytes: int | None = None  # None: not recorded (kernels that never take scratch)
    headers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.isa is not None and self.isa not in ISAS:
            raise ValueError(f"unknown instruction set {self.isa!r} (one of {', '.join(ISAS)})")
        if "variant" in self.knobs or "isa" in self.knobs or "scratch_bytes" in self.knobs:
            raise ValueError("variant, isa and scratch_bytes are fields of KernelPlan, not knobs")
        object.__setattr__(self, "knobs", MappingProxyType(dict(self.knobs)))
        if not self.headers:
            object.__setattr__(self, "headers", self.variant.headers)

    @classmethod
    def of(cls, variant: Variant, isa: str | None = None, scratch_bytes: int | None = None, **knobs: Any) -> KernelPlan:
        """``KernelPlan.of(IM2COL, ISA_DSP, scratch_bytes=512, pixels=4, weights="s8")``."""
        return cls(variant, isa, knobs, scratch_bytes)

    def knob(self, name: str, default: Any = None) -> Any:
        return self.knobs.get(name, default)

    def with_knobs(self, **knobs: Any) -> KernelPlan:
        """The same plan with knobs added or changed (what emitting decided, e.g. requant="smmlar")."""
        return replace(self, knobs={**self.knobs, **knobs})

    def with_headers(self, *headers: str) -> KernelPlan:
        """The same plan using these runtime headers too."""
        return replace(self, headers=tuple(dict.fromkeys(self.headers + headers)))

    @property
    def scratch(self) -> int:
        """Scratch bytes, 0 when not recorded."""
        return self.scratch_bytes or 0

    def is_(self, variant: Variant) -> bool:
        return self.variant == variant

    def as_json(self) -> dict[str, Any]:
        """metadata.json's "kernel" record: {"variant": name, "isa": ..., knobs..., "scratch_bytes": n}."""
        record: dict[str, Any] = {"variant": self.variant.name}
        if self.isa is not None:
            record["isa"] = self.isa
        record.update(self.knobs)
        if self.scratch_bytes is not None:
            record["scratch_bytes"] = self.scratch_bytes
        return record


REFERENCE_PLAN = KernelPlan()


@dataclass(frozen=True)
class PlanRequest:
    """What a kernel's predicates look at: the operator, its graph, the target's CPU features and the
    tuning knobs for this operator."""

    op: Operator
    graph: Graph
    features: Collection[str] = frozenset()
    tuning: Mapping[str, Any] = field(default_factory=dict)

    def tensor(self, position: int) -> Tensor:
        """The operator's input ``position`` (-1: its first output)."""
        return self.graph.tensors[self.op.outputs[0] if position < 0 else self.op.inputs[position]]

    @property
    def dtype(self) -> str:
        """The type of the first input."""
        return self.tensor(0).dtype

    @property
    def dsp(self) -> bool:
        return has_dsp(self.features)

    @property
    def mve(self) -> bool:
        return has_mve(self.features)

    @property
    def fpu(self) -> bool:
        return has_fpu(self.features)

    @property
    def long_multiply(self) -> bool:
        """SMLAL (Cortex-M3 and up), or a core not known to lack it (features.has_long_multiply)."""
        return has_long_multiply(self.features)

    def knob(self, name: str, default: Any = None) -> Any:
        return (self.tuning or {}).get(name, default)


@dataclass(frozen=True)
class Choice:
    """One variant a kernel may take: when the named predicate ``applies`` holds, ``plan`` gives the
    plan (or None: try the next choice)."""

    applies: Callable[[PlanRequest], bool]
    plan: Callable[[PlanRequest], KernelPlan | None]


def choose(choices: tuple[Choice, ...], request: PlanRequest, otherwise: KernelPlan = REFERENCE_PLAN) -> KernelPlan:
    """The plan of the first choice whose predicate holds and that gives one; ``otherwise`` else."""
    for choice in choices:
        if choice.applies(request):
            plan = choice.plan(request)
            if plan is not None:
                return plan
    return otherwise


def dsp_or_c(features: Collection[str]) -> str:
    """The instruction set of a kernel written for the DSP extension: "dsp" with it, else "c" (the
    same loops in portable C)."""
    return ISA_DSP if has_dsp(features) else ISA_C
