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

import contextlib
import logging
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from microcompiler import cleanup
from microcompiler.errors import MicrocompilerError
from microcompiler.tuning.runner import JOB_TIMEOUT, JobRunner

# A job whose worker or node dies is run again this many times on another worker.
RETRIES = 3
# The longest temporary directory Ray's session sockets fit under (AF_UNIX paths: 107 bytes)
SHORT_PATH = 40
# Seconds to wait for a cluster's head node to accept a connection, and then for a trial join of it
# (in a child process, which a silent or foreign peer cannot hold up, nor Ray's core end), before
# this process joins
CONNECT_TIMEOUT = 10.0
JOIN_TIMEOUT = 60.0
_TRIAL_JOIN = (
    "import logging, sys, ray; ray.init(address=sys.argv[1], log_to_driver=False, logging_level=logging.ERROR, "
    "configure_logging=False); ray.shutdown()"
)


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


def check_address(address: str, timeout: float | None = None) -> None:
    """Refuse, in one line and within ``timeout`` seconds, a cluster address that is not HOST:PORT
    (or "auto", or ray://HOST:PORT) or whose head node does not accept a connection: Ray itself
    would wait, retrying, with a log line of its own."""
    if address == "auto":
        return
    match = re.fullmatch(r"(?:ray://)?(\[[0-9A-Fa-f:.]+\]|[^:/\s]+):(\d{1,5})", address)
    if match is None or not 1 <= int(match.group(2)) <= 65535:
        raise RayRunnerError(
            f"--address {address}: give the head node's HOST:PORT (a port 1 to 65535, e.g. 192.168.1.10:6379), "
            "or 'auto' for the cluster 'ray start' started on this computer"
        )
    host, port = match.group(1).strip("[]"), int(match.group(2))
    wait = CONNECT_TIMEOUT if timeout is None else timeout
    try:
        with socket.create_connection((host, port), timeout=wait):
            pass
    except TimeoutError:
        raise RayRunnerError(
            f"the Ray cluster at {address} did not answer within {wait:g} s; check that its head node runs "
            "('ray status --address ADDR') and that this computer reaches it"
        ) from None
    except OSError as exc:
        raise RayRunnerError(
            f"cannot reach the Ray cluster at {address} ({exc.strerror or exc}); check that its head node runs "
            "('ray status --address ADDR') and the address, or leave out --address to start a local one"
        ) from None
    _trial_join(address)


def _trial_join(address: str) -> None:
    """Join and leave the cluster in a child process, within JOIN_TIMEOUT: a peer that accepts
    connections but is no Ray head (or a hung one) costs a bounded wait and one line, not a hang
    (or Ray's core ending this process)."""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    env.setdefault("RAY_NUM_REDIS_GET_RETRIES", str(int(CONNECT_TIMEOUT)))
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _TRIAL_JOIN, address],
            capture_output=True,
            text=True,
            timeout=JOIN_TIMEOUT,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise RayRunnerError(
            f"the Ray cluster at {address} did not let this computer join within {JOIN_TIMEOUT:g} s (something "
            "answers there, but not as a Ray head node); check the address with 'ray status --address ADDR'"
        ) from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("[")]
        why = lines[-1][:200] if lines else f"exit status {proc.returncode}"
        raise RayRunnerError(
            f"cannot join the Ray cluster at {address} ({why}); check the address with 'ray status --address ADDR'"
        )


@contextlib.contextmanager
def _quiet_stderr():
    """File descriptor 2 to /dev/null for a while (Ray's C++ core writes there, past Python's logging)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


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
        if address is not None:
            _use_token_if_there_is_one()
            check_address(address)  # before this process joins: Ray would wait without a bound
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
                with _quiet_stderr():  # Ray's core prints a line per retry: the error below says it once
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
