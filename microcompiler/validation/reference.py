"""The reference: the TFLite Micro Python interpreter (the optional 'validate' extra), in a child process.

``Reference(model_bytes)`` runs a model and returns its outputs; with ``preserve=True`` it keeps
every tensor after an inference (TFLM's kPreserveAllTensors mode), so each intermediate tensor can
be compared with the device's.

The interpreter runs in a child process (``python -m microcompiler.validation.reference_worker``,
started with :func:`microcompiler.cleanup.spawn`): a model can make TFLM loop for ever (a WHILE
that never ends), abort the process (a failed TFLITE_CHECK) or ignore signals while inside C++.
Every call waits at most ``timeout`` seconds (the command's ``--timeout``); a signal to the command
stops the child with it, within a second.
"""

from __future__ import annotations

import itertools
import os
import pickle
import select
import signal
import struct
import sys
import tempfile
import time

import numpy as np

from microcompiler import cleanup
from microcompiler.errors import MicrocompilerError, ModelFormatError

ARENA_BYTES = 8 * 1024 * 1024  # the interpreter's tensor arena: enough for the models microcontrollers run
# The pinned interpreter, the same as pyproject's 'validate' extra.
TFLM_REQUIREMENT = "tflite-micro==0.dev20261023182759"
DEFAULT_TIMEOUT = 300.0
_START_SECONDS = 60.0  # starting the child and importing the interpreter


class ReferenceTimeout(MicrocompilerError):
    """TFLite Micro did not finish a call within the command's --timeout."""


class ReferenceProcess:
    """The child process running the interpreter: one per command, or one shared by many models
    (each :class:`Reference` on it has a slot of its own). Every call waits at most ``seconds``;
    a call that times out or a child that dies (TFLM aborted) stops the process for good
    (``alive`` becomes False): start a new one to go on."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT):
        self.timeout = timeout
        self._slots = itertools.count()
        self._released: list[int] = []  # slots to free before the next call (release() may run inside one)
        self._log = tempfile.TemporaryFile()  # the child's stderr (TFLM's own messages), read on failure
        self._proc = cleanup.spawn(
            [sys.executable, "-m", "microcompiler.validation.reference_worker"],
            stdin=_PIPE,
            stdout=_PIPE,
            stderr=self._log,
        )

    @property
    def alive(self) -> bool:
        return self._proc is not None

    def new_slot(self) -> int:
        return next(self._slots)

    def release(self, slot: int) -> None:
        """Free ``slot``'s interpreter in the child before the next call. Only noted here: a garbage
        collector's finalizer may call this in the middle of another call's exchange."""
        self._released.append(slot)

    def close(self) -> None:
        if self._proc is not None:
            cleanup.stop(self._proc, grace=1.0)
            for stream in (self._proc.stdin, self._proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            self._proc = None
        self._log.close()

    def __enter__(self) -> ReferenceProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def call(self, *request, what: str = "the model", seconds: float | None = None):
        """Send ``request`` (kind, slot, arguments...) and return the child's answer."""
        while self._released and self._proc is not None:
            self._exchange(("drop", self._released.pop()), what, _START_SECONDS)
        return self._exchange(request, what, seconds)

    def _exchange(self, request: tuple, what: str, seconds: float | None):
        if self._proc is None:
            raise MicrocompilerError(f"the TFLite Micro reference for {what} was stopped")
        seconds = self.timeout if seconds is None else seconds
        payload = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self._proc.stdin.write(struct.pack("<Q", len(payload)) + payload)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self._failed(what)
        deadline = time.monotonic() + seconds
        header = self._read(8, deadline, what, seconds)
        (size,) = struct.unpack("<Q", header)
        status, value = pickle.loads(self._read(size, deadline, what, seconds))
        if status == "ok":
            return value
        if status == "model":
            raise ModelFormatError(f"TFLite Micro cannot load {what} ({value}); check that it is a valid .tflite file")
        if status == "missing":
            raise MicrocompilerError(
                "validate needs the TFLite Micro interpreter, which is not installed: "
                f"pip install 'microcompiler[validate]' (or pip install {TFLM_REQUIREMENT})"
            )
        raise MicrocompilerError(f"TFLite Micro failed on {what}: {value}")

    def _read(self, n: int, deadline: float, what: str, seconds: float) -> bytes:
        fd = self._proc.stdout.fileno()
        chunks, got = [], 0
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise ReferenceTimeout(
                    f"TFLite Micro did not finish {what} within {seconds:g} s (the model "
                    "may loop for ever); stopped it. Raise --timeout to wait longer"
                )
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, min(n - got, 1 << 20))
            if not chunk:
                self._failed(what)
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _failed(self, what: str):
        proc = self._proc
        try:
            code = proc.wait(timeout=5)
        except Exception:  # noqa: BLE001
            code = None
        self._log.seek(0)
        lines = [ln.strip() for ln in self._log.read()[-4000:].decode(errors="replace").splitlines() if ln.strip()]
        said = lines[-2] if len(lines) >= 2 and lines[-1].startswith("Fatal Python") else (lines[-1] if lines else "")
        self.close()
        how = (
            f"was killed by {signal.Signals(-code).name}"
            if code is not None and code < 0 and -code in signal.Signals._value2member_map_
            else f"exited with code {code}"
        )
        raise MicrocompilerError(
            f"TFLite Micro {how} while running {what}" + (f": {said}" if said else "") + "; it cannot run this model"
        )


class Reference:
    """One interpreter for a model, reused for every sample (making it is the slow part). It runs
    in a child process of its own, or in a slot of ``process`` (shared, left running on close)."""

    def __init__(
        self,
        model_bytes: bytes,
        n_outputs: int,
        what: str = "the model",
        preserve: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
        process: ReferenceProcess | None = None,
        arena_bytes: int = ARENA_BYTES,
    ):
        self.what = what
        self.timeout = timeout
        self.n_outputs = n_outputs
        self._owned = process is None
        self.process = ReferenceProcess(timeout) if process is None else process
        self.slot = self.process.new_slot()
        try:
            self._call("load", model_bytes, arena_bytes, preserve, seconds=_START_SECONDS + timeout)
        except BaseException:
            self.close()
            raise

    def input_details(self, k: int) -> dict:
        return self._call("input_details", k)

    def output_details(self, k: int) -> dict:
        return self._call("output_details", k)

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return self._call("run", [np.asarray(x) for x in inputs], self.n_outputs)

    def reset(self) -> None:
        """Reset the variable tensors to their initial values (TFLM's MicroInterpreter::Reset)."""
        self._call("reset")

    def tensor(self, index: int) -> np.ndarray:
        """Tensor ``index`` of subgraph 0 after the last run (preserve=True only)."""
        return self._call("tensor", index)

    def close(self) -> None:
        process, self.process = getattr(self, "process", None), None
        if process is None:
            return
        if self._owned:
            process.close()
        elif process.alive:
            process.release(self.slot)

    def __enter__(self) -> Reference:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        if getattr(self, "_owned", False):
            try:
                self.close()
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass

    def _call(self, kind: str, *arguments, seconds: float | None = None):
        if self.process is None:
            raise MicrocompilerError(f"the TFLite Micro reference for {self.what} was stopped")
        return self.process.call(
            kind, self.slot, *arguments, what=self.what, seconds=self.timeout if seconds is None else seconds
        )


_PIPE = -1  # subprocess.PIPE
