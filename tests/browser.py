"""Open a local HTML file in headless Chromium (Debian package): a screenshot, the DOM, console errors."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="needs Debian's chromium package (apt-get install chromium)"
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
]
TIMEOUT = 90


def _chromium(args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    profile = tmp / "chromium-profile"
    profile.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=TIMEOUT
    )


def console_errors(stderr: str) -> list[str]:
    """The page's own console messages and script errors (not Chromium's noise about D-Bus or GPUs)."""
    return [line for line in stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]


def render(page: Path, tmp: Path, size=(1100, 2400)) -> tuple[Path, str, list[str]]:
    """(screenshot PNG, DOM after load, console errors of both runs)."""
    shot = tmp / f"{page.stem}.png"
    url = page.resolve().as_uri()
    a = _chromium([f"--screenshot={shot}", f"--window-size={size[0]},{size[1]}", url], tmp)
    b = _chromium(["--dump-dom", url], tmp)
    assert shot.is_file(), f"Chromium made no screenshot: {a.stderr[-2000:]}"
    return shot, b.stdout, console_errors(a.stderr) + console_errors(b.stderr)
