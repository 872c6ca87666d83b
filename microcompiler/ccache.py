"""ccache for the builds microcompiler runs: firmware (CMake's compiler launcher, Zephyr's own use of
ccache) and host programs (each runtime source compiled on its own through ccache). Used when ccache
is installed and can write its cache; ``CCACHE_DISABLE=1`` (ccache's own switch) turns it off.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def ccache_environment(project_dir: Path, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a build that goes through ccache (Zephyr's when ccache is installed, the
    bare-metal template's through ``compiler_launcher``), so that a project reuses what another
    project built for the same board and flags: the runtime's objects, Zephyr's kernel and C library.

    Each project's own directory appears in every compile command (``-I<project>/crt/include``,
    ``-imacros <build>/.../autoconf.h``); CCACHE_BASEDIR makes the paths under the project relative,
    and CCACHE_NOHASHDIR leaves the compiler's working directory (the build directory) out of the
    hash that ``-g`` puts it in. The debug information then names the directory of the build that
    filled the cache. A user's own CCACHE_BASEDIR / CCACHE_NOHASHDIR win, and CCACHE_DISABLE=1 turns
    ccache off (docs/zephyr.md, "Build time: ccache").
    """
    env = dict(os.environ if environ is None else environ)
    env.setdefault("CCACHE_BASEDIR", str(Path(project_dir).resolve()))
    env.setdefault("CCACHE_NOHASHDIR", "true")
    return env


def launcher() -> list[str]:
    """``[ccache]`` to put before a compile command when ccache is installed and can write its
    cache, else ``[]``; checked once per process and cache location."""
    where = tuple(os.environ.get(v) for v in ("CCACHE_DIR", "CCACHE_CONFIGPATH", "XDG_CACHE_HOME", "HOME"))
    if where not in _launchers:
        path = shutil.which("ccache")
        _launchers[where] = [path] if path is not None and _cache_is_writable(path) else []
    return list(_launchers[where])


_launchers: dict[tuple, list[str]] = {}


def compiler_launcher() -> list[str]:
    """CMake's ``-DCMAKE_C_COMPILER_LAUNCHER=...`` for ccache when it is installed and can write its
    cache (as Zephyr's build uses it on its own), else nothing: a cache directory that cannot be
    created would fail every compile."""
    path = launcher()
    return [f"-DCMAKE_C_COMPILER_LAUNCHER={path[0]}"] if path else []


def _cache_is_writable(ccache: str) -> bool:
    try:
        proc = subprocess.run(
            [ccache, "--get-config", "cache_dir"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    if proc.returncode != 0 or not proc.stdout.strip():
        return False
    directory = Path(proc.stdout.strip())
    while not directory.exists():  # the nearest existing folder is where ccache creates it
        if directory.parent == directory:
            return False
        directory = directory.parent
    return directory.is_dir() and os.access(directory, os.W_OK | os.X_OK)
