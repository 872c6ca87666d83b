"""Operator kernels: one module per TFLite operator, each emitting one specialised C function.

A kernel module defines a subclass of :class:`microcompiler.ops.base.OpKernel` and registers it
with :func:`register`. ``SUPPORTED_OPERATORS`` is what the importer accepts; see
docs/architecture.md ("How to add an operator").
"""
import importlib
import pkgutil

from microcompiler.ops.base import KERNELS, OpKernel, kernel_for, register  # noqa: F401

# The importer checks operators against this table before any kernel module is loaded:
# kind -> (fewest inputs, most inputs) as the TFLite schema defines them; every kind has one output.
SUPPORTED_OPERATORS = {
    "CONV_2D": (2, 3), "DEPTHWISE_CONV_2D": (2, 3), "FULLY_CONNECTED": (2, 3), "ADD": (2, 2), "MUL": (2, 2),
    "AVERAGE_POOL_2D": (1, 1), "MAX_POOL_2D": (1, 1), "RESHAPE": (1, 2), "SOFTMAX": (1, 1),
    "QUANTIZE": (1, 1), "DEQUANTIZE": (1, 1), "RELU": (1, 1), "RELU6": (1, 1), "PAD": (2, 2),
    "CONCATENATION": (1, 16), "MEAN": (2, 2), "LOGISTIC": (1, 1),
}

_HELPER_MODULES = {"base", "quant"}


def load_kernels() -> None:
    """Import every kernel module in this package so that each registers itself."""
    for module in pkgutil.iter_modules(__path__):
        if module.name not in _HELPER_MODULES:
            importlib.import_module(f"microcompiler.ops.{module.name}")
