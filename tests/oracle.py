"""The outside oracle: the TFLite Micro Python interpreter (PyPI tflite-micro, pinned in pyproject).

The interpreter runs in a child process (microcompiler/validation/reference.py, the same bounded
runner ``validate`` uses), never inside the test process: a model can make TFLM loop for ever
(an endless WHILE) or abort (a failed TFLITE_CHECK). Every call waits at most ``ORACLE_TIMEOUT``
seconds (``MC_ORACLE_TIMEOUT``). One child per test process serves every Oracle (each has a slot of
its own in it), so a test pays for a pipe round trip per call, not for a process start; a child
that timed out or died is replaced by the next Oracle.
"""

from __future__ import annotations

import os
import weakref

import numpy as np

from microcompiler.errors import MicrocompilerError
from microcompiler.validation.reference import Reference, ReferenceProcess

ARENA_BYTES = 4 * 1024 * 1024
ORACLE_TIMEOUT = float(os.environ.get("MC_ORACLE_TIMEOUT", "300"))

_process: ReferenceProcess | None = None


class TFLMError(RuntimeError):
    """TFLM refused the model, failed on it, aborted or did not finish within ORACLE_TIMEOUT."""


def shared_process() -> ReferenceProcess:
    """The test process's interpreter child, started (again) when there is none alive."""
    global _process
    if _process is None or not _process.alive:
        _process = ReferenceProcess(ORACLE_TIMEOUT)
    return _process


def tflm_run(model_bytes: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run the model once in TFLM and return copies of its outputs."""
    return Oracle(model_bytes).run(inputs)


def _count(model_bytes: bytes) -> int:
    """The main subgraph's number of outputs, read from the flatbuffer (probing the interpreter
    for them makes TFLM print an error past the last one)."""
    import tflite

    return tflite.Model.GetRootAsModel(model_bytes, 0).Subgraphs(0).OutputsLength()


class Oracle:
    """One interpreter reused for many inputs (building it is the slow part). It keeps its state
    (variable tensors, e.g. SVDF's activation state) from one ``run`` to the next, as a device does;
    ``reset`` restores the initial state."""

    def __init__(self, model_bytes: bytes, timeout: float = ORACLE_TIMEOUT):
        self.n_outputs = _count(model_bytes)
        try:
            self.reference = Reference(
                model_bytes,
                self.n_outputs,
                what="the test's model",
                timeout=timeout,
                process=shared_process(),
                arena_bytes=ARENA_BYTES,
            )
        except MicrocompilerError as exc:
            raise TFLMError(str(exc)) from None
        weakref.finalize(self, self.reference.close).atexit = False  # frees the slot in the child

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        try:
            return self.reference.run(inputs)
        except MicrocompilerError as exc:
            raise TFLMError(str(exc)) from None

    def run_sequence(self, steps: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
        """Invoke once per input set, in order, keeping the state; the outputs of every step."""
        return [self.run(inputs) for inputs in steps]

    def reset(self) -> None:
        """Reset the variable tensors to their initial values (TFLM's MicroInterpreter::Reset)."""
        try:
            self.reference.reset()
        except MicrocompilerError as exc:
            raise TFLMError(str(exc)) from None
