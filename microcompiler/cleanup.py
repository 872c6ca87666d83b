"""Nothing left running, nothing left behind: child processes and temporary directories of a command.

Every child program microcompiler starts and waits on (QEMU, the host model program, the host RPC
server) is started with :func:`spawn`: in its own process group, so stopping it stops everything
it started, and on Linux with a parent-death signal, so it dies with us even if we are killed
with SIGKILL. Every temporary directory comes from :func:`temp_dir`. Both are registered here;
:func:`sweep` (run at exit, and by the command line after SIGINT, SIGTERM or SIGHUP) kills the
process groups and removes the directories that are still registered.

The command line calls :func:`install_signal_handlers`: SIGTERM and SIGHUP then unwind the stack
like Ctrl-C does (raising :class:`Interrupted`), so every ``with`` and ``finally`` closes what it
opened, and the command exits with status 128 + the signal number. docs/reliability.md.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_processes: dict[int, subprocess.Popen] = {}
_dirs: dict[str, None] = {}  # ordered set of paths
_lock = threading.Lock()


class Interrupted(BaseException):
    """A termination signal arrived (a BaseException, like KeyboardInterrupt: no ``except Exception`` stops it)."""

    def __init__(self, signo: int):
        super().__init__(signo)
        self.signo = signo

    @property
    def name(self) -> str:
        return signal.Signals(self.signo).name

    @property
    def exit_status(self) -> int:
        return 128 + self.signo


def _load_prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()  # looked up now: the child calls it between fork and exec, where less is safer
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGKILL))


def spawn(argv: list[str], **popen_options) -> subprocess.Popen:
    """Popen(argv) in a new process group, registered until :func:`stop` (or :func:`forget`)."""
    options: dict[str, Any] = {"start_new_session": True}
    if _PRCTL is not None:
        options["preexec_fn"] = _die_with_parent
    proc = subprocess.Popen(argv, **options, **popen_options)
    with _lock:
        _processes[proc.pid] = proc
    return proc


def _kill_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)  # the group's id is the leader's pid (start_new_session)
    except (ProcessLookupError, PermissionError):
        pass
    if proc.poll() is None:
        try:
            proc.send_signal(sig)
        except (ProcessLookupError, OSError):
            pass


def stop(proc: subprocess.Popen, grace: float = 5.0) -> None:
    """Stop a spawned process and everything in its group: SIGTERM, then SIGKILL after grace seconds."""
    if proc.poll() is None:
        _kill_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    _kill_group(proc, signal.SIGKILL)  # whatever the leader left in its group
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    forget(proc)


def forget(proc: subprocess.Popen) -> None:
    with _lock:
        _processes.pop(proc.pid, None)


# The longest path an AF_UNIX socket may have (sun_path holds 108 bytes with the terminating zero).
SOCKET_PATH_MAX = 107


def temp_dir(prefix: str, socket_name: str | None = None) -> Path:
    """A new temporary directory, removed by :func:`remove_dir` or at the latest by :func:`sweep`.

    ``socket_name``: a UNIX socket will live in it; where $TMPDIR is so deep that the socket's path would
    pass SOCKET_PATH_MAX, the directory goes to /tmp instead (QEMU refuses a longer path)."""
    parent = None
    if socket_name is not None:
        longest = len(tempfile.gettempdir()) + 1 + len(prefix) + 8 + 1 + len(socket_name)  # mkdtemp adds 8
        if longest > SOCKET_PATH_MAX and os.path.isdir("/tmp"):
            parent = "/tmp"
    path = tempfile.mkdtemp(prefix=prefix, dir=parent)
    with _lock:
        _dirs[path] = None
    return Path(path)


def remove_dir(path: str | Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    with _lock:
        _dirs.pop(str(path), None)


def sweep() -> None:
    """Kill every registered process group and remove every registered temporary directory."""
    with _lock:
        processes, dirs = list(_processes.values()), list(_dirs)
    for proc in processes:
        stop(proc, grace=2.0)
    for path in dirs:
        remove_dir(path)


atexit.register(sweep)


def _on_signal(signo, frame) -> None:
    for sig in HANDLED_SIGNALS:  # a second signal must not interrupt the cleanup the first one started
        signal.signal(sig, signal.SIG_IGN)
    raise Interrupted(signo)


def install_signal_handlers() -> dict:
    """SIGINT, SIGTERM and SIGHUP raise :class:`Interrupted` in the main thread (where Python runs handlers).

    Returns the previous handlers, for :func:`restore_signal_handlers`."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {}
    for sig in HANDLED_SIGNALS:
        if signal.getsignal(sig) is signal.SIG_IGN:
            continue  # nohup, or a background job: whoever started us asked to ignore it
        previous[sig] = signal.signal(sig, _on_signal)
    return previous


def restore_signal_handlers(previous: dict) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def run_bounded(argv: list[str], timeout: float, what: str, **popen_options) -> subprocess.CompletedProcess:
    """subprocess.run(argv, capture_output=True) in its own process group, killed whole after timeout
    seconds (or on any exception, such as a signal), raising ToolchainError naming ``what``."""
    from microcompiler.errors import ToolchainError

    input_data = popen_options.pop("input", None)
    text = popen_options.pop("text", False)
    proc = spawn(
        argv,
        stdin=subprocess.PIPE if input_data is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=text,
        **popen_options,
    )
    try:
        out, err = proc.communicate(input_data, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"{what} did not finish within {timeout:g} s; stopped it") from None
    finally:
        stop(proc, grace=2.0)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)
