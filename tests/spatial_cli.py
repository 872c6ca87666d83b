"""What a user sees when the spatial operators refuse a model: one line on stderr, exit status 2."""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def assert_cli_rejects(model_bytes: bytes, tmp_path, kind: str, message: str) -> str:
    """Compile through the CLI and check the one-line refusal naming the operator and ``message``."""
    tmp_path = Path(tmp_path)
    tmp_path.mkdir(parents=True, exist_ok=True)
    model = tmp_path / "m.tflite"
    model.write_bytes(model_bytes)
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "microcompiler.cli", "compile", str(model), "-o",
                           str(tmp_path / "out")], capture_output=True, text=True, env=env, cwd=REPO)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(lines) == 1, proc.stderr
    assert kind in lines[0] and message in lines[0], lines[0]
    return lines[0]
