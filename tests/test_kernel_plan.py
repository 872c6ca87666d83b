"""Kernel plans (microcompiler/ops/plan.py): typed, frozen, chosen by named predicates, and what the
code generator reads: metadata.json's "kernel" record is the plan's, and the runtime headers a plan
names are ones its C really uses (so naming them never adds an include to the generated C)."""

from __future__ import annotations

from pathlib import Path

import pytest

from microcompiler.codegen.runtime_headers import KERNEL_HEADERS, used_headers
from microcompiler.compiler import compile_model
from microcompiler.ops.fast.conv_2d_im2col import IM2COL
from microcompiler.ops.plan import (
    ISA_DSP,
    REFERENCE,
    REFERENCE_PLAN,
    Choice,
    KernelPlan,
    PlanRequest,
    Variant,
    choose,
)

MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
# Cortex-M3, M4 (DSP), M7 (DSP + FPU), M55 (DSP + FPU + Helium)
TARGETS = {
    "m3": frozenset(),
    "m4": frozenset({"dsp"}),
    "m7": frozenset({"dsp", "fpu"}),
    "m55": frozenset({"dsp", "fpu", "mve"}),
}


def test_a_plan_is_frozen_and_records_what_metadata_json_held():
    plan = KernelPlan.of(IM2COL, ISA_DSP, scratch_bytes=64, pixels=4, weights="s8")
    assert plan.as_json() == {"variant": "im2col", "isa": "dsp", "pixels": 4, "weights": "s8", "scratch_bytes": 64}
    with pytest.raises(AttributeError):
        plan.isa = "c"  # type: ignore[misc]
    with pytest.raises(TypeError):
        plan.knobs["pixels"] = 2  # type: ignore[index]
    noted = plan.with_knobs(requant="smmlar")
    assert noted.knob("requant") == "smmlar" and plan.knob("requant") is None
    assert plan.headers == IM2COL.headers == ("kernel_simd.h",)
    assert REFERENCE_PLAN.as_json() == {"variant": "reference"}


def test_a_plan_refuses_an_unknown_isa_and_fields_passed_as_knobs():
    with pytest.raises(ValueError, match="instruction set"):
        KernelPlan(REFERENCE, isa="sse")
    with pytest.raises(ValueError, match="fields of KernelPlan"):
        KernelPlan(REFERENCE, knobs={"variant": "im2col"})


def test_choose_takes_the_first_choice_whose_predicate_holds_and_that_gives_a_plan():
    fast, faster = Variant("fast"), Variant("faster")
    request = PlanRequest(op=None, graph=None, features=frozenset({"dsp"}))  # type: ignore[arg-type]
    choices = (
        Choice(lambda r: r.dsp, lambda r: None),  # applies, but gives no plan: the next is tried
        Choice(lambda r: r.mve, lambda r: KernelPlan(faster)),
        Choice(lambda r: r.dsp, lambda r: KernelPlan(fast)),
    )
    assert choose(choices, request).variant == fast
    assert choose(choices[:2], request) == REFERENCE_PLAN


def test_every_variant_names_known_headers():
    from microcompiler.ops import load_kernels
    from microcompiler.ops.plan import Variant as V

    load_kernels()
    import gc

    variants = [o for o in gc.get_objects() if isinstance(o, V)]
    assert len({v.name for v in variants}) >= 30
    for v in variants:
        assert set(v.headers) <= set(KERNEL_HEADERS), v


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("model", ["mlperf_tiny/kws_ref_model.tflite", "mlperf_tiny/pretrainedResnet_quant.tflite"])
def test_plans_are_what_codegen_records_and_their_headers_are_used(model, target):
    """Every operator's metadata "kernel" record is its plan's, and every header a plan names defines a
    helper the generated C calls: the includes equal those found from the C alone."""
    lib = compile_model(MODELS / model, features=TARGETS[target])
    ops_c = next(text for path, text in lib.files.items() if path.endswith("_ops.c"))
    scanned = set(used_headers([ops_c]))
    for fn, record in zip(lib.functions, lib.metadata["operators"]):
        assert record["kernel"] == fn.plan.as_json()
        assert set(fn.plan.headers) <= scanned, (fn.name, fn.plan)
    if target != "m3":
        assert any(fn.plan.isa for fn in lib.functions), "a fast kernel on a core with the DSP extension"
