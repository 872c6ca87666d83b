"""What a user sees when the spatial operators refuse a model: one line naming the operator, exit
status 2, no traceback (through the CLI), or the same UnsupportedModelError in-process (faster,
for the sweeps of malformed options; the CLI turns every such error into the same one line)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from harness import compile_bytes

from microcompiler.errors import UnsupportedModelError

REPO = Path(__file__).resolve().parents[1]


def assert_cli_rejects(model_bytes: bytes, tmp_path, kind: str, message: str) -> str:
    """Compile through the CLI and check the one-line refusal naming the operator and ``message``."""
    tmp_path = Path(tmp_path)
    tmp_path.mkdir(parents=True, exist_ok=True)
    model = tmp_path / "m.tflite"
    model.write_bytes(model_bytes)
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", "compile", str(model), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(lines) == 1, proc.stderr
    assert kind in lines[0] and message in lines[0], lines[0]
    return lines[0]


def assert_rejects(model_bytes: bytes, tmp_path, kind: str, message: str, cli: bool = False) -> None:
    """The model is refused with an UnsupportedModelError naming ``kind`` and saying ``message``;
    with ``cli`` also checked end to end through the command line."""
    if cli:
        assert_cli_rejects(model_bytes, tmp_path, kind, message)
        return
    with pytest.raises(UnsupportedModelError) as info:
        compile_bytes(model_bytes, tmp_path)
    text = str(info.value)
    assert "\n" not in text and kind in text and message in text, text
