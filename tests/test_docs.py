"""Every command and code example in README.md and docs/*.md runs, so the docs cannot rot.

Fenced ```bash blocks run line by line with bash -e, and ```python blocks run with this Python,
both from the repository root. ```text blocks are illustrations and are not run. A block that needs
an external tool we cannot install here (west, for Zephyr) is skipped only when that tool is missing.
A block fenced as ```bash long (several firmware builds, minutes) is one of the long tests
(`pytest -m long tests`). The blocks run in order in one process (`--dist loadfile`): a block may use
what an earlier block of its document made.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.S | re.M)
SETUP = "bash scripts/setup-debian.sh && "


def blocks():
    for doc in DOCS:
        for n, m in enumerate(FENCE.finditer(doc.read_text())):
            lang, info, body = m.group(1), m.group(2).split(), m.group(3)
            if lang == "bash" and body.startswith(SETUP) and "pytest" in body:
                continue  # the test command itself: CI runs it via .ci/run (checked below)
            if lang in ("bash", "python"):
                marks = [pytest.mark.long] if "long" in info else []
                yield pytest.param(doc, lang, body, id=f"{doc.name}-{n}-{lang}", marks=marks)


def env():
    e = dict(os.environ)
    e["PATH"] = str(Path(sys.executable).parent) + os.pathsep + e.get("PATH", "")
    return e


@pytest.mark.parametrize("doc,lang,body", list(blocks()))
def test_doc_example_runs(doc, lang, body):
    if re.search(r"^\s*west\b", body, re.M) and shutil.which("west") is None:
        pytest.skip("needs west and a Zephyr workspace (not installable on this machine)")
    if lang == "bash":
        script = body.replace(SETUP, "")  # the set-up step is what CI itself runs first
        script = script.replace(".venv/bin/", "")  # use this interpreter's environment
        cmd = ["bash", "-e", "-c", script]
    else:
        cmd = [sys.executable, "-c", body]
    proc = subprocess.run(cmd, cwd=ROOT, env=env(), capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, (
        f"{doc.name} example failed:\n{body}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
    )


def test_readme_starts_with_the_two_setup_commands_and_ci_runs_the_test_one():
    readme = (ROOT / "README.md").read_text()
    commands = [m.group(3).strip() for m in FENCE.finditer(readme) if m.group(1) == "bash"][:2]
    assert commands[0].startswith(SETUP) and "microcompiler run" in commands[0]
    assert commands[1].startswith(SETUP) and "pytest" in commands[1]
    assert commands[1] in (ROOT / ".ci/run").read_text()
