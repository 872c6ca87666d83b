"""Where measurement jobs run: the tuner hands a runner picklable jobs and gets results back.

``JobRunner`` is the interface; the tuner knows nothing else. ``LocalRunner`` runs up to N jobs at
once on this computer: each job builds its firmware and starts its own device (on emulated boards
its own QEMU instance, a process group of its own registered with microcompiler/cleanup.py, so
every instance is stopped on exit and on SIGINT/SIGTERM/SIGHUP). A distributed backend (one job per
board on many hosts, e.g. Ray, docs/tuning.md) implements the same two methods.
"""

from __future__ import annotations

import queue
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import Any

# The longest one job may take (build + start + check + time): a bound on every wait.
JOB_TIMEOUT = 30 * 60.0


class JobRunner(ABC):
    """Runs ``fn(job)`` for each job, ``slots`` at a time; yields (job position, result) as they finish."""

    slots: int = 1

    @abstractmethod
    def run(self, fn: Callable, jobs: Sequence) -> Iterator[tuple[int, Any]]:
        """Results in completion order. A job's exception is raised here; the others are abandoned."""

    def close(self) -> None:  # noqa: B027 (not abstract: a runner without workers has nothing to release)
        """Release the runner's workers (idempotent)."""

    def __enter__(self) -> JobRunner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalRunner(JobRunner):
    """N jobs at once in worker threads of this process; each job's device is its own child process.

    The workers are daemon threads: when the command is interrupted it does not wait for them, and
    cleanup's sweep stops the processes they started. A job not started yet when the runner is
    closed is never started."""

    def __init__(self, jobs: int = 1, timeout: float = JOB_TIMEOUT):
        self.slots = max(1, int(jobs))
        self.timeout = timeout
        self._stop = threading.Event()

    def run(self, fn, jobs):
        todo: queue.Queue = queue.Queue()
        done: queue.Queue = queue.Queue()
        for k, job in enumerate(jobs):
            todo.put((k, job))

        def work() -> None:
            while not self._stop.is_set():
                try:
                    k, job = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    done.put((k, True, fn(job)))
                except BaseException as exc:  # handed to the caller, who decides
                    done.put((k, False, exc))

        for _ in range(min(self.slots, len(jobs))):
            threading.Thread(target=work, name="tune-job", daemon=True).start()
        try:
            for _ in range(len(jobs)):
                try:
                    k, ok, value = done.get(timeout=self.timeout)
                except queue.Empty:
                    raise TimeoutError(f"no tuning job finished within {self.timeout:g} s") from None
                if not ok:
                    raise value
                yield k, value
        except GeneratorExit:  # the caller stopped reading: the jobs in flight finish on their own
            raise
        except BaseException:
            self._stop.set()  # a failure or an interrupt: start nothing more
            raise

    def close(self) -> None:
        self._stop.set()
