"""Nothing unsafe from a path: hostile project paths and outputs that would overwrite inputs.

Regression tests for issue 24 ("Nothing unsafe from a model or a path"), groups 1 and 2: a project
path can never run a command (it is refused in one line unless it holds only letters, digits, spaces
and ``_-.+/@=~``), and ``--html`` never overwrites the model, an input, or a file the tool did not
write.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from test_reliability_files import BOARD, assert_one_line_error, cli, snapshot, workdir  # noqa: F401

from microcompiler.resources import templates_dir


@pytest.mark.parametrize(
    "name",
    ["inj&whoami&x", "a|b", "a<b", "a>b", "a(b", "a)b", "a%b", "a*b", "a?b", "a,b", "a!b", "a\x1bb", "a\nb", "a:b"],
)
def test_project_path_that_a_consumer_would_split_is_refused_in_one_line(workdir, name):
    out = workdir / name
    proc = cli("create-project", "model.tflite", "--board", BOARD, "-o", name, cwd=workdir)
    assert_one_line_error(proc, "project directory", "choose a directory")
    assert not out.exists()
    assert "\x1b" not in proc.stderr


def test_a_project_moved_under_a_command_path_never_runs_the_command(workdir):
    """A project created in a safe place and then moved to `inj&touch PWNED&x`: build refuses it
    before CMake, Ninja or the shell see the path, so the command never runs."""
    proj = workdir / "proj"
    assert cli("create-project", "model.tflite", "--board", BOARD, "-o", proj, cwd=workdir).returncode == 0
    moved = workdir / "inj&touch PWNED&x"
    shutil.move(proj, moved)
    proc = cli("build", moved, cwd=workdir)
    assert_one_line_error(proc, "project directory", "'&'")
    assert not (workdir / "PWNED").exists() and not list(workdir.rglob("PWNED"))
    assert not (moved / "build").exists()


def test_the_objcopy_step_is_verbatim_for_the_shell():
    """Defence in depth: CMake quotes the POST_BUILD objcopy command's arguments for the shell."""
    text = (templates_dir() / "baremetal" / "CMakeLists.txt.j2").read_text()
    command = text[text.index("add_custom_command") :]
    command = command[: command.index(")\n") + 1]
    assert "VERBATIM" in command


def test_spaces_plus_and_unicode_letters_still_work(workdir):
    name = "my proj+v1 été"
    proc = cli("create-project", "model.tflite", "--board", BOARD, "-o", name, cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    proc = cli("build", name, cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert (workdir / name / "build" / "firmware.hex").is_file()


# ---- --html never overwrites what the tool did not write ----

HTML_COMMANDS = {
    "analyze": ["analyze", "model.tflite"],
    "bench": ["bench", "model.tflite", "--board", "host", "--number", "1", "--repeat", "1"],
    "validate": ["validate", "model.tflite", "--board", "host", "--inputs", "1", "--mode", "host-driven"],
}


@pytest.mark.parametrize("command", sorted(HTML_COMMANDS))
def test_html_report_never_overwrites_the_model(workdir, command):
    before = snapshot(workdir)
    proc = cli(*HTML_COMMANDS[command], "--html", "model.tflite", cwd=workdir)
    assert_one_line_error(proc, "--html", "model.tflite")
    assert snapshot(workdir) == before


@pytest.mark.parametrize("command", sorted(HTML_COMMANDS))
def test_html_report_never_overwrites_a_file_it_did_not_write(workdir, command):
    (workdir / "notes.html").write_text("<html>my notes</html>\n")
    before = snapshot(workdir)
    proc = cli(*HTML_COMMANDS[command], "--html", "notes.html", cwd=workdir)
    assert_one_line_error(proc, "notes.html", "not a microcompiler report")
    assert snapshot(workdir) == before


def test_bench_html_never_overwrites_its_input(workdir):
    np.save(workdir / "x.npy", np.zeros((1, 1), dtype=np.int8))
    before = snapshot(workdir)
    proc = cli(*HTML_COMMANDS["bench"], "--input", "x.npy", "--html", "x.npy", cwd=workdir)
    assert_one_line_error(proc, "--html", "x.npy")
    assert snapshot(workdir) == before


def test_html_report_replaces_its_own_earlier_report(workdir):
    for _ in range(2):
        proc = cli("analyze", "model.tflite", "--html", "report.html", cwd=workdir)
        assert proc.returncode == 0, proc.stderr
    assert "report.html" in proc.stdout and (workdir / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in workdir.iterdir()) == ["model.tflite", "report.html"]  # no temporary file left


@pytest.mark.parametrize("hostile", ["<!--<script>", "</script><script>alert(1)</script>", "a&b>c"])
def test_the_reports_json_island_is_safe_for_any_tensor_name(tmp_path, hostile):
    import json
    import re

    from model_builder import ModelBuilder

    from microcompiler.analysis import analyze_model
    from microcompiler.report import render_report

    b = ModelBuilder()
    x = b.activation(hostile, [1, 4], "int8", scale=0.1, zero_point=0)
    y = b.activation(hostile + "_out", [1, 4], "int8", scale=0.1, zero_point=0)
    b.op("RELU", [x], [y])
    path = tmp_path / "m.tflite"
    path.write_bytes(b.finish(inputs=[x], outputs=[y]))
    analysis = analyze_model(str(path), None)
    assert hostile in json.dumps(analysis)
    page = render_report("t", analysis=analysis)
    island = re.search(r"<script type='application/json' id='report-data'>(.*?)</script>", page, re.S).group(1)
    assert "<" not in island and ">" not in island  # nothing in it can open a comment or end the element
    assert page.count("<script") == 1 and page.count("</script>") == 1
    assert hostile in json.dumps(json.loads(island))


# ---- names that would hide a system header ----


@pytest.mark.parametrize(
    "stem", ["math", "string", "stdint", "stdio", "stdlib", "time", "unistd", "errno", "features", "endian"]
)
def test_a_model_named_like_a_system_header_is_prefixed_and_runs(workdir, stem):
    shutil.copyfile(workdir / "model.tflite", workdir / f"{stem}.tflite")
    proc = cli("run", f"{stem}.tflite", "--board", "host", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    proc = cli("compile", f"{stem}.tflite", "-o", "lib", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    names = {p.name for p in (workdir / "lib").rglob("*")}
    assert f"{stem}.h" not in names and f"m_{stem}.h" in names


@pytest.mark.parametrize("name", ["math", "stdio", "string"])
def test_name_of_a_system_header_is_refused(workdir, name):
    proc = cli("compile", "model.tflite", "--name", name, "-o", "lib", cwd=workdir)
    assert_one_line_error(proc, "reserved", "system header")
    assert not (workdir / "lib").exists()


# ---- every input file is bounded before it is read; one line, never a traceback ----


@pytest.mark.parametrize(
    "command",
    [
        ["compile", "/dev/zero", "-o", "lib"],
        ["analyze", "/dev/zero"],
        ["run", "model.tflite", "--board", "host", "--input", "/dev/zero"],
        ["compile", ".", "-o", "lib"],
    ],
)
def test_a_device_or_directory_is_refused_before_it_is_read(workdir, command):
    import time

    started = time.monotonic()
    proc = cli(*command, cwd=workdir)
    assert_one_line_error(proc, "not a file")
    assert time.monotonic() - started < 60  # /dev/zero used to grow to 24 GB until the kernel killed it


def test_a_model_larger_than_the_limit_is_refused_unread(workdir, monkeypatch):
    from microcompiler import user_files
    from microcompiler.errors import ModelFormatError
    from microcompiler.frontend.tflite import load_tflite

    monkeypatch.setattr("microcompiler.frontend.tflite.MAX_MODEL_BYTES", 1000)
    with pytest.raises(ModelFormatError, match="larger than"):
        load_tflite(workdir / "model.tflite")
    assert user_files.MAX_MODEL_BYTES >= 256 << 20


def test_a_binary_tuning_log_is_one_line(workdir):
    (workdir / "log.json").write_bytes(bytes(range(256)) * 4)
    proc = cli("compile", "model.tflite", "--board", BOARD, "--tuning", "log.json", "-o", "lib", cwd=workdir)
    assert_one_line_error(proc, "log.json", "not a text file")


def test_run_into_a_closed_pipe_is_quiet(workdir):
    """`microcompiler run ... | head -1`: the reader closed the pipe; no BrokenPipeError traceback."""
    import os
    import subprocess
    import sys

    from test_reliability_files import REPO

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        f"{sys.executable} -m microcompiler.cli run model.tflite --board host --json | head -c 1",
        shell=True,
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.stdout == "{" and "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    proc = subprocess.run(
        f"{sys.executable} -m microcompiler.cli ops | head -1",
        shell=True,
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.stdout.count("\n") == 1
    assert proc.stderr == "", proc.stderr


# ---- control characters reach the terminal only as text ----


def test_control_characters_in_a_path_are_escaped_in_the_error(workdir):
    proc = cli("compile", "evil\x1b[2J\x1b]0;pwned\x07.tflite", "-o", "lib", cwd=workdir)
    assert_one_line_error(proc, "\\x1b[2J")
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr


def test_control_characters_in_a_custom_operator_name_are_escaped(workdir):
    import model_builder as mb

    b = mb.ModelBuilder()
    x = b.activation("x", [1, 4], "float32")
    y = b.activation("y", [1, 4], "float32")
    b.custom_op("Evil\x1b[31mOp\r\n", [x], [y])
    (workdir / "custom.tflite").write_bytes(b.finish([x], [y]))
    proc = cli("compile", "custom.tflite", "-o", "lib", cwd=workdir)
    assert_one_line_error(proc, "Evil\\x1b[31mOp")
    assert "\x1b" not in proc.stderr and "\r" not in proc.stderr


def test_a_tools_or_devices_line_is_shown_as_text():
    import io

    from microcompiler.progress import LineLog

    stream = io.StringIO()
    LineLog(stream)("device says \x1b[2J\x1bc done")
    assert stream.getvalue() == "device says \\x1b[2J\\x1bc done\n"


def test_a_signal_to_the_mlperf_runner_exits_with_128_plus_the_signal():
    """mlperf's own handler used to turn SIGTERM and SIGHUP into KeyboardInterrupt (exit 130)."""
    import os
    import signal

    from microcompiler.cleanup import Interrupted
    from microcompiler.mlperf_runner import _Children

    for signo, status in ((signal.SIGTERM, 143), (signal.SIGHUP, 129)):
        with pytest.raises(Interrupted) as info:
            with _Children():
                os.kill(os.getpid(), signo)
                signal.sigtimedwait([], 0.1) if hasattr(signal, "sigtimedwait") else None
        assert info.value.exit_status == status
