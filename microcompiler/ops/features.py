"""CPU features as the compiler sees them: one place.

A board file lists its CPU's features (``Board.cpu.features``: "dsp", "fpu", "fpu_dp", "mve");
``compile_model`` gets them as a set of names and the kernels choose their fast variants with
``has_dsp`` / ``has_mve`` / ``has_fpu`` / ``has_long_multiply``.

One name says what a core lacks: "no_long_multiply", the cores without the 32 x 32 -> 64 multiply
(SMLAL, UMULL: Armv6-M, Cortex-M0/M0+/M1, and Armv8-M Baseline, Cortex-M23), which the boards add
from the core's name (``core_features``). It is a lack, not a feature, because a compile for no known
core (the host, ``compile`` without ``--board``) must stay correct on every core: its portable C
chooses the long-multiply path or the int32 one when it is built (MC_LONG_MULTIPLY in
kernel_portable.h) and reserves the scratch of the first, which only a core known to lack the
multiply can drop (its kernels are then planned and generated as the int32 path alone).
"""

from __future__ import annotations

from collections.abc import Collection

DSP, FPU, MVE = "dsp", "fpu", "mve"  # feature names of the board files
NO_LONG_MULTIPLY = "no_long_multiply"  # the core has no SMLAL/UMULL (core_features adds it)
# The cores without the long multiply: kernel_portable.h's __ARM_ARCH_6M__ and __ARM_ARCH_8M_BASE__.
NO_LONG_MULTIPLY_CORES = ("cortex-m0", "cortex-m0plus", "cortex-m1", "cortex-m23")


def has_dsp(features: Collection[str]) -> bool:
    """The DSP extension (Cortex-M4/M7/M33/M55): SMLAD, SXTB16, SMMLAR."""
    return DSP in features


def has_mve(features: Collection[str]) -> bool:
    """Helium, the M-profile vector extension (Cortex-M55)."""
    return MVE in features


def has_fpu(features: Collection[str]) -> bool:
    """A single-precision FPU the C compiler may use (hard or softfp float ABI)."""
    return FPU in features


def has_long_multiply(features: Collection[str]) -> bool:
    """The 32 x 32 -> 64 multiply (SMLAL: Cortex-M3 and up, the host), or a core not known to lack it
    (no board: the generated C keeps both paths, MC_LONG_MULTIPLY)."""
    return NO_LONG_MULTIPLY not in features


def core_features(core: str, features: Collection[str]) -> frozenset[str]:
    """A core's features as the kernels see them: those listed, and NO_LONG_MULTIPLY for an Armv6-M or
    Armv8-M Baseline core (``core`` as a board file or -mcpu names it, e.g. "cortex-m0plus")."""
    lacks = core.lower() in NO_LONG_MULTIPLY_CORES
    return frozenset(features) | ({NO_LONG_MULTIPLY} if lacks else set())
