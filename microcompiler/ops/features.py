"""CPU features as the compiler sees them, and the instruction set a kernel plan names: one place.

A board file lists its CPU's features (``Board.cpu.features``: "dsp", "fpu", "fpu_dp", "mve");
``compile_model`` gets them as a set of names and the kernels choose their fast variants with
``has_dsp`` / ``has_mve`` / ``has_fpu``. A fast kernel's plan names the instruction set its code uses
(``"isa"``: "dsp", "mve", "fpu", "mve-f"); the model library asks ``uses_mve`` / ``uses_fpu`` which
runtime headers the model needs.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping

DSP, FPU, MVE = "dsp", "fpu", "mve"  # feature names of the board files
FLOAT_ISAS = (FPU, "mve-f")  # the "isa" of the float kernels' plans (the model includes kernel_float.h)


def has_dsp(features: Collection[str]) -> bool:
    """The DSP extension (Cortex-M4/M7/M33/M55): SMLAD, SXTB16, SMMLAR."""
    return DSP in features


def has_mve(features: Collection[str]) -> bool:
    """Helium, the M-profile vector extension (Cortex-M55)."""
    return MVE in features


def has_fpu(features: Collection[str]) -> bool:
    """A single-precision FPU the C compiler may use (hard or softfp float ABI)."""
    return FPU in features


def plan_isa(plan: Mapping | None) -> str | None:
    """The instruction set a kernel plan's code uses, or None (portable C)."""
    return (plan or {}).get("isa")


def uses_mve(plan: Mapping | None) -> bool:
    return plan_isa(plan) == MVE


def uses_fpu(plan: Mapping | None) -> bool:
    return plan_isa(plan) in FLOAT_ISAS
