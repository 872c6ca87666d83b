"""Run the official MLPerf Tiny runner (mlcommons/tiny benchmark/runner, unchanged) against a firmware.

The runner speaks the EEMBC DUT protocol over a serial port. For an emulated board the firmware
runs in QEMU with ``-serial pty -icount shift=0`` (guest time = instructions, so the device's
timestamps repeat exactly) and the runner gets the pty; for a real board it gets ``port``. The
runner is started through ``run_official_runner.py`` of the runner folder (it makes pyserial list
the port under a USB vid:pid, which the runner insists on, and stubs libusb; nothing else).

Performance mode in QEMU: the throughput the runner reports is N / (device microseconds), the same
whatever N is (the device's time counts instructions; the tests check it agrees with `microcompiler
bench` within 2%). But the runner also wants 5 windows that take >= 10 s of *host* time, so N is
sized from the host's speed, timed over the pty first (``calibrate``), and when the host then runs
faster than it was timed (the runner's ERROR 2) the runner runs again with N doubled.

Every child process (QEMU, the runner) is stopped and every temporary directory removed when the
run ends, fails, times out, or the process gets SIGINT/SIGTERM/SIGHUP; every wait is bounded.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from microcompiler.cleanup import Interrupted
from microcompiler.errors import DeviceError, MicrocompilerError, ToolchainError
from microcompiler.transport.qemu import qemu_run_args

RUNNER_ENV = "MLPERF_TINY_RUNNER"  # the folder with runner/, run_official_runner.py, devices_pty.yaml
RUNNER_PACKAGES = ("serial", "yaml", "numpy", "sklearn", "matplotlib", "usb")
QEMU = "qemu-system-arm"
_PTY_LINE = re.compile(r"char device redirected to (\S+) \(label serial0\)")
_MEDIAN = re.compile(r"Median throughput is\s+([\d.]+) inf\./sec\.")
_TOP1 = re.compile(r"Top 1% = ([\d.]+)")
_AUC = re.compile(r"AUC = ([\d.]+|nan)")
_SESSION = re.compile(r"Session logged in file (\S+)")
_RUNNER_ERROR = re.compile(r"ERROR \d - .*")
# Performance mode in QEMU. The runner wants its 5 windows (download + infer each) to take >= 10 s of
# host time together (else ERROR 2) and gives up on an `infer` after 30 s; the throughput it reports
# is the device's (N / device microseconds), whatever N is. So N is sized from the host's speed:
WINDOW_HOST_SECONDS = 3.0  # each window, its download included, takes about this much host time
MIN_INFER_HOST_SECONDS = 0.5  # ... and its inferences at least this (vww01's download alone is longer)
MAX_WINDOW_HOST_SECONDS = 20.0  # ... and its inferences less than this
CALIBRATION_SECONDS = 0.5  # host time of the calibration's last `infer`
TOO_SHORT_RETRIES = 3  # the host sped up after the calibration (ERROR 2): again with N doubled
LOAD_CHUNK_BYTES = 38  # bytes per `db` command: "db " + 76 hex digits, under the 80-character limit
BOOT_SECONDS = 1.0  # let the firmware boot before the runner opens the port (its boot lines are not needed)
_TOO_SHORT = "ERROR 2"  # the runner's "loop exited before 10 seconds elapsed"

Log = Callable[[str], None]


@dataclass
class RunnerResult:
    mode: str  # "p" or "a"
    output: str  # everything the runner printed
    session_dir: Path | None  # the runner's sessions/<timestamp>/ (log.txt, results.txt, results.json)
    median_throughput: float | None = None  # inferences per second (performance mode)
    top1: float | None = None  # percent (accuracy mode)
    auc: float | None = None
    errors: list[str] = field(default_factory=list)  # the runner's "ERROR n - ..." lines


def default_runner_dir() -> Path | None:
    """$MLPERF_TINY_RUNNER, else ../shared/tools/mlperf_tiny_runner beside this source checkout or
    beside the current directory (an installed package does not live in the checkout)."""
    if os.environ.get(RUNNER_ENV):
        return Path(os.environ[RUNNER_ENV])
    for base in (Path(__file__).resolve().parents[2], Path.cwd().resolve().parent):
        candidate = base / "shared" / "tools" / "mlperf_tiny_runner"
        if candidate.is_dir():
            return candidate
    return None


def check_runner_dir(runner_dir: str | Path | None) -> Path:
    if runner_dir is None:
        raise MicrocompilerError(
            f"no MLPerf Tiny runner: give --runner-dir (or set {RUNNER_ENV}) to a folder "
            "with runner/ (mlcommons/tiny benchmark/runner), run_official_runner.py and "
            "devices_pty.yaml"
        )
    runner_dir = Path(runner_dir).resolve()
    for name in ("runner/main.py", "run_official_runner.py", "devices_pty.yaml"):
        if not (runner_dir / name).is_file():
            raise MicrocompilerError(f"{runner_dir} is not an MLPerf Tiny runner folder: {name} is missing")
    return runner_dir


def check_runner_packages(python: str = sys.executable) -> None:
    code = "import " + ", ".join(RUNNER_PACKAGES)
    try:
        proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"cannot start {python} to check the runner's packages: {exc}") from None
    if proc.returncode != 0:
        missing = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "an import failed"
        raise ToolchainError(
            f"the MLPerf Tiny runner needs Python packages that are missing ({missing}); "
            "install them with: pip install 'microcompiler[mlperf]'"
        )


def make_stand_in_datasets(runner_dir: Path, out_dir: Path, timeout: float = 120.0) -> Path:
    """Random datasets in the runner's layout (gen_datasets.py): fine for performance mode; accuracy
    numbers on them mean nothing."""
    script = runner_dir / "gen_datasets.py"
    if not script.is_file():
        raise MicrocompilerError(f"{script} is missing: give --dataset DIR")
    proc = subprocess.run([sys.executable, str(script), str(out_dir)], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise ToolchainError(f"gen_datasets.py failed: {proc.stderr.strip()[-500:]}")
    return out_dir


def writable_runner(runner_dir: Path, work_dir: Path) -> Path:
    """A copy of runner/ under work_dir (the runner writes sessions/ into its own folder)."""
    target = work_dir / "runner"
    if not (target / "main.py").is_file():
        shutil.copytree(runner_dir / "runner", target, ignore=shutil.ignore_patterns("sessions", "__pycache__"))
    return target


class _Children:
    """The child processes of one run: stopped on exit and on SIGINT/SIGTERM/SIGHUP."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self):
        self.procs: list[subprocess.Popen] = []
        self._previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._on_signal)
        return self

    def _on_signal(self, signum, frame):
        # the command line's own signal exception: it exits with 128 + the signal (143 for SIGTERM)
        raise Interrupted(signum)

    def start(self, cmd: list[str], **kwargs) -> subprocess.Popen:
        proc = subprocess.Popen(cmd, **kwargs)
        self.procs.append(proc)
        return proc

    def __exit__(self, *exc):
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def _wait_for_pty(qemu: subprocess.Popen, log_path: Path, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log_path.read_text(errors="replace")
        match = _PTY_LINE.search(text)
        if match:
            return match.group(1)
        if qemu.poll() is not None:
            raise DeviceError(f"QEMU exited with code {qemu.returncode}: {text[-1000:]}")
        time.sleep(0.05)
    raise DeviceError(f"QEMU did not open its serial pty within {timeout:g} s")


def _command(link, command: str, timeout: float) -> list[str]:
    """Send one DUT command and return its lines up to m-ready (bounded by timeout)."""
    link.write(command.encode() + b"%")
    deadline, buffer = time.monotonic() + timeout, b""
    while b"m-ready" not in buffer:
        if time.monotonic() > deadline:
            raise DeviceError(f"the firmware did not answer {command!r} within {timeout:g} s")
        buffer += link.read(max(1, link.in_waiting))
    return buffer.decode(errors="replace").split("\r\n")


@dataclass
class Calibration:
    benchmark: str  # what the firmware serves (m-model-[...])
    load_seconds: float  # host time of one input's download
    infer_seconds: float  # host time of one inference

    def runs(self, window_seconds: float) -> int:
        """N such that one window (download and N inferences) takes about window_seconds of host time."""
        infer = max(MIN_INFER_HOST_SECONDS, window_seconds - self.load_seconds)
        runs = max(1, int(infer / self.infer_seconds))
        return min(runs, max(1, int(MAX_WINDOW_HOST_SECONDS / self.infer_seconds)))


def calibrate(port: str, timeout: float = 60.0) -> Calibration:
    """Time one download and some inferences on the emulated DUT (host seconds)."""
    import serial

    from microcompiler.mlperf import BENCHMARKS

    with serial.Serial(port, 115200, timeout=0.1) as link:
        link.reset_input_buffer()
        lines = _command(link, "profile", timeout)
        model = next((line[len("m-model-[") : -1] for line in lines if line.startswith("m-model-[")), None)
        if model not in BENCHMARKS:
            raise DeviceError(f"the firmware names no known MLPerf Tiny benchmark: {lines!r}")
        load_bytes = BENCHMARKS[model].load_bytes
        start = time.monotonic()
        _command(link, f"db load {load_bytes}", timeout)
        for offset in range(0, load_bytes, LOAD_CHUNK_BYTES):
            _command(link, "db " + "00" * min(LOAD_CHUNK_BYTES, load_bytes - offset), timeout)
        load_seconds = time.monotonic() - start
        runs = 1
        while True:  # double the runs until the command's own overhead no longer matters
            start = time.monotonic()
            _command(link, f"infer {runs} 0", timeout)
            elapsed = time.monotonic() - start
            if elapsed >= CALIBRATION_SECONDS or runs >= 1 << 20:
                break
            runs *= 2
    return Calibration(model, load_seconds, max(elapsed / runs, 1e-7))


def emulated_tests_file(runner_dir: Path, benchmark: str, runs: int, out: Path) -> Path:
    """The runner's performance script for one benchmark with N = runs (loop 5 and the warm-ups kept)."""
    import yaml

    tests = yaml.safe_load((runner_dir / "runner" / "tests_performance.yaml").read_text())
    for step in tests[benchmark]["script"]:
        if isinstance(step, dict):
            loop = next(iter(step.values()))
            for k, inner in enumerate(loop):
                if isinstance(inner, str) and inner.startswith("infer"):
                    warmups = inner.split()[2] if len(inner.split()) > 2 else "10"
                    loop[k] = f"infer {runs} {warmups}"
    out.write_text(yaml.safe_dump({benchmark: tests[benchmark]}, sort_keys=False))
    return out


def parse_runner_output(text: str, mode: str, runner_copy: Path) -> RunnerResult:
    result = RunnerResult(mode, text, None)
    for pattern, attribute in ((_MEDIAN, "median_throughput"), (_TOP1, "top1"), (_AUC, "auc")):
        found = pattern.findall(text)
        if found:
            setattr(result, attribute, float(found[-1]))
    result.errors = _RUNNER_ERROR.findall(text)
    session = _SESSION.search(text)
    if session:
        result.session_dir = (runner_copy / session.group(1)).parent
    return result


def run_runner(
    runner_dir: str | Path,
    work_dir: str | Path,
    *,
    mode: str,
    dataset: str | Path,
    elf: str | Path | None = None,
    qemu_machine: str | None = None,
    qemu_args: tuple[str, ...] = (),
    port: str | None = None,
    tests: str | Path | None = None,
    timeout: float = 1800.0,
    log: Log = print,
    window_seconds: float = WINDOW_HOST_SECONDS,
) -> RunnerResult:
    """Run the official runner in ``mode`` ("p" performance, "a" accuracy) against ``elf`` in QEMU
    (``qemu_machine``, with the board file's ``[qemu] args``) or against a board on ``port``. Sessions go
    to work_dir/runner/sessions/."""
    if mode not in ("p", "a"):
        raise MicrocompilerError(f"unknown runner mode {mode!r}: use p (performance) or a (accuracy)")
    if (port is None) == (qemu_machine is None):
        raise MicrocompilerError("give either a serial port (a real board) or a QEMU machine (an emulated one)")
    runner_dir = check_runner_dir(runner_dir)
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    runner_copy = writable_runner(runner_dir, work_dir)
    size_for_qemu = tests is None and mode == "p" and port is None
    if tests is None and not size_for_qemu:
        tests = runner_copy / ("tests_performance.yaml" if mode == "p" else "tests_accuracy.yaml")
    with _Children() as children, tempfile.TemporaryDirectory(prefix="microcompiler-mlperf-") as tmp:
        if port is None:
            if shutil.which(QEMU) is None:
                raise ToolchainError(
                    f"'{QEMU}' is not on PATH; install QEMU's Arm system emulator "
                    "(Debian: apt-get install qemu-system-arm)"
                )
            qemu_log = Path(tmp) / "qemu.log"
            with open(qemu_log, "wb") as out:
                qemu = children.start(
                    [QEMU, *qemu_run_args(qemu_machine, str(elf), qemu_args)],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            port = _wait_for_pty(qemu, qemu_log, 15.0)
            time.sleep(BOOT_SECONDS)
            if size_for_qemu:
                calibration = calibrate(port)
                runs = calibration.runs(window_seconds)
                log(
                    f"{calibration.benchmark} in QEMU: {runs} inferences per window (about {window_seconds:g} s each, "
                    "download included)"
                )
        env = {
            **os.environ,
            "MLPERF_DUT_PORT": str(port),
            "MLPERF_RUNNER_DIR": str(runner_copy),
            "PYTHONUNBUFFERED": "1",
            "MPLBACKEND": "Agg",
        }
        for attempt in range(TOO_SHORT_RETRIES + 1):
            if size_for_qemu:
                tests = emulated_tests_file(
                    runner_dir, calibration.benchmark, runs, work_dir / "tests_emulated_performance.yaml"
                )
            result = _run_official_runner(
                children, runner_dir, runner_copy, env, port, mode, dataset, tests, timeout, log
            )
            if not (size_for_qemu and attempt < TOO_SHORT_RETRIES and any(_TOO_SHORT in e for e in result.errors)):
                break
            runs *= 2  # QEMU ran faster than when it was timed: longer windows (the throughput is the same)
            log(f"the windows took less than the runner's 10 s of host time; again with {runs} inferences per window")
    if result.errors:
        raise DeviceError(f"the MLPerf Tiny runner reported: {'; '.join(result.errors)}")
    return result


def _run_official_runner(
    children: _Children,
    runner_dir: Path,
    runner_copy: Path,
    env: dict,
    port: str,
    mode: str,
    dataset: str | Path,
    tests: str | Path,
    timeout: float,
    log: Log,
) -> RunnerResult:
    """One run of the official runner on ``port``, bounded by ``timeout``."""
    cmd = [
        sys.executable,
        str(runner_dir / "run_official_runner.py"),
        f"--device_list={runner_dir / 'devices_pty.yaml'}",
        f"--dataset_path={Path(dataset).resolve()}",
        f"--test_script={Path(tests).resolve()}",
        f"--mode={mode}",
    ]
    log(f"running the MLPerf Tiny runner ({'performance' if mode == 'p' else 'accuracy'} mode) on {port}")
    runner = children.start(
        cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(runner.stdout), daemon=True)
    reader.start()
    try:
        runner.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise DeviceError(
            f"the MLPerf Tiny runner did not finish within {timeout:g} s; its last lines: "
            f"{''.join(lines[-5:]).strip()!r}"
        ) from None
    reader.join(timeout=10)
    text = "".join(lines)
    if runner.returncode != 0:
        raise DeviceError(
            f"the MLPerf Tiny runner failed (exit {runner.returncode}): {' | '.join(text.strip().splitlines()[-6:])}"
        )
    return parse_runner_output(text, mode, runner_copy)
