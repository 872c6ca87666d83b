"""Operator kernels: one module per TFLite operator (or family), each emitting one specialised C function.

A kernel module defines a subclass of :class:`microcompiler.ops.base.OpKernel` and registers it
with :func:`register`; the class describes itself (inputs, outputs, types, options, fast kernels),
so the importer, ``microcompiler ops`` and ``docs/operators.md`` all read the same registry. See
docs/architecture.md ("How to add an operator").
"""

import importlib
import pkgutil

from microcompiler.ops.base import KERNELS, OpKernel, kernel_for, register  # noqa: F401

# Modules in this package that hold shared helpers rather than kernels.
_HELPER_MODULES = {
    "base",
    "quant",
    "geometry",
    "requantize",
    "conv_common",
    "reduce_common",
    "tflm_operators",
    "registry",
    "custom_options",
    "cost_model",
    "cost_model_data",
}
_loaded = False


def load_kernels() -> None:
    """Import every kernel module in this package so that each registers itself."""
    global _loaded
    if _loaded:
        return
    for module in pkgutil.iter_modules(__path__):
        if module.name not in _HELPER_MODULES and not module.ispkg:
            importlib.import_module(f"microcompiler.ops.{module.name}")
    _loaded = True


_supported: tuple[dict, dict] | None = None


def supported_operators() -> dict[str, OpKernel]:
    """Operator kind -> the kernel that compiles it, for every operator microcompiler supports
    (not the internal ones that only passes create, such as MC_CONSTANT_CHANNELS)."""
    global _supported
    load_kernels()
    if _supported is None or len(_supported[0]) != len(KERNELS):  # once, not once per operator of a model
        _supported = (
            dict(KERNELS),
            dict(sorted((kind, k) for kind, k in KERNELS.items() if not getattr(k, "internal", False))),
        )
    return dict(_supported[1])
