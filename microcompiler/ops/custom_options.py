"""Reading a custom operator's flexbuffer options (``op.options``, a dict made by the importer).

A model whose options lack a key the kernel reads, or hold a string where a number belongs, is
damaged (``ModelFormatError``): TFLM would read garbage or zero. TFLM's signal operators read
their options by position in the map's (key-sorted) value vector, so for them the keys must be
exactly the expected ones (``exact_keys``).
"""

from __future__ import annotations

from microcompiler.errors import ModelFormatError
from microcompiler.ir import Operator

_NUMBER = (int, float)


def _bad(op: Operator, what: str) -> ModelFormatError:
    return ModelFormatError(
        f"operator {op.index} ({op.kind}): {what}; the file is corrupted or was written "
        "by another converter: re-export the model"
    )


def number(op: Operator, key: str, default=None, integer: bool = False):
    """Option ``key`` as a Python int (``integer``) or float; ``default`` when absent, if given."""
    value = op.options.get(key)
    if value is None:
        if default is None:
            raise _bad(op, f"custom option '{key}' is missing")
        return default
    if not isinstance(value, _NUMBER):  # bool is an int: TFLM reads true as 1
        raise _bad(op, f"custom option '{key}' is {type(value).__name__} {value!r}, not a number")
    return int(value) if integer else float(value)


def integer(op: Operator, key: str, default=None) -> int:
    return number(op, key, default, integer=True)


def exact_keys(op: Operator, keys: tuple[str, ...]) -> None:
    """The map holds exactly ``keys`` (TFLM reads the values by their sorted position)."""
    if sorted(op.options) != sorted(keys):
        raise _bad(op, f"custom options {sorted(op.options)} differ from the expected {sorted(keys)}")
