"""Host-driven execution: the graph stays on the host, tensors live on the device, operators run there.

The executor allocates one device buffer laid out like the graph executor's pool (same offsets as
on-device execution, so in-place and overlapping tensors behave identically and outputs match
standalone runs bit for bit), then calls each operator's function over RPC in graph order.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from microcompiler.codegen.model_info import TensorInfo
from microcompiler.errors import DeviceError, MicrocompilerError
from microcompiler.inputs import same_shape
from microcompiler.ir import np_dtype
from microcompiler.rpc.protocol import TensorArg

NOT_FOUND = 2  # MC_ERR_NOT_FOUND, LOOKUP's status for a name the device does not have

if TYPE_CHECKING:
    from microcompiler.rpc.plan import ModelPlan


class DevicePool(Protocol):
    """The device buffer the executor lays the graph's tensors out in (a client.DeviceBuffer)."""

    handle: int
    freed: bool

    def write(self, data: Any, offset: int = 0) -> None: ...
    def read_array(self, dtype: Any, shape: Any, offset: int = 0) -> np.ndarray: ...
    def free(self) -> None: ...


class RemoteSession(Protocol):
    """What the executor needs of the open session it is handed (client.Session, whose
    ``session.executor()`` makes one): the executor sits below the client and never makes a session."""

    @property
    def is_open(self) -> bool: ...
    def lookup(self, name: str) -> Any: ...
    def alloc(self, nbytes: int) -> DevicePool: ...
    def call(self, function: Any, *args: Any) -> int: ...
    def time_evaluator(self, function: Any, number: int = 10, repeat: int = 3) -> Callable[..., Any]: ...


class GraphExecutor:
    """Runs a model's operators one by one on the device. Use as a context manager to free its memory.

    ``GraphExecutor(session, plan)`` takes an open Session and the model's plan; ``session.executor()``
    is the same with the session's own plan."""

    def __init__(self, session: RemoteSession, plan: ModelPlan):
        self.session = session
        self.plan = plan
        self.info = plan.info  # the model's metadata (codegen/model_info.py)
        self.functions = [session.lookup(op.function) for op in plan.ops]
        self.pool = session.alloc(max(1, plan.pool_bytes))
        self._args = [[TensorArg(self.pool.handle, plan.slots[s][0]) for s in op.slots] for op in plan.ops]
        self.last_ticks: list[int] = []  # device ticks of each operator in the last run()
        # a session shared between threads: one inference (inputs, operators, outputs) at a time
        self.lock = getattr(session, "lock", None) or nullcontext()

    # ---- inputs and outputs ----

    def _io(self, kind: str, index: int) -> tuple[TensorInfo, int, int]:
        metas = self.info.inputs if kind == "inputs" else self.info.outputs
        slots = self.plan.input_slots if kind == "inputs" else self.plan.output_slots
        if not 0 <= index < len(metas):
            raise MicrocompilerError(f"the model has {len(metas)} {kind}; there is no {kind[:-1]} {index}")
        offset, nbytes = self.plan.slots[slots[index]]
        return metas[index], offset, nbytes

    def set_input(self, index: int, value: Any) -> None:
        meta, offset, nbytes = self._io("inputs", index)
        want = np.dtype(np_dtype(meta.dtype))
        arr = np.asarray(value)
        if not same_shape(arr.shape, list(meta.shape)):
            raise MicrocompilerError(
                f"input {index} ('{meta.name}') needs shape {list(meta.shape)} (only leading "
                f"1s may differ), got {list(arr.shape)}"
            )
        if arr.dtype != want:
            raise MicrocompilerError(
                f"input {index} ('{meta.name}') needs dtype {want}, got {arr.dtype}; "
                f"convert it with x.astype(np.{want})"
            )
        raw = np.ascontiguousarray(arr).tobytes()
        assert len(raw) == nbytes
        self.pool.write(raw, offset)

    def get_output(self, index: int) -> np.ndarray:
        meta, offset, nbytes = self._io("outputs", index)
        return self.pool.read_array(np_dtype(meta.dtype), list(meta.shape), offset)

    # ---- running ----

    def run(self) -> None:
        """Run every operator once, in order. Device time per operator lands in last_ticks."""
        self.last_ticks = [self.session.call(fn, *args) for fn, args in zip(self.functions, self._args)]

    def run_operator(self, k: int) -> int:
        """Run operator k alone (the ones before it must have run); returns its device ticks."""
        return self.session.call(self.functions[k], *self._args[k])

    def read_argument(self, k: int, position: int, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
        """The tensor that is operator k's tensor argument ``position``, read from the device now."""
        offset, _ = self.plan.slots[self.plan.ops[k].slots[position]]
        return self.pool.read_array(np_dtype(dtype), shape, offset)

    def __call__(self, *inputs: Any) -> list[np.ndarray]:
        with self.lock:
            for k, x in enumerate(inputs):
                self.set_input(k, x)
            self.run()
            return [self.get_output(k) for k in range(len(self.info.outputs))]

    def profile(self, number: int = 10, repeat: int = 1) -> list[dict]:
        """Device time of each operator: ``repeat`` measurements of ``number`` back-to-back runs."""
        with self.lock:
            return self._profile(number, repeat)

    def _profile(self, number: int, repeat: int) -> list[dict]:
        rows = []
        operators = self.info.operators
        for k, fn in enumerate(self.functions):
            result = self.time_operator(k, number, repeat)
            row = {
                "function": fn.name,
                "ticks": result.median_ticks,
                "ticks_per_run": result.ticks_per_run,
                "timer_hz": result.timer_hz,
                "seconds": result.median_ticks / result.timer_hz,
            }
            if k < len(operators):
                op = operators[k]
                row = {"index": op.index, "kind": op.kind, "layer": op.layer, "macs": op.macs, **row}
            rows.append(row)
        self._restore_state()
        return rows

    def time_operator(self, k: int, number: int = 10, repeat: int = 1) -> Any:
        """Device time of operator k alone: ``repeat`` measurements of ``number`` back-to-back runs."""
        return self.session.time_evaluator(self.functions[k], number, repeat)(*self._args[k])

    def model_function_name(self) -> str:
        return f"{self.plan.name}_run"

    def reset(self) -> None:
        """Restore the state the model keeps across inferences on the device (``<model>_reset``,
        docs/state.md). The state lives on the device: between runs it carries over, as standalone."""
        name = f"{self.plan.name}_reset"
        try:
            fn = self.session.lookup(name)
        except DeviceError as exc:
            if getattr(exc, "status", None) != NOT_FOUND:
                raise
            raise MicrocompilerError(
                f"the device's firmware has no function {name}; it was built by an older "
                "microcompiler: recreate and rebuild its project"
            ) from None
        self.session.call(fn)

    def _restore_state(self) -> None:
        """Timing runs an operator many times, which moves a stateful model's state on: start again."""
        if self.info.state_bytes:
            self.reset()

    def time_inference(self, number: int = 10, repeat: int = 3) -> Any:
        """Device time of the whole model (its standalone <name>_run) on the current inputs."""
        with self.lock:
            return self._time_inference(number, repeat)

    def _time_inference(self, number: int, repeat: int) -> Any:
        fn = self.session.lookup(self.model_function_name())
        args = [
            TensorArg(self.pool.handle, self.plan.slots[s][0])
            for s in (*self.plan.input_slots, *self.plan.output_slots)
        ]
        result = self.session.time_evaluator(fn, number, repeat)(*args)
        self._restore_state()
        return result

    def close(self) -> None:
        if not self.pool.freed and self.session.is_open:
            self.pool.free()

    def __enter__(self) -> GraphExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
