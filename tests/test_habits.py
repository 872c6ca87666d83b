"""The project's habits that a test can hold: one version, written once and printed by the CLI, with a
CHANGELOG entry; the linter and the type checker configured where CI runs them."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import microcompiler

ROOT = Path(__file__).resolve().parents[1]


def test_the_version_is_written_once_and_pyproject_reads_it():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "microcompiler.version.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", microcompiler.__version__)


def test_the_cli_prints_the_version():
    proc = subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", "--version"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and proc.stdout.strip() == f"microcompiler {microcompiler.__version__}"


def test_the_changelog_has_an_entry_for_the_version():
    headings = re.findall(r"^## \[([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert headings[0] == "Unreleased" and microcompiler.__version__ in headings, headings


def test_ci_runs_the_linter_and_the_type_checker():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "ruff check" in ci and "ruff format --check" in ci and "mypy" in ci
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert {"ruff", "mypy"} <= {re.split(r"[=<>]", r)[0] for r in project["project"]["optional-dependencies"]["test"]}
    assert project["tool"]["ruff"]["lint"]["select"] and project["tool"]["mypy"]["files"] == ["microcompiler"]
