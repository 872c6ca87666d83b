"""Ray nodes on this machine for tests and scripts (tests/test_tuning_ray.py, scripts/docs_figures.py):
each node a ``ray start --block`` process in a session of its own, so that stopping its group stops
it whole; no usage statistics and no auth token written to ~/.ray."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

RAY = str(Path(sys.executable).parent / "ray")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_env() -> dict:
    """The cluster's environment: no usage statistics, and no auth token (nothing written to ~/.ray)."""
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")
    env.pop("RAY_ADDRESS", None)
    return env


def start_node(*args: str) -> subprocess.Popen:
    """``ray start ARGS --block`` in a session of its own: killing the group stops the node whole."""
    return subprocess.Popen(
        [RAY, "start", *args, "--block", "--disable-usage-stats"],
        env=ray_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def stop_node(node: subprocess.Popen) -> None:
    """SIGTERM to the node's group, SIGKILL if it is still there 30 s later."""
    for sig, grace in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(node.pid, sig)
        except ProcessLookupError:
            pass
        try:
            node.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def status(address: str) -> str:
    """What ``ray status`` says of the cluster at ``address``."""
    return subprocess.run(
        [RAY, "status", "--address", address], env=ray_env(), capture_output=True, text=True, timeout=60
    ).stdout
