"""CPU features as the compiler sees them: one place.

A board file lists its CPU's features (``Board.cpu.features``: "dsp", "fpu", "fpu_dp", "mve");
``compile_model`` gets them as a set of names and the kernels choose their fast variants with
``has_dsp`` / ``has_mve`` / ``has_fpu``.
"""

from __future__ import annotations

from collections.abc import Collection

DSP, FPU, MVE = "dsp", "fpu", "mve"  # feature names of the board files


def has_dsp(features: Collection[str]) -> bool:
    """The DSP extension (Cortex-M4/M7/M33/M55): SMLAD, SXTB16, SMMLAR."""
    return DSP in features


def has_mve(features: Collection[str]) -> bool:
    """Helium, the M-profile vector extension (Cortex-M55)."""
    return MVE in features


def has_fpu(features: Collection[str]) -> bool:
    """A single-precision FPU the C compiler may use (hard or softfp float ABI)."""
    return FPU in features
