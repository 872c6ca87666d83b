"""``microcompiler tune --runner ray`` on a real local Ray cluster (docs/tuning.md).

The test starts a Ray head node and a second node process joining it, each declaring one emulated
mps2_an386 as a custom resource, as a user would on two hosts with one board each. It tunes the
small model of test_tuning.py through the cluster, kills the second node while one of its jobs is
running (its QEMU instance in flight), and checks that the job ran again on the head node and that
the tuning log is the same as a local run's (the winners are chosen by measured ticks, exact under
QEMU's icount), and that the tuned model run with that log equals TFLite Micro.

Runs where Ray is installed (``pip install 'microcompiler[ray]'``, which .ci/run's set-up does).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from harness import cli
from oracle import tflm_run
from ray_nodes import free_port, ray_env, start_node, stop_node
from ray_nodes import status as ray_status
from test_tuning import BOARD, needs_qemu, small_model

ray = pytest.importorskip("ray", reason="needs Ray: pip install 'microcompiler[ray]'")


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (read from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.fixture()
def cluster():
    """A head node and a second node on this machine, one mps2_an386 each; both stopped afterwards."""
    port = free_port()
    address = f"127.0.0.1:{port}"
    resources = json.dumps({BOARD: 1})
    # Ray's socket paths must stay under 107 bytes: a short temporary directory of our own
    temp = tempfile.mkdtemp(prefix="mcray-", dir="/tmp")
    head = start_node(
        "--head",
        "--port",
        str(port),
        "--num-cpus",
        "1",
        "--resources",
        resources,
        "--include-dashboard=false",
        "--temp-dir",
        temp,
    )
    node = None
    try:
        status = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if node is None and head_answers(address):
                node = start_node("--address", address, "--num-cpus", "1", "--resources", resources)
            status = ray_status(address)
            if f"0.0/2.0 {BOARD}" in status:
                break
            time.sleep(1)
        else:
            pytest.fail(f"the Ray cluster did not come up within 120 s:\n{status}")
        yield address, node
    finally:
        if node is not None:
            stop_node(node)
        stop_node(head)
        shutil.rmtree(temp, ignore_errors=True)


def head_answers(address: str) -> bool:
    host, port = address.split(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def kill_node_once_its_job_runs(node: subprocess.Popen, timeout: float) -> bool:
    """SIGKILL the second node's whole process tree as soon as a QEMU instance runs below it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and node.poll() is None:
        below = descendants(node.pid)
        if any("qemu-system-arm" in command_of(pid) for pid in below):
            for pid in below | {node.pid}:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            return True
        time.sleep(0.05)
    return False


# A two-node cluster, a KWS tune and a killed node: about a minute of both cores, so with the long tests
# (pytest -m long tests); the default suite runs the local cluster test below.
@pytest.mark.long
@needs_qemu
def test_tune_on_a_ray_cluster_survives_a_killed_node_and_writes_the_local_log(cluster, tmp_path):
    address, node = cluster
    model = tmp_path / "small.tflite"
    model.write_bytes(small_model())
    env = dict(ray_env(), PYTHONPATH=os.pathsep.join(sys.path))
    other = subprocess.run(
        [
            sys.executable,
            "-m",
            "microcompiler.cli",
            "tune",
            str(model),
            "--board",
            "mps2_an385",
            "--runner",
            "ray",
            "--address",
            address,
            "--output",
            str(tmp_path / "x.json"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert other.returncode == 2 and other.stderr.count("\n") == 1, other.stderr
    assert "the Ray cluster has no 'mps2_an385' resource; start each node" in other.stderr
    assert not (tmp_path / "x.json").exists()

    local = tmp_path / "local.json"
    r = cli("tune", model, "--board", BOARD, "--jobs", "2", "--output", local, timeout=600)
    assert r.returncode == 0, r.stderr

    out = tmp_path / "ray.json"
    tune = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "microcompiler.cli",
            "tune",
            str(model),
            "--board",
            BOARD,
            "--runner",
            "ray",
            "--address",
            address,
            "--jobs",
            "2",
            "--output",
            str(out),
            "--json",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        killed = kill_node_once_its_job_runs(node, timeout=300)
        stdout, stderr = tune.communicate(timeout=600)
    finally:
        if tune.poll() is None:
            tune.kill()
    assert killed, "no job ran on the second node"
    assert tune.returncode == 0, stderr
    report = json.loads(stdout[stdout.index("{") :]) if "{" in stdout else pytest.fail(f"no JSON: {stdout!r}")
    assert report["exact"] and report["tuned"] == 2
    # the same winners, the same measured ticks: the log of a run that lost a node equals the local one
    assert json.loads(out.read_text()) == json.loads(local.read_text())

    x = np.random.default_rng(5).integers(-128, 128, (1, 4, 4, 4), dtype=np.int8)
    np.save(tmp_path / "x.npy", x)
    r = cli("run", model, "--board", BOARD, "--tuning", out, "--input", tmp_path / "x.npy", "--json", timeout=300)
    assert r.returncode == 0, r.stderr
    ours = np.array(json.loads(r.stdout)["outputs"][0], dtype=np.int8)
    assert np.array_equal(ours.reshape(-1), tflm_run(model.read_bytes(), [x])[0].reshape(-1))


def test_a_local_ray_cluster_runs_jobs_and_hands_over_what_a_job_raised(tmp_path, monkeypatch):
    from microcompiler.tuning.ray_runner import RayRunner

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")

    with RayRunner("mps2_an386", jobs=2) as runner:  # a local cluster with two boards, started for us
        assert ray.cluster_resources()["mps2_an386"] == 2

        def failing(k):
            if k == 1:
                raise ValueError("job 1 failed")
            return k * 10

        with pytest.raises(ValueError, match="job 1 failed"):
            list(runner.run(failing, [0, 1, 2]))
        assert sorted(runner.run(lambda k: k * 10, [1, 2, 3])) == [(0, 10), (1, 20), (2, 30)]
        temp = runner._temp
        assert temp is not None and any(temp.iterdir())  # the cluster's sessions and logs live there
    assert not ray.is_initialized() and not temp.exists()  # stopped, and its files gone

    r = cli("tune", tmp_path / "none.tflite", "--board", BOARD, "--address", "auto")
    assert r.returncode == 2 and "--address names a Ray cluster; add --runner ray" in r.stderr


# ---- issue 35 item 5: joining a cluster is bounded and says which address failed ----


def test_a_bad_or_unreachable_cluster_address_is_one_line_at_once(tmp_path):
    model = tmp_path / "m.tflite"
    model.write_bytes(small_model())
    closed = f"127.0.0.1:{free_port()}"
    for address, fragment in [
        ("127.0.0.1:99999", "--address 127.0.0.1:99999: give the head node's HOST:PORT (a port 1 to 65535"),
        (closed, f"cannot reach the Ray cluster at {closed} (Connection refused)"),
    ]:
        start = time.monotonic()
        r = cli("tune", model, "--board", BOARD, "--runner", "ray", "--address", address, timeout=60)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert r.stderr.count("\n") == 1 and fragment in r.stderr, r.stderr
        assert time.monotonic() - start < 20


def test_a_peer_that_is_no_ray_head_costs_a_bounded_wait(monkeypatch):
    """A port that accepts connections and says nothing: Ray would wait (then end the process);
    the trial join in a child process is stopped at JOIN_TIMEOUT, with one line naming the address."""
    from microcompiler.tuning import ray_runner

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    silent = f"127.0.0.1:{listener.getsockname()[1]}"
    monkeypatch.setattr(ray_runner, "JOIN_TIMEOUT", 2.0)
    start = time.monotonic()
    try:
        with pytest.raises(ray_runner.RayRunnerError) as caught:
            ray_runner.RayRunner(BOARD, address=silent)
    finally:
        listener.close()
    assert time.monotonic() - start < 15 and not ray.is_initialized()
    message = str(caught.value)
    assert f"the Ray cluster at {silent}" in message and "\n" not in message, message
