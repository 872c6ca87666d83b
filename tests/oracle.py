"""The outside oracle: the TFLite Micro Python interpreter (PyPI tflite-micro, pinned in pyproject)."""

from __future__ import annotations

import numpy as np
from tflite_micro.python.tflite_micro import runtime

ARENA_BYTES = 4 * 1024 * 1024


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

    def __init__(self, model_bytes: bytes):
        self.interp = runtime.Interpreter.from_bytes(model_bytes, arena_size=ARENA_BYTES)
        self.n_outputs = _count(model_bytes)

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        for k, x in enumerate(inputs):
            self.interp.set_input(x, k)
        self.interp.invoke()
        return [np.array(self.interp.get_output(k)) for k in range(self.n_outputs)]

    def run_sequence(self, steps: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
        """Invoke once per input set, in order, keeping the state; the outputs of every step."""
        return [self.run(inputs) for inputs in steps]

    def reset(self) -> None:
        """Reset the variable tensors to their initial values (TFLM's MicroInterpreter::Reset)."""
        self.interp.reset()
