"""Where measurement jobs run: the tuner hands a runner picklable jobs and gets results back.

``JobRunner`` is the interface; the tuner knows nothing else. ``LocalRunner`` runs up to N jobs at
once on this computer: each job builds its firmware and starts its own device (on emulated boards
its own QEMU instance, a process group of its own registered with microcompiler/cleanup.py, so
every instance is stopped on exit and on SIGINT/SIGTERM/SIGHUP). A distributed backend (one job per
board on many hosts, e.g. Ray, docs/tuning.md) implements the same two methods.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Callable, Iterator, Sequence

# The longest one job may take (build + start + check + time): a bound on every wait.
JOB_TIMEOUT = 30 * 60.0


class JobRunner(ABC):
    """Runs ``fn(job)`` for each job, ``slots`` at a time; yields (job position, result) as they finish."""

    slots: int = 1

    @abstractmethod
    def run(self, fn: Callable, jobs: Sequence) -> Iterator[tuple[int, object]]:
        """Results in completion order. A job's exception is raised here; the others are abandoned."""

    def close(self) -> None:
        """Release the runner's workers (idempotent)."""

    def __enter__(self) -> "JobRunner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalRunner(JobRunner):
    """N jobs at once in worker threads of this process; each job's device is its own child process."""

    def __init__(self, jobs: int = 1, timeout: float = JOB_TIMEOUT):
        self.slots = max(1, int(jobs))
        self.timeout = timeout
        self._pool = ThreadPoolExecutor(max_workers=self.slots, thread_name_prefix="tune-job")

    def run(self, fn, jobs):
        pending: dict[Future, int] = {self._pool.submit(fn, job): k for k, job in enumerate(jobs)}
        try:
            while pending:
                done, _ = wait(pending, timeout=self.timeout, return_when=FIRST_COMPLETED)
                if not done:
                    raise TimeoutError(f"no tuning job finished within {self.timeout:g} s")
                for future in done:
                    yield pending.pop(future), future.result()
        finally:
            for future in pending:
                future.cancel()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
