"""Nothing left running, every wait bounded (docs/reliability.md).

SIGINT, SIGTERM and SIGHUP stop `bench` and `run` with every child process and temporary directory
gone; timeouts are finite positive numbers and bound host runs too; a dead QEMU is reported as QEMU's
own one-line error, never as pyserial's "returned no data".
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import model_builder as mb
import numpy as np
import pytest
from conftest import ROOT, SHARED_MODELS
from harness import compile_bytes

from microcompiler.errors import DeviceError, MicrocompilerError

HELLO = SHARED_MODELS / "tflm/hello_world_int8.tflite"
TOOLS = ("arm-none-eabi-gcc", "cmake", "ninja", "qemu-system-arm")
needs_qemu = pytest.mark.skipif(
    not all(__import__("shutil").which(t) for t in TOOLS),
    reason="needs arm-none-eabi-gcc, cmake, ninja and qemu-system-arm",
)


def cli_command(*args) -> list[str]:
    return [sys.executable, "-m", "microcompiler.cli", *map(str, args)]


def cli(*args, env=None, timeout=600):
    return subprocess.run(cli_command(*args), capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)


def assert_last_line_error(proc, *fragments):
    """One error line (after any progress lines), status 2, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("microcompiler: error: ")]
    assert len(errors) == 1 and proc.stderr.strip().splitlines()[-1] == errors[0], proc.stderr
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])
    return errors[0]


# ---- timeouts: finite positive numbers only ---------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["run", HELLO, "--timeout", "nan"],
        ["run", HELLO, "--timeout", "-5"],
        ["run", HELLO, "--timeout", "0"],
        ["run", HELLO, "--timeout", "inf"],
        ["run", HELLO, "--mode", "host-driven", "--rpc-timeout", "nan"],
        ["run", HELLO, "--rpc-timeout", "-1"],
        ["bench", HELLO, "--rpc-timeout", "nan"],
        ["bench", HELLO, "--rpc-timeout", "0"],
        ["flash", "some_project", "--timeout", "NaN"],
        ["run", HELLO, "--timeout", "soon"],
    ],
)
def test_timeouts_must_be_finite_and_positive(argv):
    option = next(a for a in argv if str(a).startswith("--") and "timeout" in str(a))
    proc = cli(*argv, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()], proc.stderr  # one line
    assert proc.stderr.startswith(f"microcompiler: error: {option} ") and "greater than 0" in proc.stderr


def _outcome_within(seconds: float, call) -> BaseException | str:
    """What call() raised, or "returned", or "still waiting" after seconds (run in a daemon thread)."""
    box: list = []

    def target():
        try:
            call()
            box.append("returned")
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            box.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    return box[0] if box else "still waiting"


@pytest.mark.parametrize("bad", [float("nan"), -1.0, 0.0, float("inf")])
def test_the_python_api_refuses_endless_timeouts_too(bad):
    from microcompiler.rpc import Session
    from microcompiler.transport.faults import SilentTransport

    for call in (
        lambda: Session(SilentTransport(), timeout=bad),
        lambda: Session(SilentTransport(), call_timeout=bad),
        lambda: SilentTransport().read_until(b"x", bad),
    ):
        outcome = _outcome_within(5.0, call)
        assert isinstance(outcome, MicrocompilerError) and "finite number of seconds" in str(outcome), outcome


def _hanging_program(tmp_path: Path) -> tuple[Path, Path]:
    """A shell script standing in for the host model program: it starts a child and both hang."""
    pids = tmp_path / "pids"
    script = tmp_path / "model_host"
    script.write_text(f"#!/bin/sh\nsleep 300 &\necho $$ $! > {pids}\nwait\n")
    script.chmod(0o755)
    return script, pids


def test_the_host_runner_obeys_its_timeout_and_kills_the_whole_group(tmp_path):
    from microcompiler.host import HostProgram

    library = compile_bytes(mb_identity_add(), tmp_path / "lib")
    program = HostProgram(library, tmp_path / "build")
    program.exe, pids = _hanging_program(tmp_path)
    start = time.monotonic()
    with pytest.raises(DeviceError, match="did not finish within 1.5 s"):
        program.run([[np.zeros((1, 4), np.float32)]], timeout=1.5)
    assert time.monotonic() - start < 10
    for pid in map(int, pids.read_text().split()):
        assert _gone_within(pid, 5.0), f"process {pid} of the hung program survived"


def test_a_host_program_that_prints_without_end_is_stopped(tmp_path):
    from microcompiler.host import HostProgram

    library = compile_bytes(mb_identity_add(), tmp_path / "lib")
    program = HostProgram(library, tmp_path / "build")
    program.exe = tmp_path / "chatty"
    program.exe.write_text("#!/bin/sh\nexec yes MC-BEGIN\n")
    program.exe.chmod(0o755)
    with pytest.raises(DeviceError, match="printed more than"):
        program.run([[np.zeros((1, 4), np.float32)]], timeout=60)


def test_run_on_the_host_applies_timeout(tmp_path, monkeypatch):
    """`run --board host --timeout S` bounds the host program (it used to wait without end)."""
    (tmp_path / "m.tflite").write_bytes(mb_identity_add())
    script, pids = _hanging_program(tmp_path)
    wrapper = tmp_path / "sitecustomize.py"  # make HostProgram run the hanging script in the CLI process
    wrapper.write_text(
        "import microcompiler.host as h\n"
        "_build = h.HostProgram._build\n"
        f"def _hang(self, *a):\n    _build(self, *a)\n    self.exe = {str(script)!r}\n"
        "h.HostProgram._build = _hang\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    start = time.monotonic()
    proc = cli("run", tmp_path / "m.tflite", "--timeout", "2", env=env, timeout=120)
    assert time.monotonic() - start < 60
    assert_last_line_error(proc, "did not finish within 2 s")
    for pid in map(int, pids.read_text().split()):
        assert not _alive(pid)


def mb_identity_add() -> bytes:
    b = mb.ModelBuilder()
    x = b.activation("x", [1, 4], "float32")
    k = b.constant("k", np.zeros((1, 4), np.float32))
    y = b.activation("y", [1, 4], "float32")
    b.op("ADD", [x, k], [y], mb.add_options())
    return b.finish([x], [y])


def _gone_within(pid: int, seconds: float) -> bool:
    """A SIGKILLed process is gone once the kernel has reaped it: on a loaded machine that takes a moment."""
    deadline = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


# ---- a dead QEMU is reported as such -----------------------------------------------------------------


@needs_qemu
@pytest.mark.parametrize("firmware", ["empty", "random", "other_core"])
def test_a_firmware_qemu_cannot_run_gives_qemus_own_error(tmp_path, firmware):
    from microcompiler.project import build, create_project

    create_project(HELLO, "baremetal", "mps2_an385", tmp_path / "p")
    build(tmp_path / "p", log=lambda _: None)
    elf = tmp_path / "p" / "build" / "firmware.elf"
    if firmware == "empty":
        elf.write_bytes(b"")
    elif firmware == "random":
        elf.write_bytes(np.random.default_rng(7).integers(0, 256, 8000, dtype=np.uint8).tobytes())
    else:  # built for a Cortex-M55 (mps3_an547), run on the Cortex-M3 board
        create_project(HELLO, "baremetal", "mps3_an547", tmp_path / "m55")
        build(tmp_path / "m55", log=lambda _: None)
        elf.write_bytes((tmp_path / "m55" / "build" / "firmware.elf").read_bytes())
    os.utime(elf)
    proc = cli("flash", tmp_path / "p", "--timeout", "20", timeout=120)
    line = assert_last_line_error(proc)
    assert "returned no data" not in line
    if firmware != "other_core":
        assert "QEMU (mps2-an385) exited" in line and "qemu" in line.split("exited", 1)[1], line
    else:  # it may crash in QEMU or in our fault handler; either way it says so
        assert "QEMU (mps2-an385) exited" in line or "the firmware stopped" in line, line


@needs_qemu
def test_qemu_killed_during_a_session_says_qemu_exited(tmp_path):
    from microcompiler.api import open_model

    with open_model(HELLO, "mps2_an386", project_dir=tmp_path / "rpc") as session:
        x = np.zeros((1, 1), np.int8)
        with session.executor() as ex:
            ex(x)
            os.kill(session.transport._proc.pid, signal.SIGKILL)
            session.transport._proc.wait(timeout=10)  # gone before the next call (a loaded machine is slow)
            with pytest.raises(DeviceError) as caught:
                ex(x)
    message = str(caught.value)
    assert "QEMU (mps2-an386) exited on signal SIGKILL" in message, message
    assert "returned no data" not in message and "\n" not in message


# ---- signals: every child and temporary directory goes ---------------------------------------------


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, command name) of the direct children of pid."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
            found.append((int(entry.name), name))
    return found


def _descendants(pid: int) -> list[tuple[int, str]]:
    out = []
    for child in _children(pid):
        out.append(child)
        out.extend(_descendants(child[0]))
    return out


def _wait_for_qemu(root: int, proc: subprocess.Popen, seconds: float = 180) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the command ended before QEMU started: {proc.communicate()}"
        qemu = [pid for pid, name in _descendants(root) if name.startswith("qemu-system")]
        if qemu:
            return qemu[0]
        time.sleep(0.02)
    raise AssertionError("QEMU did not start")


def _default_signal_handling() -> None:
    """The command starts as from a terminal: SIGINT and SIGHUP at their defaults. A test run
    started in the background (`pytest ... &` in a script, `nohup`) hands its children these signals
    ignored, and the tool rightly keeps a signal its parent ignores (docs/reliability.md)."""
    for signo in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(signo, signal.SIG_DFL)


@needs_qemu
@pytest.mark.parametrize(
    "how", ["bench-SIGINT", "bench-SIGTERM", "bench-SIGHUP", "run-SIGTERM", "timeout-bench-SIGTERM", "tune-SIGTERM"]
)
def test_a_signal_stops_everything_and_leaves_no_temporary_directory(tmp_path, how):
    command, signame = how.rsplit("-", 1)
    signo = getattr(signal, signame)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    if command == "run":  # host-driven: QEMU plus an RPC project in a temporary directory
        argv = cli_command("run", HELLO, "--board", "mps2_an386", "--mode", "host-driven")
    elif command == "tune":  # two QEMU instances at once (docs/tuning.md), each timing long enough
        argv = cli_command(
            "tune",
            HELLO,
            "--board",
            "mps2_an386",
            "--jobs",
            "2",
            "--number",
            "1000000",
            "--output",
            tmp_path / "t.json",
        )
    else:  # long enough to be caught running
        argv = cli_command("bench", HELLO, "--board", "mps2_an386", "--number", "1000000", "--repeat", "3")
    if command == "timeout-bench":  # the issue's `timeout 10 microcompiler bench ...`, stopped early
        argv = ["timeout", "300", *argv]
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_signal_handling,
    )
    try:
        qemu = _wait_for_qemu(proc.pid, proc)  # (a host-driven run lasts about a second after this)
        proc.send_signal(signo)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    # (timeout forwards the signal and passes the command's status on, as it did not time out itself)
    assert proc.returncode == 128 + signo, err
    assert "Traceback" not in err, err
    assert f"interrupted by {signame}" in err.strip().splitlines()[-1], err
    deadline = time.monotonic() + 10
    while _alive(qemu) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(qemu), "QEMU survived the signal"
    assert list(tmpdir.iterdir()) == [], f"left behind: {list(tmpdir.iterdir())}"
    assert not (tmp_path / "t.json").exists()  # an interrupted tune writes no log


def test_a_deep_tmpdir_does_not_make_qemus_socket_path_too_long(tmp_path, monkeypatch):
    import tempfile

    from microcompiler import cleanup

    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    short = cleanup.temp_dir("microcompiler-qemu-", socket_name="qmp.sock")
    plain = cleanup.temp_dir("microcompiler-x-")
    try:
        assert len(str(short / "qmp.sock")) <= cleanup.SOCKET_PATH_MAX and short.parent == Path("/tmp")
        assert plain.parent == deep  # without a socket, $TMPDIR is kept
    finally:
        cleanup.remove_dir(short)
        cleanup.remove_dir(plain)
