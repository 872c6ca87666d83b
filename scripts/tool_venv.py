"""Run a model-making script under a virtual environment of its own (the tools it needs are not test
dependencies): ``ensure_venv`` returns at once when ``modules`` import here, otherwise it creates the venv
(if needed), installs ``requirements`` from the package registry into it and re-runs the script there,
exiting with its exit code. scripts/keras_lookalikes.py, onnx_models.py and torch_models.py use it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import venv
from pathlib import Path


def ensure_venv(venv_dir: Path, requirements: list[str], modules: list[str], script: str, env: dict | None = None):
    if all(importlib.util.find_spec(m) for m in modules):
        return
    python = venv_dir / "bin" / "python"
    if not python.exists():
        print(f"creating {venv_dir} with {' '.join(requirements)} (a few minutes)", file=sys.stderr)
        venv.create(venv_dir, with_pip=True)
    if subprocess.run([str(python), "-c", f"import {', '.join(modules)}"], capture_output=True).returncode != 0:
        subprocess.run([str(python), "-m", "pip", "install", "-q", *requirements], check=True)
    environment = dict(os.environ, **(env or {}))
    sys.exit(subprocess.run([str(python), str(Path(script).resolve()), *sys.argv[1:]], env=environment).returncode)
