"""Operator kernels: one module per TFLite operator, each emitting one specialised C function.

A kernel module defines a subclass of :class:`microcompiler.ops.base.OpKernel` and registers it
with :func:`register`. ``SUPPORTED_OPERATORS`` is what the importer accepts; see
docs/architecture.md ("How to add an operator").
"""
import importlib
import pkgutil

from microcompiler.ops.base import KERNELS, OpKernel, kernel_for, register  # noqa: F401

# The importer checks operator names against this set before any kernel module is loaded.
SUPPORTED_OPERATORS = frozenset({
    "CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "ADD", "MUL", "AVERAGE_POOL_2D", "MAX_POOL_2D",
    "RESHAPE", "SOFTMAX", "QUANTIZE", "DEQUANTIZE", "RELU", "RELU6", "PAD", "CONCATENATION", "MEAN",
    "LOGISTIC",
})

_HELPER_MODULES = {"base", "quant"}


def load_kernels() -> None:
    """Import every kernel module in this package so that each registers itself."""
    for module in pkgutil.iter_modules(__path__):
        if module.name not in _HELPER_MODULES:
            importlib.import_module(f"microcompiler.ops.{module.name}")
