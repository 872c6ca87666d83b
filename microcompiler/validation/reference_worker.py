"""The child process of :class:`microcompiler.validation.reference.Reference`: the TFLite Micro
interpreter, answering length-prefixed pickled requests on stdin with pickled ``(status, value)``
replies on the original stdout (the interpreter's own prints go to stderr). Only the parent, the
same microcompiler, writes to it.

Every request names a slot, ``(kind, slot, *arguments)``: the child keeps one interpreter per slot,
so one child can serve several models in turn (the fuzzer, the tests' oracle) without paying for a
new process and import each time."""

from __future__ import annotations

import os
import pickle
import struct
import sys
from typing import Any

import numpy as np


def main() -> int:
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # TFLM's MicroPrintf and Python prints must not reach the reply stream
    requests = sys.stdin.buffer
    interps: dict[Any, Any] = {}
    while True:
        header = requests.read(8)
        if len(header) < 8:
            return 0
        (size,) = struct.unpack("<Q", header)
        request = pickle.loads(requests.read(size))
        try:
            kind, slot = request[0], request[1]
            interp = interps.get(slot)
            if kind == "load":
                try:
                    from tflite_micro.python.tflite_micro import runtime
                except ImportError:
                    reply: tuple[str, Any] = ("missing", None)
                else:
                    _, _, model_bytes, arena, preserve = request
                    interps.pop(slot, None)
                    config = (
                        runtime.InterpreterConfig.kPreserveAllTensors
                        if preserve
                        else runtime.InterpreterConfig.kAllocationRecording
                    )
                    try:
                        interps[slot] = runtime.Interpreter.from_bytes(
                            model_bytes, arena_size=arena, intrepreter_config=config
                        )
                        reply = ("ok", None)
                    except (RuntimeError, ValueError) as exc:
                        reply = ("model", str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            elif kind == "drop":
                interps.pop(slot, None)
                reply = ("ok", None)
            elif interp is None:
                reply = ("error", f"no model loaded in slot {slot!r}")
            elif kind == "run":
                _, _, inputs, n_outputs = request
                for k, x in enumerate(inputs):
                    interp.set_input(x, k)
                interp.invoke()
                reply = ("ok", [np.array(interp.get_output(k)) for k in range(n_outputs)])
            elif kind == "reset":
                interp.reset()
                reply = ("ok", None)
            elif kind == "input_details":
                reply = ("ok", interp.get_input_details(request[2]))
            elif kind == "output_details":
                reply = ("ok", interp.get_output_details(request[2]))
            elif kind == "tensor":
                t = interp.GetTensor(request[2], 0)
                reply = ("ok", np.array(t["tensor_data"]).reshape(t["shape"]))
            else:
                reply = ("error", f"unknown request {kind!r}")
        except Exception as exc:  # noqa: BLE001 - reported to the parent as one line
            reply = ("error", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        replies.write(struct.pack("<Q", len(data)) + data)
        replies.flush()


if __name__ == "__main__":
    sys.exit(main())
