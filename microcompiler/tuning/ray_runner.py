"""Tuning jobs on a Ray cluster: boards are Ray resources, so each job runs where a board is free.

``microcompiler tune MODEL --board B --runner ray [--address ADDR]`` (docs/tuning.md). Each node of
the cluster declares the boards it has as a custom resource named after the board
(``ray start --resources '{"mps2_an386": 4}'``: four emulated or attached mps2_an386 boards); every
job asks for one unit of it, so Ray's scheduler places the job on a node with a free board. The job
is plain data that carries the model's bytes and the oracle's tensors (no shared path is needed).

Faults: a job whose worker or node dies is retried elsewhere by Ray (``max_retries``); an exception
the job raises itself (a build error) is not retried and is raised to the tuner, as with the local
runner; if no job finishes within ``timeout`` seconds the jobs in flight are cancelled (their
workers killed, and with them their QEMU instances, which die with their parent) and TimeoutError
is raised.

Ray is an optional dependency: ``pip install 'microcompiler[ray]'``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from microcompiler import cleanup
from microcompiler.errors import MicrocompilerError
from microcompiler.tuning.runner import JOB_TIMEOUT, JobRunner

# A job whose worker or node dies is run again this many times on another worker.
RETRIES = 3
# The longest temporary directory Ray's session sockets fit under (AF_UNIX paths: 107 bytes)
SHORT_PATH = 40


class RayRunnerError(MicrocompilerError):
    """The Ray cluster cannot run the jobs (not installed, unreachable, no such board resource)."""


def _use_token_if_there_is_one() -> None:
    """Join a cluster with its auth token where one is set up, as ``ray start`` does.

    A Ray node started while a token exists (``~/.ray/auth_token``, ``RAY_AUTH_TOKEN`` or
    ``RAY_AUTH_TOKEN_PATH``) requires it, but a driver joining it sends it only with
    ``RAY_AUTH_MODE=token``; a cluster without authentication ignores the token."""
    if "RAY_AUTH_MODE" in os.environ:
        return  # the user chose
    if (
        os.environ.get("RAY_AUTH_TOKEN")
        or os.environ.get("RAY_AUTH_TOKEN_PATH")
        or (Path.home() / ".ray" / "auth_token").is_file()
    ):
        os.environ["RAY_AUTH_MODE"] = "token"


def _import_ray():
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage-statistics prompt or upload
    try:
        import ray
    except ImportError:
        raise RayRunnerError(
            "--runner ray needs Ray, which is not installed; install it with \"pip install 'microcompiler[ray]'\""
        ) from None
    return ray


class RayRunner(JobRunner):
    """Runs jobs as Ray tasks that each need one unit of the resource ``board``.

    ``address``: an existing cluster (``"auto"``, or ``HOST:PORT`` of its head node); ``None`` starts
    a local single-node cluster with ``jobs`` units of ``board``. At most ``jobs`` jobs are in flight
    at once (fewer if the cluster has fewer free boards)."""

    def __init__(
        self,
        board: str,
        jobs: int = 1,
        address: str | None = None,
        timeout: float = JOB_TIMEOUT,
        retries: int = RETRIES,
    ):
        self.ray = _import_ray()
        self.board, self.slots, self.timeout, self.retries = board, max(1, int(jobs)), timeout, retries
        self._temp: Path | None = None
        try:
            if address is None:
                # the local cluster's sessions and logs go into a directory of ours, removed on close (Ray's
                # socket paths must stay under 107 bytes: with a long TMPDIR, Ray's default place is used)
                self._temp = cleanup.temp_dir("mc-ray-")
                temp = str(self._temp) if len(str(self._temp)) <= SHORT_PATH else None
                self.ray.init(
                    resources={board: self.slots},
                    include_dashboard=False,
                    log_to_driver=False,
                    logging_level=logging.WARNING,
                    configure_logging=False,
                    _temp_dir=temp,
                )
            else:
                _use_token_if_there_is_one()
                self.ray.init(
                    address=address, log_to_driver=False, logging_level=logging.WARNING, configure_logging=False
                )
        except (ConnectionError, RuntimeError, ValueError, self.ray.exceptions.AuthenticationError) as exc:
            where = "a local Ray cluster" if address is None else f"the Ray cluster at {address}"
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise RayRunnerError(
                f"cannot start or join {where} ({first}); check that 'ray status' "
                f"answers there, or leave out --address to start a local one"
            ) from None
        boards = self.ray.cluster_resources().get(board, 0)
        if boards < 1:
            self.close()
            raise RayRunnerError(
                f"the Ray cluster has no '{board}' resource; start each node that has such boards "
                f"with: ray start --resources '{{\"{board}\": N}}' (N boards on that node)"
            )

    def run(self, fn, jobs):
        ray = self.ray
        remote = ray.remote(fn).options(
            resources={self.board: 1}, num_cpus=0, max_retries=self.retries, retry_exceptions=False
        )
        todo = list(enumerate(jobs))
        todo.reverse()
        in_flight: dict = {}

        def submit() -> None:
            while todo and len(in_flight) < self.slots:
                k, job = todo.pop()
                in_flight[remote.remote(job)] = k

        try:
            submit()
            while in_flight:
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=self.timeout)
                if not ready:
                    raise TimeoutError(f"no tuning job finished within {self.timeout:g} s")
                k = in_flight.pop(ready[0])
                yield k, self._result(ready[0], k)
                submit()
        except GeneratorExit:
            raise
        finally:  # a failure, an interrupt or a timeout: stop what is still running
            todo.clear()
            for ref in in_flight:
                ray.cancel(ref, force=True)

    def _result(self, ref, k: int):
        exceptions = self.ray.exceptions
        try:
            return self.ray.get(ref)
        except exceptions.RayTaskError as exc:  # the job raised: hand over its own exception
            raise exc.as_instanceof_cause() from None
        except (
            exceptions.WorkerCrashedError,
            exceptions.NodeDiedError,
            exceptions.RayActorError,
            exceptions.ObjectLostError,
        ) as exc:
            raise RayRunnerError(
                f"tuning job {k} failed {self.retries + 1} times on the Ray cluster "
                f"({type(exc).__name__}); check the nodes with 'ray status'"
            ) from None

    def close(self) -> None:
        if self.ray.is_initialized():
            self.ray.shutdown()  # a local cluster stops; a joined cluster goes on without us
        if self._temp is not None:
            cleanup.remove_dir(self._temp)
            self._temp = None
