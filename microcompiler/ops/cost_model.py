"""Estimated instructions per layer: a linear model per kernel, fitted to measured ``bench`` data.

Each operator is described by a few work counts (``features``): its MACs, output and input
elements, ``window`` (MACs per output channel: the im2col or depth work), ``pixels`` (output
positions: the per-pixel loop overhead), ``channels`` (output channels: per-channel set-up and
tails) and ``edges`` (a padded convolution's output elements on the image border, where the kernel
checks the padding: DS-CNN's 25 x 5 maps have half their pixels there). A kernel's cost is
a non-negative linear combination of them plus a constant, fitted per kernel key (operator, type,
variant and the knobs that change the inner loop) and per core family (``core_family``: the
portable C of cores without DSP, the M4, M7 and M33 with DSP, the M55 with Helium: the same kernel
does not take the same instructions on each) by ``scripts/fit_cost_model.py`` from ``microcompiler
bench`` runs in QEMU with ``-icount shift=0`` (exact instruction counts) on one board of each
family; the coefficients live in ``cost_model_data.py``. Kernels without measurements fall back to
coarser keys (operator and type, then operator), then to the next family of ``FAMILY_FALLBACK``,
and finally to a per-MAC and per-element rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from microcompiler.ops import cost_model_data

FEATURES = ("macs", "outputs", "inputs", "window", "blocks", "pixels", "channels", "edges", "one")
# Knobs that change the inner loop (others, such as scratch sizes, do not).
KEY_KNOBS = ("isa", "gather", "weights", "extract", "requant", "multipliers", "chunk", "quads", "routine")
FALLBACK_PER_MAC = 2.0
FALLBACK_PER_ELEMENT = 6.0
# A kernel that copies part of its tensors with memcpy (MC_PATCH_COPY: {"variant": "memcpy", "elements": n})
# is costed by the bytes it moves (measured on mps2_an386: 920 instructions for 1,083 B in 19 rows,
# 2,520 for 4,096 B in 16 rows).
COPY_PER_ELEMENT = 0.65
COPY_PER_CALL = 150.0
# Core families with measured coefficients: "m3" is every core without DSP (Cortex-M0/M0+/M3: the
# portable C kernels, measured on the M3), "m4", "m7" and "m33" the DSP kernels, "m55" Helium.
DSP_FAMILIES = {"cortex-m7": "m7", "cortex-m33": "m33", "cortex-m35p": "m33"}
FAMILY_FALLBACK = {
    "m3": ("m3", "m4"),
    "m4": ("m4", "m7", "m33"),
    "m7": ("m7", "m4"),
    "m33": ("m33", "m4"),
    "m55": ("m55", "m4"),
}


def core_family(core: str | None, features: frozenset[str] | set[str] | None = None) -> str:
    """The cost-model family of a CPU: its kernels follow its features (compiler/targets), the
    family's coefficients its core."""
    features = features or frozenset()
    if "mve" in features:
        return "m55"
    if "dsp" not in features:
        return "m3"
    return DSP_FAMILIES.get(core or "", "m4")


class CostedOperator(Protocol):
    """What the cost model reads of an operator: metadata.json's operator record
    (codegen/model_info.py's OperatorInfo) has it, and so has :class:`OperatorWork`."""

    @property
    def kind(self) -> str: ...
    @property
    def macs(self) -> int: ...
    @property
    def inputs(self) -> Sequence[Sequence[int]]: ...
    @property
    def outputs(self) -> Sequence[Sequence[int]]: ...
    @property
    def kernel(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class OperatorWork:
    """An operator not yet compiled, described for the cost model (the RAM-budget planner's plans)."""

    kind: str
    macs: int
    inputs: Sequence[Sequence[int]]
    outputs: Sequence[Sequence[int]]
    kernel: Mapping[str, Any]  # KernelPlan.as_json()


def features(op: CostedOperator, dtype: str) -> dict[str, float]:
    """The work counts of one operator from its metadata.json entry."""
    out = int(sum(np.prod(s) for s in op.outputs))
    ins = int(np.prod(op.inputs[0])) if op.inputs else 0
    channels = op.outputs[0][-1] if op.outputs and op.outputs[0] else 1
    pixels = int(np.prod(op.outputs[0][:-1])) if op.outputs and op.outputs[0] else 1
    shape = op.outputs[0] if op.outputs else ()
    edges = 0
    x = op.inputs[0] if op.inputs else ()
    if op.kind in CONVOLUTIONS and len(shape) == 4 and len(x) == 4 and x[1] in (shape[1], 2 * shape[1]):
        # padded (SAME: input rows = stride x output rows, not a patch with its halo): the output
        # elements on the border ring, where the kernel checks the padding
        edges = (shape[1] * shape[2] - max(0, shape[1] - 2) * max(0, shape[2] - 2)) * shape[3]
    return {
        "macs": op.macs,
        "outputs": out,
        "inputs": ins,
        "window": op.macs / max(1, channels),
        # the window's work rounded up to blocks of 4 output channels (kernels that work on 4 rows
        # or channels at a time spend a whole block on a tail of 1-3)
        "blocks": -(-channels // 4) * 4 * op.macs / max(1, channels),
        "pixels": pixels,
        "channels": channels,
        "edges": edges,
        "one": 1,
    }


# Convolutions whose output rows are at most 1/STRIDED of their input rows (stride 2 and more) take
# fewer instructions per MAC than stride 1 (measured: DEPTHWISE_CONV_2D mve-channels16, 1.09 against
# 1.27 per MAC): their own key, with "stride=2".
STRIDED = 1.5
CONVOLUTIONS = ("CONV_2D", "DEPTHWISE_CONV_2D")


# A float32 operator whose input a RELU wrote (fused or not) reads many zeros: software floating
# point (cores without FPU) multiplies them in a few instructions, so it has its own key.
RELUS = ("RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1")


def after_relu(graph: Any, op: Any) -> bool:
    """Whether float32 input 0 of ``op`` (an ir.Operator of ``graph``) comes out of a RELU."""
    t = op.inputs[0] if op.inputs else -1
    if t < 0 or graph.tensors[t].dtype != "float32":
        return False
    producer = next((p for p in graph.operators if t in p.outputs), None)
    return producer is not None and (producer.kind in RELUS or producer.options.get("activation") in RELUS)


# Options of the ONNX importer (frontend/onnx_*.py) that select ONNX Runtime's arithmetic in a kernel:
# QUANTIZE's round-half-even, the float requantization epilogues (and their post tables), MLAS's
# summation orders and approximations. Such a kernel's cost is not its TFLite twin's: its own keys.
ONNX_OPTIONS = (
    "rounding",
    "requant",
    "table",
    "fma_chain",
    "fma_blocks",
    "mlas_m1",
    "mlas_columns",
    "ort_lanes",
    "ort_mlas",
    "ort_reduce",
    "ort_softmax",
)
POST_TABLE_INPUT = 3  # ops/requant_float.py's: the post table of a float-requantized layer


def onnx_knobs(op: Any) -> str:
    """The ONNX Runtime arithmetic an ir.Operator's kernel runs (ONNX_OPTIONS present, and
    ``post=table`` for a requantization with a post table), "" for TFLite's."""
    parts = []
    for name in ONNX_OPTIONS:
        value = op.options.get(name)
        if value:
            parts.append(f"{name}={value}" if isinstance(value, str) else name)
    if op.options.get("requant") and len(op.inputs) > POST_TABLE_INPUT and op.inputs[POST_TABLE_INPUT] >= 0:
        parts.append("post=table")
    return ",".join(parts)


def keys(op: CostedOperator, dtype: str, relu_input: bool = False, onnx: str = "") -> list[str]:
    """From the most to the least specific cost-model key of an operator (``relu_input``: after_relu;
    ``onnx``: onnx_knobs, which every key of the operator then carries)."""
    k = op.kernel
    knobs = ",".join(f"{n}={k[n]}" for n in KEY_KNOBS if n in k)
    first = f"{op.kind}|{dtype}|{k.get('variant', 'reference')}|{knobs}"
    rows_in = op.inputs[0][1] if op.inputs and len(op.inputs[0]) == 4 else 0
    rows_out = op.outputs[0][1] if op.outputs and len(op.outputs[0]) == 4 else 0
    if op.kind in CONVOLUTIONS and rows_out:
        first += ",stride=2" if rows_in >= STRIDED * rows_out else ",stride=1"
    if relu_input and dtype == "float32":
        first += ",input=relu"
    levels = [
        first,
        f"{op.kind}|{dtype}|{k.get('variant', 'reference')}|{knobs}",
        f"{op.kind}|{dtype}|{k.get('variant', 'reference')}",
        f"{op.kind}|{dtype}",
        op.kind,
    ]
    return [f"{key}|onnx:{onnx}" for key in levels] if onnx else levels


def estimate(
    op: CostedOperator, dtype: str, family: str = "m4", relu_input: bool = False, onnx: str = ""
) -> tuple[float, str]:
    """(estimated instructions, the key of the coefficients used: FAMILY:KEY) on a core of ``family``
    (core_family); ``relu_input`` and ``onnx`` as for keys."""
    if op.kernel.get("variant") == "memcpy":
        return COPY_PER_CALL + COPY_PER_ELEMENT * op.kernel["elements"], "memcpy"
    f = features(op, dtype)
    for fam in FAMILY_FALLBACK.get(family, (family, "m4")):
        table = cost_model_data.COEFFICIENTS.get(fam, {})
        for key in keys(op, dtype, relu_input, onnx):
            coeffs = table.get(key)
            if coeffs is not None:
                return sum(coeffs.get(n, 0.0) * f[n] for n in FEATURES), f"{fam}:{key}"
    return FALLBACK_PER_MAC * f["macs"] + FALLBACK_PER_ELEMENT * (f["outputs"] + f["inputs"]), "fallback"


# fit: the fewest terms whose error is within this much of the best subset's
SIMPLER_WITHIN = 0.01


def fit(samples: list[tuple]) -> dict:
    """Non-negative least squares on relative error over every subset of the features (few samples
    per key, so the simplest subset that fits within 1% more error than the best wins). A sample is
    (features, instructions) or (features, instructions, floor): its error counts relative to
    max(instructions, floor), so that a layer too short to matter for its model's total (floor: a
    share of that total) does not outweigh one that does."""
    # one sample per distinct operator shape (an unrolled LSTM repeats the same 20 layers: they
    # would outweigh every other shape of the key), its instructions their mean
    same: dict[tuple, list] = {}
    for s in samples:
        same.setdefault(tuple(s[0][n] for n in FEATURES), []).append(s)
    samples = [
        (group[0][0], sum(s[1] for s in group) / len(group), max(s[2] if len(s) > 2 else 1.0 for s in group))
        for group in same.values()
    ]
    names = [n for n in FEATURES if any(s[0][n] for s in samples)]
    x = np.array([[s[0][n] for n in names] for s in samples], dtype=np.float64)
    y = np.array([s[1] for s in samples], dtype=np.float64)
    floor = np.array([s[2] if len(s) > 2 else 1.0 for s in samples], dtype=np.float64)
    w = 1.0 / np.maximum(np.maximum(y, floor), 1.0)
    candidates = []
    for mask in range(1, 1 << len(names)):
        cols = [i for i in range(len(names)) if mask >> i & 1]
        if len(cols) > len(samples):
            continue
        coef, *_ = np.linalg.lstsq(x[:, cols] * w[:, None], y * w, rcond=None)
        if (coef < 0).any():
            continue
        err = float(np.sqrt(np.mean(((x[:, cols] @ coef - y) * w) ** 2)))
        candidates.append((err, len(cols), {names[c]: float(v) for c, v in zip(cols, coef)}))
    if not candidates:
        return {}
    best_err = min(c[0] for c in candidates)
    return min((c for c in candidates if c[0] <= best_err + SIMPLER_WITHIN), key=lambda c: (c[1], c[0]))[2]
