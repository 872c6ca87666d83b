"""Building Zephyr projects as a new user does (issue 33): without ZEPHYR_BASE or the toolchain
exported, from the workspace scripts/setup-debian.sh recorded; build failures shown as readable
lines with the saved log's path; a project path Zephyr cannot take refused at create-project; and
flashing a real board through a real `west flash` with a stand-in runner, read on a pty found by
its USB VID:PID. The one real board build of the default suite is KWS on nucleo_l4r5zi (standalone);
tests/test_zephyr_hardware_builds.py builds the other boards and modes (long).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import threading
import tty
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from firmware_checks import check_firmware, created_weights
from oracle import Oracle

from microcompiler import cli as cli_module
from microcompiler.boards import load_board
from microcompiler.zephyr import workspace

ROOT = Path(__file__).resolve().parents[1]
TOOLCHAIN_VARIABLES = ("ZEPHYR_BASE", "ZEPHYR_TOOLCHAIN_VARIANT", "GNUARMEMB_TOOLCHAIN_PATH", "ZEPHYR_SDK_INSTALL_DIR")
needs_zephyr = pytest.mark.skipif(
    not (shutil.which("west") and os.environ.get("ZEPHYR_BASE")),
    reason="needs west and the Zephyr workspace of ../shared/zephyr (tests/conftest.py); see docs/zephyr.md",
)


def bare_environment(config_dir: Path) -> dict[str, str]:
    """This environment without ZEPHYR_BASE or any toolchain variable: a user who only ran the set-up."""
    env = {k: v for k, v in os.environ.items() if k not in TOOLCHAIN_VARIABLES}
    return {**env, "MICROCOMPILER_CONFIG_DIR": str(config_dir), "PYTHONPATH": str(ROOT)}


def mc(args: list, env: dict[str, str], timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def mc_here(args: list, env: dict[str, str]) -> SimpleNamespace:
    """``mc`` run in this process with ``env`` as its environment for the call (quick commands: a
    subprocess would spend a second or more importing microcompiler); the same exit status and output."""
    out, err = io.StringIO(), io.StringIO()
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = cli_module.main([str(a) for a in args])
            except SystemExit as exc:  # argparse's own refusals
                status = exc.code if isinstance(exc.code, int) else 2
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return SimpleNamespace(returncode=status, stdout=out.getvalue(), stderr=err.getvalue())


def assert_readable_failure(proc: subprocess.CompletedProcess, log: Path, *shown: str) -> list[str]:
    """Exit 2; a headline naming the saved log, then several real lines; nothing escaped; the log whole."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("microcompiler: error: ") and str(log) in lines[0], proc.stderr
    assert 3 <= len(lines) <= 12, proc.stderr
    assert "\\x0a" not in proc.stderr and all(len(line) <= 320 for line in lines), proc.stderr
    for fragment in shown:
        assert any(fragment in line for line in lines[1:]), (fragment, proc.stderr)
    assert log.is_file()
    return lines


# ---- Without exports: the recorded workspace ----


@pytest.fixture(scope="module")
def l4r5(tmp_path_factory, shared_models):
    """KWS on nucleo_l4r5zi, created and built with nothing exported but the recorded workspace."""
    tmp = tmp_path_factory.mktemp("l4r5")
    config = tmp / "config"
    workspace.record_base(os.environ["ZEPHYR_BASE"], {"MICROCOMPILER_CONFIG_DIR": str(config)})
    env = bare_environment(config)
    project = tmp / "kws_l4r5"
    model = shared_models / "mlperf_tiny" / "kws_ref_model.tflite"
    create = mc(["create-project", model, "--template", "zephyr", "--board", "nucleo_l4r5zi", "-o", project], env)
    assert create.returncode == 0, create.stderr
    build = mc(["build", project], env, timeout=3600)
    return SimpleNamespace(dir=project, model=model, create=create, build=build, env=env)


@needs_zephyr
def test_build_needs_no_exports_after_the_set_up(l4r5):
    assert l4r5.build.returncode == 0, l4r5.build.stdout[-3000:] + l4r5.build.stderr
    info = json.loads((l4r5.dir / "microcompiler-project.json").read_text())
    assert Path(info["zephyr_base"]) == Path(os.environ["ZEPHYR_BASE"]).resolve()  # what the set-up recorded
    assert "toolchain gnuarmemb" in l4r5.build.stdout  # Debian's arm-none-eabi-gcc, found by itself
    log = (l4r5.dir / "build" / "microcompiler-build.log").read_text()
    assert "west build" in log.splitlines()[0] and "Zephyr version: 3.7.1" in log and "zephyr.elf" in log


@needs_zephyr
def test_kws_for_nucleo_l4r5zi_fits_and_has_the_dsp_kernels(l4r5):
    assert l4r5.build.returncode == 0, l4r5.build.stderr
    board = load_board("nucleo_l4r5zi")
    elf = l4r5.dir / "build" / "zephyr" / "zephyr.elf"
    check_firmware(elf, board, "kws_ref_model", l4r5.build.stdout, created_weights(l4r5.create.stdout))


def test_no_workspace_is_one_line(tmp_path, shared_models):
    env = bare_environment(tmp_path / "nothing-recorded")
    project = tmp_path / "p"
    model = shared_models / "tflm" / "hello_world_int8.tflite"
    assert (
        mc_here(
            ["create-project", model, "--template", "zephyr", "--board", "mps2_an385", "-o", project], env
        ).returncode
        == 0
    )
    assert "zephyr_base" not in json.loads((project / "microcompiler-project.json").read_text())
    proc = mc_here(["build", project], env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no Zephyr workspace found" in lines[0] and "--zephyr-base" in lines[0], proc.stderr
    proc = mc_here(["build", project, "--zephyr-base", tmp_path], env)  # not a Zephyr tree
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "is not a Zephyr tree" in proc.stderr


def test_the_set_up_record_is_found_and_rewritten(tmp_path):
    base = Path(os.environ.get("ZEPHYR_BASE") or "/nonexistent")
    if not (base / "VERSION").is_file():
        pytest.skip("needs the Zephyr workspace")
    env = {"MICROCOMPILER_CONFIG_DIR": str(tmp_path / "cfg")}
    command = [sys.executable, "-m", "microcompiler.zephyr.workspace", "--record", str(base)]
    for _ in range(2):  # setup-debian.sh reruns: the same record
        proc = subprocess.run(
            command, env={**os.environ, **env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "cfg" / "zephyr-base").read_text() == f"{base.resolve()}\n"
    assert workspace.zephyr_base(environ=env) == base.resolve()


# ---- Readable failures ----


@needs_zephyr
def test_a_cmake_error_in_a_zephyr_build_is_readable_lines_and_a_saved_log(tmp_path, shared_models):
    """CMake stops at the project's CMakeLists.txt (a user's edit) before Zephyr's configure starts,
    which keeps this check of west build's failure output cheap; the Kconfig failure below is the
    long one (it needs the devicetree and Kconfig run)."""
    project = tmp_path / "p"
    model = shared_models / "tflm" / "hello_world_int8.tflite"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    assert (
        mc_here(
            ["create-project", model, "--template", "zephyr", "--board", "nucleo_l4r5zi", "-o", project], env
        ).returncode
        == 0
    )
    cmake_lists = project / "CMakeLists.txt"
    first, rest = cmake_lists.read_text().split("\n", 1)
    assert first.startswith("#")
    cmake_lists.write_text(f"{first}\nmicrocompiler_no_such_command(oops)\n{rest}")
    proc = mc_here(["build", project], env)
    log = project / "build" / "microcompiler-build.log"
    lines = assert_readable_failure(proc, log, "microcompiler_no_such_command")
    assert "west build failed" in lines[0]
    text = log.read_text()
    assert "west build" in text.splitlines()[0] and 'Unknown CMake command "microcompiler_no_such_command"' in text


@pytest.mark.long
@needs_zephyr
def test_a_zephyr_configure_failure_is_readable_lines_and_a_saved_log(tmp_path, shared_models):
    project = tmp_path / "p"
    model = shared_models / "tflm" / "hello_world_int8.tflite"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    assert (
        mc(["create-project", model, "--template", "zephyr", "--board", "nucleo_l4r5zi", "-o", project], env).returncode
        == 0
    )
    with open(project / "prj.conf", "a") as conf:
        conf.write("CONFIG_MICROCOMPILER_NO_SUCH_SYMBOL=y\n")
    proc = mc(["build", project], env)
    log = project / "build" / "microcompiler-build.log"
    lines = assert_readable_failure(proc, log, "MICROCOMPILER_NO_SUCH_SYMBOL")
    assert "west build failed" in lines[0]
    text = log.read_text()
    assert (
        "MICROCOMPILER_NO_SUCH_SYMBOL" in text
        and "-- Board: nucleo_l4r5zi" in text
        and len(text.splitlines()) > len(lines)
    )


def test_a_compile_error_in_a_bare_metal_build_is_readable_lines_and_a_saved_log(tmp_path, shared_models):
    project = tmp_path / "p"
    model = shared_models / "tflm" / "hello_world_int8.tflite"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    assert mc_here(["create-project", model, "--board", "mps2_an385", "-o", project], env).returncode == 0
    with open(project / "src" / "main.c", "a") as main:
        main.write("\nint microcompiler_broken(void) { return no_such_variable; }\n")
    proc = mc_here(["build", project], env)
    log = project / "build" / "microcompiler-build.log"
    lines = assert_readable_failure(proc, log, "error:", "no_such_variable")
    assert "ninja failed" in lines[0]
    text = log.read_text()
    assert "cmake" in text.splitlines()[0] and "$ ninja" in text and "no_such_variable" in text


# ---- Paths ----


def test_a_path_with_a_space_is_refused_for_zephyr(tmp_path, shared_models):
    """Zephyr 3.7.1's west build of a project under '/tmp/with space/' stops in CMake ("File not
    found: /tmp/with": the Kconfig file list is split at the space), so create-project refuses it."""
    model = shared_models / "tflm" / "hello_world_int8.tflite"
    out = tmp_path / "with space" / "p"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = mc_here(["create-project", model, "--template", "zephyr", "--board", "nucleo_l4r5zi", "-o", out], env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "contains a space" in lines[0] and "with_space" in lines[0], proc.stderr
    assert not out.exists()
    # bare metal takes it (CMake + Ninja quote it)
    assert mc_here(["create-project", model, "--board", "mps2_an385", "-o", out], env).returncode == 0


@pytest.mark.long
@needs_zephyr
def test_the_other_characters_a_project_path_may_hold_build_on_zephyr(tmp_path, shared_models):
    out = tmp_path / "a+b@c=d~e.f_g-h" / "p"
    model = shared_models / "tflm" / "hello_world_int8.tflite"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    assert (
        mc(["create-project", model, "--template", "zephyr", "--board", "nucleo_l4r5zi", "-o", out], env).returncode
        == 0
    )
    proc = mc(["build", out], env, timeout=3600)
    assert proc.returncode == 0, proc.stderr
    assert (out / "build" / "zephyr" / "zephyr.elf").is_file()


# ---- Flashing a real board: a stand-in runner, a pty for the board's serial port ----

STAND_IN = """#!/bin/sh
# stands in for STMicroelectronics' STM32_Programmer_CLI: records its arguments, keeps the image
echo "$@" >> {record}
while [ $# -gt 0 ]; do
  if [ "$1" = "--download" ]; then cp "$2" {image}; fi
  shift
done
"""


class FakePort(SimpleNamespace):
    pass


class StandInBoard:
    """The board's USB serial port: a pty whose master side prints a report again and again, as the
    standalone firmware does (every REPORT_PERIOD_MS)."""

    def __init__(self, report: bytes):
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        self.path = os.ttyname(self.slave)
        self.report = report
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.talk, daemon=True)

    def talk(self) -> None:
        while not self.stop.wait(0.2):
            try:
                os.write(self.master, self.report)
            except OSError:
                return

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        os.close(self.master)
        os.close(self.slave)


def kws_report(model: Path, project: Path) -> tuple[bytes, list[np.ndarray]]:
    """The report the firmware prints for the project's saved input: TFLite Micro's outputs."""
    expected = Oracle(model.read_bytes()).run([np.load(project / "inputs" / "input0.npy")])
    body = "".join(f"output{k} {out.tobytes().hex()}\r\n" for k, out in enumerate(expected))
    return f"boot\r\nMC-BEGIN\r\n{body}ticks 1234567\r\nhz 120000000\r\nMC-END 0 ok\r\n".encode(), expected


def ports(*entries):
    return lambda: [FakePort(device=d, vid=v, pid=p) for d, v, p in entries]


@needs_zephyr
def test_flash_runs_west_flash_and_reads_the_board_found_by_its_usb_id(l4r5, tmp_path, monkeypatch, capsys):
    assert l4r5.build.returncode == 0, l4r5.build.stderr
    import serial.tools.list_ports

    bin_dir, record, image = tmp_path / "bin", tmp_path / "args.txt", tmp_path / "flashed.hex"
    bin_dir.mkdir()
    (bin_dir / "STM32_Programmer_CLI").write_text(STAND_IN.format(record=record, image=image))
    (bin_dir / "STM32_Programmer_CLI").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    for name in TOOLCHAIN_VARIABLES:  # the workspace recorded in the project does it
        monkeypatch.delenv(name, raising=False)
    report, expected = kws_report(l4r5.model, l4r5.dir)
    with StandInBoard(report) as board:
        monkeypatch.setattr(
            serial.tools.list_ports, "comports", ports(("/dev/ttyS0", None, None), (board.path, 0x0483, 0x374B))
        )
        status = cli_module.main(["flash", str(l4r5.dir), "--json", "--timeout", "60"])
    out, err = capsys.readouterr()
    assert status == 0, err
    calls = record.read_text().splitlines()
    assert calls and calls[-1].startswith("--connect port=swd reset=HWrst") and "--download" in calls[-1], calls
    assert image.read_bytes() == (l4r5.dir / "build" / "zephyr" / "zephyr.hex").read_bytes()
    result = json.loads(out)
    assert [np.array(o).tolist() for o in result["outputs"]] == [e.tolist() for e in expected]
    assert result["device_ticks"] == 1234567 and result["timer_hz"] == 120_000_000
    assert (l4r5.dir / "build" / "microcompiler-flash.log").is_file()

    # --runner names another runner: its tool is missing here, which west flash says in readable lines
    monkeypatch.setattr(serial.tools.list_ports, "comports", ports())
    status = cli_module.main(["flash", str(l4r5.dir), "--runner", "jlink"])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert status == 2 and "west flash failed" in lines[0] and "jlink" in lines[0] and len(lines) >= 2, err
    assert "\\x0a" not in err


def test_the_port_is_found_by_usb_id_in_one_line_when_not_exactly_one(monkeypatch):
    import serial.tools.list_ports

    from microcompiler.errors import DeviceError
    from microcompiler.transport.serial import find_port

    ids = ("0483:374b", "0483:374e")
    monkeypatch.setattr(serial.tools.list_ports, "comports", ports(("/dev/ttyACM3", 0x0483, 0x374E)))
    assert find_port(ids) == "/dev/ttyACM3"
    monkeypatch.setattr(serial.tools.list_ports, "comports", ports(("/dev/ttyUSB0", 0x10C4, 0xEA60)))
    with pytest.raises(DeviceError, match=r"no serial port with USB id 0483:374b or 0483:374e.*ttyUSB0 \(10c4:ea60\)"):
        find_port(ids)
    monkeypatch.setattr(
        serial.tools.list_ports, "comports", ports(("/dev/ttyACM0", 0x0483, 0x374B), ("/dev/ttyACM1", 0x0483, 0x374B))
    )
    with pytest.raises(
        DeviceError, match=r"2 serial ports .*/dev/ttyACM0, /dev/ttyACM1; .*--port /dev/ttyACM0"
    ) as info:
        find_port(ids)
    assert "\n" not in str(info.value)


def test_port_auto_finds_a_hardware_board_already_running_its_firmware(tmp_path, shared_models, monkeypatch):
    """run/bench/validate --port auto: nothing is flashed; the port is the one with the board's USB id."""
    import serial.tools.list_ports

    from microcompiler.compiler import compile_model
    from microcompiler.errors import MicrocompilerError
    from microcompiler.project import create_project

    hello = compile_model(shared_models / "tflm" / "hello_world_int8.tflite")
    project = create_project(hello, "zephyr", "nucleo_l4r5zi", tmp_path / "p")
    with StandInBoard(b"MC-BEGIN\r\n") as board:
        monkeypatch.setattr(serial.tools.list_ports, "comports", ports((board.path, 0x0483, 0x374E)))
        with project.target.open_link(project, port="auto") as link:
            assert link.port == board.path
            assert b"MC-BEGIN" in link.read(10, timeout=5.0)
    emulated = create_project(hello, "zephyr", "mps2_an385", tmp_path / "q")
    with pytest.raises(MicrocompilerError, match="--port auto finds a hardware board's serial port .* is emulated"):
        emulated.target.open_link(emulated, port="auto")
