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

from microcompiler.resources import templates_dir

from test_reliability_files import BOARD, assert_one_line_error, cli, snapshot, workdir  # noqa: F401


@pytest.mark.parametrize("name", ["inj&whoami&x", "a|b", "a<b", "a>b", "a(b", "a)b", "a%b", "a*b", "a?b", "a,b",
                                  "a!b", "a\x1bb", "a\nb", "a:b"])
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
    command = text[text.index("add_custom_command"):]
    command = command[:command.index(")\n") + 1]
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

    from microcompiler.report import render_report
    from microcompiler.analysis import analyze_model
    from model_builder import ModelBuilder
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
