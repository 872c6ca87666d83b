"""Never deletes or overwrites what it did not write; bad input gets one line, not a traceback.

Regression tests for issue 10 ("Data loss and writing where it must not", "Tracebacks instead of
one-line errors"). Where permissions matter the CLI runs as an unprivileged user (uid 65534 when the
tests run as root, since root ignores permissions), in a directory that user owns.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from microcompiler.codegen.model_info import TensorInfo
from microcompiler.compiler import C_KEYWORDS, MAX_NAME_LENGTH, compile_model
from microcompiler.errors import MicrocompilerError
from microcompiler.inputs import load_inputs

REPO = Path(__file__).resolve().parents[1]
NOBODY = 65534
HELLO = "tflm/hello_world_int8.tflite"
KWS = "mlperf_tiny/kws_ref_model.tflite"
BOARD = "mps2_an385"


# As root, run the CLI as uid/gid 65534 with no groups and one capability, CAP_DAC_READ_SEARCH: it may
# read everything (the Python interpreter may live in root's home) but every write is checked
# against the file modes like any user's.
UNPRIVILEGED = [
    "setpriv",
    f"--reuid={NOBODY}",
    f"--regid={NOBODY}",
    "--clear-groups",
    "--inh-caps=-all,+dac_read_search",
    "--ambient-caps=+dac_read_search",
]


def cli(*args, cwd=None, unprivileged=False, umask=None):
    """Run the CLI; ``unprivileged``: as uid 65534 when we are root, so that write permissions apply."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
    prefix = []
    if unprivileged and os.geteuid() == 0:
        prefix = UNPRIVILEGED
        env["HOME"] = str(cwd or "/tmp")
    extra = {} if umask is None else {"umask": umask}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "microcompiler.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        **extra,
    )


def test_the_unprivileged_user_cannot_write_where_the_mode_forbids(workdir):
    """The permission tests below mean something: our unprivileged CLI really is refused writes."""
    locked = workdir / "locked"
    locked.mkdir(mode=0o555)
    probe = cli("compile", "model.tflite", "-o", locked / "x", cwd=workdir, unprivileged=True)
    assert probe.returncode == 2
    if os.geteuid() == 0:
        proc = subprocess.run([*UNPRIVILEGED, "sh", "-c", f"id -u; touch {locked}/f"], capture_output=True, text=True)
        assert proc.stdout.split()[0] == str(NOBODY) and proc.returncode != 0 and not (locked / "f").exists()


def assert_one_line_error(proc, *fragments):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("microcompiler: error: ")
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file below directory with its contents (to show nothing changed)."""
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture
def workdir(shared_models):
    """A directory the unprivileged user owns (pytest's tmp_path is private to root), with a model."""
    path = Path(tempfile.mkdtemp(prefix="mc-reliability-"))
    os.chmod(path, 0o755)
    shutil.copyfile(shared_models / HELLO, path / "model.tflite")
    if os.geteuid() == 0:
        for p in [path, *path.rglob("*")]:
            os.chown(p, NOBODY, NOBODY)
    yield path
    for p in [path, *path.rglob("*")]:  # make everything removable again
        if p.is_dir() and not p.is_symlink():
            os.chmod(p, 0o755)
    shutil.rmtree(path)


# ---- compile -o: never deletes what it did not write ----


def test_compile_into_cwd_with_user_files_is_refused_and_deletes_nothing(workdir):
    (workdir / "notes.txt").write_text("my notes\n")
    (workdir / "src").mkdir()
    (workdir / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    before = snapshot(workdir)
    proc = cli("compile", "model.tflite", "-o", ".", cwd=workdir)
    assert_one_line_error(proc, "not a model library", "will not replace")
    assert snapshot(workdir) == before
    assert sorted(p.name for p in workdir.iterdir()) == ["model.tflite", "notes.txt", "src"]  # no temp dirs


def test_compile_refuses_non_empty_directory_that_is_not_a_library(workdir):
    out = workdir / "out"
    out.mkdir()
    (out / "data.bin").write_bytes(b"\x01\x02")
    proc = cli("compile", workdir / "model.tflite", "-o", out)
    assert_one_line_error(proc, str(out))
    assert snapshot(out) == {"data.bin": b"\x01\x02"}


def test_recompile_replaces_only_the_files_compile_wrote(workdir):
    out = workdir / "lib"
    assert cli("compile", workdir / "model.tflite", "-o", out).returncode == 0
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["generator"] == "microcompiler"
    assert "src/model_ops.c" in meta["files"] and "metadata.json" in meta["files"]
    assert sorted(meta["files"]) == sorted(snapshot(out))
    (out / "README.txt").write_text("how we use this model\n")
    (out / "src" / "glue.c").write_text("/* ours */\n")
    proc = cli("compile", workdir / "model.tflite", "-o", out, "--name", "renamed")
    assert proc.returncode == 0, proc.stderr
    files = set(snapshot(out))
    assert {"README.txt", "src/glue.c", "src/renamed_ops.c", "include/renamed.h"} <= files
    assert not {"src/model_ops.c", "include/model.h"} & files  # the old model's files are replaced
    assert (out / "README.txt").read_text() == "how we use this model\n"
    assert not [p for p in workdir.rglob(".microcompiler-*")]


def test_recompile_refuses_to_overwrite_a_user_file_it_would_write(workdir):
    out = workdir / "lib"
    assert cli("compile", workdir / "model.tflite", "-o", out).returncode == 0
    (out / "src" / "renamed_ops.c").write_text("/* the user's own file, not in the manifest */\n")
    before = snapshot(out)
    proc = cli("compile", workdir / "model.tflite", "-o", out, "--name", "renamed")
    assert_one_line_error(proc, "renamed_ops.c", "not written by microcompiler")
    assert snapshot(out) == before
    assert not [p for p in workdir.rglob(".microcompiler-*")]


def test_recompile_over_a_library_written_before_the_manifest(workdir):
    out = workdir / "lib"
    assert cli("compile", workdir / "model.tflite", "-o", out).returncode == 0
    meta = json.loads((out / "metadata.json").read_text())
    del meta["generator"], meta["files"]  # what today's compile wrote
    (out / "metadata.json").write_text(json.dumps(meta))
    (out / "notes.txt").write_text("keep me\n")
    assert cli("compile", workdir / "model.tflite", "-o", out, "--name", "again").returncode == 0
    files = set(snapshot(out))
    assert "notes.txt" in files and "src/again_ops.c" in files and "src/model_ops.c" not in files


def test_compile_into_empty_cwd_keeps_the_directory_itself(workdir):
    out = workdir / "here"
    out.mkdir()
    inode = out.stat().st_ino
    proc = cli("compile", workdir / "model.tflite", "-o", ".", cwd=out)
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_ino == inode  # not replaced by another directory (the shell's cwd stays valid)
    assert (out / "src" / "model_ops.c").is_file()


@pytest.mark.parametrize("umask, mode", [(0o022, 0o755), (0o027, 0o750)])
def test_output_directory_mode_follows_the_umask(workdir, umask, mode):
    out = workdir / "lib"
    assert cli("compile", workdir / "model.tflite", "-o", out, umask=umask).returncode == 0
    assert out.stat().st_mode & 0o777 == mode
    assert (out / "src").stat().st_mode & 0o777 == mode
    assert (out / "metadata.json").stat().st_mode & 0o777 == mode & 0o666
    proj = workdir / "proj"
    assert cli("create-project", workdir / "model.tflite", "--board", BOARD, "-o", proj, umask=umask).returncode == 0
    assert proj.stat().st_mode & 0o777 == mode and (proj / "crt").stat().st_mode & 0o777 == mode


@pytest.mark.parametrize("read_only", [".", "src"])
def test_read_only_output_directory_is_refused_and_old_output_intact(workdir, read_only):
    out = workdir / "lib"
    assert cli("compile", "model.tflite", "-o", out, cwd=workdir, unprivileged=True).returncode == 0
    before = snapshot(out)
    os.chmod(out / read_only, 0o555)
    proc = cli("compile", "model.tflite", "-o", out, "--name", "other", cwd=workdir, unprivileged=True)
    assert_one_line_error(proc, str(out))
    assert snapshot(out) == before
    assert not [p for p in workdir.rglob(".microcompiler-*")]


def test_output_path_that_is_a_file_or_under_a_file(workdir):
    note = workdir / "note.txt"
    note.write_text("precious\n")
    assert_one_line_error(cli("compile", workdir / "model.tflite", "-o", note), "is an existing file")
    assert_one_line_error(cli("compile", workdir / "model.tflite", "-o", note / "out"), "is a file")
    assert_one_line_error(
        cli("create-project", workdir / "model.tflite", "--board", BOARD, "-o", note / "p"), "is a file"
    )
    assert note.read_text() == "precious\n"


def test_output_path_too_long_or_through_a_symlink_loop(workdir):
    (workdir / "loop1").symlink_to("loop2")
    (workdir / "loop2").symlink_to("loop1")
    for path in (workdir / ("x" * 300), workdir / "loop1" / "out"):
        assert_one_line_error(cli("compile", workdir / "model.tflite", "-o", path), str(path))
        assert_one_line_error(cli("create-project", workdir / "model.tflite", "--board", BOARD, "-o", path))
    assert_one_line_error(cli("build", workdir / ("x" * 300)))
    assert_one_line_error(cli("build", workdir / "loop1"))


def test_no_write_permission_for_the_output_directory(workdir):
    locked = workdir / "locked"
    locked.mkdir()
    os.chmod(locked, 0o555)
    if os.geteuid() == 0:
        os.chown(locked, NOBODY, NOBODY)
    for args in (
        ["compile", "model.tflite", "-o", locked / "lib"],
        ["create-project", "model.tflite", "--board", BOARD, "-o", locked / "proj"],
        ["run", "model.tflite", "--board", BOARD, "--keep", locked / "proj"],
        ["bench", "model.tflite", "--keep", locked / "proj"],
    ):
        proc = cli(*args, cwd=workdir, unprivileged=True)
        assert_one_line_error(proc, "permission")
    assert list(locked.iterdir()) == []


# ---- --name ----


@pytest.mark.parametrize("name", ["../../../ESCAPED", "1 bad;name", "a" * 300, "int", "", "_x", "x-y"])
def test_invalid_name_is_refused_in_one_line_and_writes_nothing(workdir, name):
    out = workdir / "a" / "b" / "out"
    proc = cli("compile", workdir / "model.tflite", "-o", out, "--name", name)
    assert_one_line_error(proc, "--name")
    assert sorted(p.relative_to(workdir).as_posix() for p in workdir.rglob("*")) == ["model.tflite"]


def test_longest_valid_name_compiles(workdir):
    name = "n" * MAX_NAME_LENGTH
    proc = cli("compile", workdir / "model.tflite", "-o", workdir / "out", "--name", name)
    assert proc.returncode == 0, proc.stderr
    assert (workdir / "out" / "src" / f"{name}_ops.c").is_file()


@pytest.mark.parametrize("file_name", ["int.tflite", "9-lives.tflite", "x" * 248 + ".tflite", "mc.tflite"])
def test_name_derived_from_any_file_name_is_a_valid_c_name(workdir, shared_models, file_name):
    model = workdir / file_name
    shutil.copyfile(shared_models / HELLO, model)
    name = compile_model(model).metadata["name"]
    assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name) and len(name) <= MAX_NAME_LENGTH
    assert name not in C_KEYWORDS and name.lower() != "mc"
    proc = cli("run", model, "--board", "host", "--json")  # the C it names builds and runs
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["model"] == name


# ---- projects ----


def test_create_project_over_a_project_keeps_the_users_files(workdir):
    proj = workdir / "proj"
    assert cli("create-project", workdir / "model.tflite", "--board", BOARD, "-o", proj).returncode == 0
    (proj / "NOTES.md").write_text("flashing notes\n")
    (proj / ".git").mkdir()
    (proj / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (proj / "build").mkdir()
    (proj / "build" / "stale.o").write_bytes(b"old")
    proc = cli("create-project", "../model.tflite", "--board", BOARD, "-o", ".", cwd=proj)
    assert proc.returncode == 0, proc.stderr
    assert (proj / "NOTES.md").read_text() == "flashing notes\n"
    assert (proj / ".git" / "HEAD").is_file()
    assert not (proj / "build").exists()  # the build directory is ours: replaced with the project
    info = json.loads((proj / "microcompiler-project.json").read_text())
    assert "src/main.c" in info["files"] and "NOTES.md" not in info["files"]


def test_create_project_refuses_a_directory_with_other_files(workdir):
    before = snapshot(workdir)
    proc = cli("create-project", "model.tflite", "--board", BOARD, "-o", ".", cwd=workdir)
    assert_one_line_error(proc, "not a microcompiler project")
    assert snapshot(workdir) == before


@pytest.mark.parametrize("char", [";", "$", "'", '"', "#", "\\"])
def test_project_path_with_shell_or_cmake_characters_is_refused(workdir, char):
    out = workdir / f"pro{char}ject"
    proc = cli("create-project", workdir / "model.tflite", "--board", BOARD, "-o", out)
    assert_one_line_error(proc, "project directory", repr(char))
    assert not out.exists()
    assert sorted(p.name for p in workdir.iterdir()) == ["model.tflite"]


def test_build_hint_is_quoted_for_the_shell(workdir):
    proc = cli("create-project", "model.tflite", "--board", BOARD, "-o", "my project", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert "microcompiler build 'my project'" in proc.stdout
    proc = cli("flash", "my project", cwd=workdir)  # not built yet: the hint is quoted too
    assert_one_line_error(proc, f"microcompiler build '{workdir / 'my project'}'")


@pytest.mark.parametrize("content", ["garbage{", "{}", "[]", '{"model": 1, "board": "x", "template": "baremetal"}', ""])
def test_damaged_project_file_gives_one_line_error(workdir, content):
    proj = workdir / "proj"
    assert cli("create-project", workdir / "model.tflite", "--board", BOARD, "-o", proj).returncode == 0
    (proj / "microcompiler-project.json").write_text(content)
    for command in ("build", "flash"):
        assert_one_line_error(cli(command, proj), "microcompiler-project.json", "create-project")


def test_project_directory_without_write_permission_gives_one_line_error(workdir):
    proj = workdir / "proj"
    assert cli("create-project", workdir / "model.tflite", "--board", BOARD, "-o", proj).returncode == 0
    for p in [proj, *proj.rglob("*")]:  # the unprivileged user may read the project, not write it
        if p.is_dir():
            os.chmod(p, 0o555)
    proc = cli("build", proj, unprivileged=True)
    assert_one_line_error(proc, "no write permission")


def test_copied_project_builds_its_own_sources(workdir):
    proj1 = workdir / "proj1"
    assert cli("create-project", workdir / "model.tflite", "--board", BOARD, "-o", proj1).returncode == 0
    assert cli("build", proj1).returncode == 0
    copy = workdir / "copy"
    shutil.copytree(proj1, copy, symlinks=True)
    main_c = copy / "src" / "main.c"
    original = main_c.read_text()
    main_c.write_text("#error COPY_WAS_BUILT\n" + original)
    proc = cli("build", copy)
    assert proc.returncode == 2 and "COPY_WAS_BUILT" in proc.stderr, proc.stdout + proc.stderr
    main_c.write_text(original)
    proc = cli("build", copy)
    assert proc.returncode == 0, proc.stderr
    ninja = (copy / "build" / "build.ninja").read_text()
    assert str(copy / "src" / "main.c") in ninja and str(proj1) not in ninja
    assert cli("build", proj1).returncode == 0  # the original still builds itself


def test_build_refuses_a_foreign_cmake_cache(workdir):
    proj = workdir / "proj"
    assert cli("create-project", workdir / "model.tflite", "--board", BOARD, "-o", proj).returncode == 0
    (proj / "build").mkdir()
    cache = "CMAKE_HOME_DIRECTORY:INTERNAL=/somewhere/else\nCMAKE_PROJECT_NAME:STATIC=other_project\n"
    (proj / "build" / "CMakeCache.txt").write_text(cache)
    assert_one_line_error(cli("build", proj), "/somewhere/else", "not of this project")
    assert (proj / "build" / "CMakeCache.txt").read_text() == cache  # not ours: left alone


# ---- inputs ----


def write_npy_variants(directory: Path) -> dict[str, Path]:
    paths = {"empty": directory / "empty.npy", "npz": directory / "x.npz", "text": directory / "text.npy"}
    paths["empty"].write_bytes(b"")
    np.savez(paths["npz"], a=np.zeros((1, 1), np.int8), b=np.zeros(3))
    paths["text"].write_text("1 2 3\n")
    return paths


@pytest.mark.parametrize("kind, fragment", [("empty", "empty"), ("npz", ".npz"), ("text", "not a valid .npy")])
def test_bad_input_file_gives_one_line_error(workdir, kind, fragment):
    path = write_npy_variants(workdir)[kind]
    assert_one_line_error(cli("run", workdir / "model.tflite", "--input", path), fragment)


def test_input_of_the_right_size_but_wrong_shape_is_refused(workdir, shared_models):
    wrong = workdir / "wrong.npy"
    np.save(wrong, np.zeros((1, 10, 49, 1), np.int8))  # the model needs [1, 49, 10, 1]
    assert_one_line_error(cli("run", shared_models / KWS, "--input", wrong), "[1, 10, 49, 1]", "[1, 49, 10, 1]")


def test_input_shapes_may_differ_only_in_leading_ones(tmp_path):
    meta = [TensorInfo("x", "x", (1, 49, 10, 1), "int8", 490)]
    data = np.arange(490, dtype=np.int8).reshape(49, 10, 1)
    for shape in [(49, 10, 1), (1, 49, 10, 1), (1, 1, 49, 10, 1)]:
        np.save(tmp_path / "x.npy", data.reshape(shape))
        (arr,) = load_inputs([str(tmp_path / "x.npy")], meta)
        assert arr.shape == (1, 49, 10, 1) and np.array_equal(arr.reshape(49, 10, 1), data)
    for shape in [(1, 10, 49, 1), (490,), (49, 10), (1, 49, 10, 1, 1)]:
        np.save(tmp_path / "x.npy", data.reshape(shape))
        with pytest.raises(MicrocompilerError, match="shape"):
            load_inputs([str(tmp_path / "x.npy")], meta)


def test_create_project_refuses_an_array_of_the_wrong_shape(workdir, shared_models):
    from microcompiler.project import create_project

    with pytest.raises(MicrocompilerError, match=r"\[1, 49, 10, 1\]"):
        create_project(
            shared_models / KWS, "baremetal", BOARD, workdir / "p", input=[np.zeros((1, 10, 49, 1), np.int8)]
        )
    assert not (workdir / "p").exists()


# ---- bench and the Python API ----


def test_bench_number_above_the_device_limit_names_the_limit(workdir):
    proc = cli("bench", workdir / "model.tflite", "--number", 4294967296)
    assert_one_line_error(proc, "4294967296", "1,000,000")


def test_bench_limit_matches_the_runtime_header():
    from microcompiler.commands.bench import DEVICE_MAX_TIMED_RUNS

    header = (REPO / "crt" / "include" / "microcompiler" / "rpc_server.h").read_text()
    assert re.search(r"#define MC_RPC_MAX_TIMED_RUNS (\d+)u", header).group(1) == str(DEVICE_MAX_TIMED_RUNS)


def test_open_model_with_a_file_as_project_dir_raises_our_error(workdir):
    from microcompiler.api import open_model

    note = workdir / "note.txt"
    note.write_text("precious\n")
    with pytest.raises(MicrocompilerError, match="is an existing file") as info:
        open_model(workdir / "model.tflite", project_dir=note)
    assert "\n" not in str(info.value)
    assert note.read_text() == "precious\n"
    theirs = workdir / "theirs"
    theirs.mkdir()
    (theirs / "rpc_main.c").write_text("/* someone else's */\n")
    with pytest.raises(MicrocompilerError, match="not a host RPC project"):
        open_model(workdir / "model.tflite", project_dir=theirs)
    assert snapshot(theirs) == {"rpc_main.c": b"/* someone else's */\n"}


def test_reliability_doc_names_only_tests_that_exist():
    doc = (REPO / "docs" / "reliability.md").read_text()
    named = set(re.findall(r"`(test_\w+)`", doc))
    defined = set()
    for path in (REPO / "tests").rglob("test_*.py"):
        defined |= set(re.findall(r"^def (test_\w+)", path.read_text(), re.MULTILINE))
    assert len(named) > 20
    assert named <= defined, sorted(named - defined)


# ---- the swap itself (microcompiler/outdir.py), with renames made to fail ----


def failing_rename(monkeypatch, fail_at: set[int]):
    """Make the n-th os.rename calls of microcompiler.outdir raise EIO (counting from 1)."""
    import microcompiler.outdir as outdir

    real, calls = os.rename, []

    def rename(src, dst):
        calls.append((src, dst))
        if len(calls) in fail_at:
            raise OSError(5, "Input/output error")
        return real(src, dst)

    monkeypatch.setattr(outdir.os, "rename", rename)
    return calls


@pytest.mark.parametrize("fail_at", [1, 5, 13, 20])
def test_a_failed_swap_puts_the_previous_library_back(tmp_path, shared_models, monkeypatch, fail_at):
    from microcompiler.compiler import write_atomically

    out = tmp_path / "lib"
    write_atomically(compile_model(shared_models / HELLO, name="old"), out)
    (out / "notes.txt").write_text("mine\n")
    before = snapshot(out)
    calls = failing_rename(monkeypatch, {fail_at})
    with pytest.raises(MicrocompilerError, match="previous contents are unchanged"):
        write_atomically(compile_model(shared_models / HELLO, name="new"), out)
    assert len(calls) >= fail_at  # the failure happened inside the swap
    assert snapshot(out) == before
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []


def test_a_swap_whose_undo_fails_keeps_the_previous_files_and_says_where(tmp_path, shared_models, monkeypatch):
    from microcompiler.compiler import write_atomically

    out = tmp_path / "lib"
    write_atomically(compile_model(shared_models / HELLO, name="old"), out)
    before = snapshot(out)
    failing_rename(monkeypatch, set(range(13, 100)))  # 11 old files move out, then everything fails
    with pytest.raises(MicrocompilerError, match=r"could not be put back and are in \S+\.microcompiler-old-") as info:
        write_atomically(compile_model(shared_models / HELLO, name="new"), out)
    backup = Path(re.search(r"are in (\S+)$", str(info.value)).group(1))
    kept = {**snapshot(out), **{k: v for k, v in snapshot(backup).items()}}
    assert {k: kept[k] for k in before} == before  # every previous file still exists, in place or in the backup


def test_run_on_the_host_refuses_keep_instead_of_ignoring_it(workdir):
    keep = workdir / "kept"
    assert_one_line_error(cli("run", workdir / "model.tflite", "--keep", keep), "--keep", "compile")
    assert not keep.exists()
