"""The reference: the TFLite Micro Python interpreter (the optional 'validate' extra).

``Reference(model_bytes)`` runs a model and returns its outputs; with ``preserve=True`` it keeps
every tensor after an inference (TFLM's kPreserveAllTensors mode), so each intermediate tensor can
be compared with the device's.
"""
from __future__ import annotations

import numpy as np

from microcompiler.errors import MicrocompilerError, ModelFormatError

ARENA_BYTES = 8 * 1024 * 1024  # the interpreter's tensor arena: enough for the models microcontrollers run
# The pinned interpreter, the same as pyproject's 'validate' extra.
TFLM_REQUIREMENT = "tflite-micro==0.dev20261023182759"


def _runtime():
    try:
        from tflite_micro.python.tflite_micro import runtime
    except ImportError:
        raise MicrocompilerError("validate needs the TFLite Micro interpreter, which is not installed: "
                                 f"pip install 'microcompiler[validate]' (or pip install {TFLM_REQUIREMENT})") \
            from None
    return runtime


class Reference:
    """One interpreter for a model, reused for every sample (making it is the slow part)."""

    def __init__(self, model_bytes: bytes, n_outputs: int, what: str = "the model", preserve: bool = False):
        runtime = _runtime()
        config = (runtime.InterpreterConfig.kPreserveAllTensors if preserve
                  else runtime.InterpreterConfig.kAllocationRecording)
        try:
            self.interp = runtime.Interpreter.from_bytes(model_bytes, arena_size=ARENA_BYTES,
                                                         intrepreter_config=config)
        except (RuntimeError, ValueError) as exc:
            raise ModelFormatError(f"TFLite Micro cannot load {what} ({str(exc).splitlines()[0] if str(exc) else exc})"
                                   "; check that it is a valid .tflite file") from None
        self.n_outputs = n_outputs

    def input_details(self, k: int) -> dict:
        return self.interp.get_input_details(k)

    def output_details(self, k: int) -> dict:
        return self.interp.get_output_details(k)

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        for k, x in enumerate(inputs):
            self.interp.set_input(x, k)
        self.interp.invoke()
        return [np.array(self.interp.get_output(k)) for k in range(self.n_outputs)]

    def tensor(self, index: int) -> np.ndarray:
        """Tensor ``index`` of subgraph 0 after the last run (preserve=True only)."""
        t = self.interp.GetTensor(index, 0)
        return np.array(t["tensor_data"]).reshape(t["shape"])
