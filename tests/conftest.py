import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SHARED_MODELS = ROOT.parent / "shared" / "models"
SHARED_ZEPHYR_SETUP = ROOT.parent / "shared" / "zephyr" / "setup-workspace.sh"
sys.path.insert(0, str(TESTS))


def use_the_shared_zephyr_workspace() -> None:
    """The Zephyr tests build for real with the Zephyr 3.7.1 workspace of ../shared/zephyr (which
    scripts/setup-debian.sh unpacks; docs/zephyr.md): west from this Python's environment on PATH,
    ZEPHYR_BASE and the toolchain variables as its setup-workspace.sh prints them. A ZEPHYR_BASE
    already set (your own workspace) is kept. Runs before the test files are imported, so their
    "needs west / ZEPHYR_BASE" conditions see the result."""
    venv_bin = Path(sys.executable).parent  # not resolved: a venv's python is a symlink
    if shutil.which("west") is None and (venv_bin / "west").is_file():
        os.environ["PATH"] = f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}"
    if os.environ.get("ZEPHYR_BASE") or not SHARED_ZEPHYR_SETUP.is_file() or shutil.which("west") is None:
        return
    lock_path = Path.home() / ".cache" / "microcompiler-zephyr-workspace.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as lock:  # xdist's workers import this too: one unpacks, the others wait
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.run(["bash", str(SHARED_ZEPHYR_SETUP)], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"{SHARED_ZEPHYR_SETUP} failed:\n{proc.stdout}{proc.stderr}")
    for line in proc.stdout.splitlines():
        if line.startswith("export "):
            for assignment in line[len("export ") :].split():
                name, _, value = assignment.partition("=")
                os.environ[name] = value


use_the_shared_zephyr_workspace()


def pytest_configure(config) -> None:
    """The package's bytecode, compiled once before the tests start: hundreds of tests run the CLI in
    a new Python process, and where PYTHONDONTWRITEBYTECODE is set (as in some CI images) each of
    them would compile the ~170 modules it imports from source again (about 0.3 s of CPU a call).
    Python reads existing .pyc files either way; only the controller compiles (not xdist's workers)."""
    if not hasattr(config, "workerinput"):
        import compileall

        compileall.compile_dir(str(ROOT / "microcompiler"), quiet=1, workers=1)


@pytest.fixture(scope="session")
def shared_models() -> Path:
    if not SHARED_MODELS.is_dir():
        pytest.fail(f"the shared models are missing: expected {SHARED_MODELS} (a checkout of ../shared)")
    return SHARED_MODELS
