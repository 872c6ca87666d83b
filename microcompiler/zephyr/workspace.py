"""Finding the Zephyr workspace and the toolchain to build with, so that ``microcompiler build`` works
without exports (docs/zephyr.md, "Where microcompiler finds Zephyr").

The workspace (its ``zephyr`` folder, ZEPHYR_BASE) is, in this order:

1. the one a command names (``--zephyr-base DIR``, or the one a project recorded at create-project);
2. ``$ZEPHYR_BASE``;
3. the one scripts/setup-debian.sh made, recorded in ``$MICROCOMPILER_CONFIG_DIR/zephyr-base``
   (default ``${XDG_CONFIG_HOME:-~/.config}/microcompiler/zephyr-base``), one path on one line.

The toolchain: ``$ZEPHYR_TOOLCHAIN_VARIANT`` when it is set; else the Zephyr SDK when one is
installed (``$ZEPHYR_SDK_INSTALL_DIR`` or the places Zephyr's CMake package looks); else Debian's
``arm-none-eabi-gcc`` as Zephyr's ``gnuarmemb`` toolchain. Each missing piece is one line that says
what to install.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from microcompiler.errors import ToolchainError

DOCS = "docs/zephyr.md"
MIN_ZEPHYR = (3, 7)  # hardware model v2 board targets (mps2/an385, nrf5340dk/nrf5340/cpuapp, ...)
CONFIG_DIR_VARIABLE = "MICROCOMPILER_CONFIG_DIR"
RECORD_NAME = "zephyr-base"
SDK_GLOBS = (
    "~/zephyr-sdk-*",
    "~/.local/zephyr-sdk-*",
    "~/.local/opt/zephyr-sdk-*",
    "~/bin/zephyr-sdk-*",
    "/opt/zephyr-sdk-*",
    "/usr/zephyr-sdk-*",
    "/usr/local/zephyr-sdk-*",
)
GNU_ARM_COMPILER = "arm-none-eabi-gcc"


class ZephyrBaseError(ToolchainError):
    """No Zephyr workspace was found, or the one named is not a Zephyr tree."""


class WestNotFoundError(ToolchainError):
    """west is not installed."""


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get(CONFIG_DIR_VARIABLE):
        return Path(env[CONFIG_DIR_VARIABLE]).expanduser()
    xdg = env.get("XDG_CONFIG_HOME") or str(Path("~/.config").expanduser())
    return Path(xdg) / "microcompiler"


def record_file(environ: Mapping[str, str] | None = None) -> Path:
    return config_dir(environ) / RECORD_NAME


def recorded_base(environ: Mapping[str, str] | None = None) -> Path | None:
    """The workspace the set-up recorded, or None (no record, or an unreadable one)."""
    try:
        text = record_file(environ).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return Path(text).expanduser() if text and "\n" not in text else None


def record_base(base: str | Path, environ: dict[str, str] | None = None) -> Path:
    """Remember ``base`` (a Zephyr tree) as the workspace to use when nothing else names one."""
    tree = check_tree(Path(base).expanduser().resolve(), "the workspace to record")
    path = record_file(environ)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f"{tree}\n", encoding="utf-8")
    tmp.replace(path)
    return path


def check_tree(base: Path, where: str) -> Path:
    if not (base / "VERSION").is_file() or not (base / "cmake").is_dir():
        raise ZephyrBaseError(
            f"{where} ({base}) is not a Zephyr tree (no VERSION file and cmake folder); give the "
            f"zephyr folder of a west workspace: see {DOCS}"
        )
    return base


def zephyr_base(explicit: str | Path | None = None, environ: dict[str, str] | None = None) -> Path:
    """The Zephyr tree to build with (the module docstring says where it is looked for)."""
    env = os.environ if environ is None else environ
    if explicit:
        return check_tree(Path(explicit).expanduser().resolve(), "--zephyr-base")
    if env.get("ZEPHYR_BASE"):
        return check_tree(Path(env["ZEPHYR_BASE"]).expanduser().resolve(), "ZEPHYR_BASE")
    recorded = recorded_base(env)
    if recorded is not None:
        return check_tree(recorded, f"the workspace recorded in {record_file(env)}")
    raise ZephyrBaseError(
        "no Zephyr workspace found: ZEPHYR_BASE is not set and none was recorded; run "
        "scripts/setup-debian.sh (beside ../shared/zephyr), or give --zephyr-base "
        f"<workspace>/zephyr, or export ZEPHYR_BASE: see {DOCS}"
    )


def zephyr_version(base: Path) -> tuple[int, int]:
    text = (base / "VERSION").read_text(errors="replace")
    fields = dict(re.findall(r"^\s*(VERSION_MAJOR|VERSION_MINOR)\s*=\s*(\d+)", text, re.M))
    if len(fields) != 2:
        raise ZephyrBaseError(f"cannot read the Zephyr version from {base / 'VERSION'}: see {DOCS}")
    return int(fields["VERSION_MAJOR"]), int(fields["VERSION_MINOR"])


def check_version(base: Path) -> tuple[int, int]:
    version = zephyr_version(base)
    if version < MIN_ZEPHYR:
        raise ZephyrBaseError(
            f"Zephyr {version[0]}.{version[1]} at {base} is too old; microcompiler needs Zephyr "
            f"{MIN_ZEPHYR[0]}.{MIN_ZEPHYR[1]} LTS or newer (hardware model v2 board names): see {DOCS}"
        )
    return version


def require_west() -> str:
    west = shutil.which("west")
    if west is None:
        raise WestNotFoundError(f"'west' is not on PATH; install it with: pip install west (see {DOCS})")
    return west


def require_build_tools() -> None:
    """cmake, ninja and dtc, which every Zephyr build runs: one line naming what is missing."""
    missing = [tool for tool in ("cmake", "ninja", "dtc") if shutil.which(tool) is None]
    if missing:
        packages = {"cmake": "cmake", "ninja": "ninja-build", "dtc": "device-tree-compiler"}
        raise ToolchainError(
            f"{', '.join(missing)} not on PATH; Zephyr's build needs them: "
            f"sudo apt-get install {' '.join(packages[t] for t in missing)}"
        )


def find_sdk(environ: dict[str, str] | None = None) -> Path | None:
    env = os.environ if environ is None else environ
    if env.get("ZEPHYR_SDK_INSTALL_DIR"):
        return Path(env["ZEPHYR_SDK_INSTALL_DIR"]).expanduser()
    for pattern in SDK_GLOBS:
        expanded = Path(pattern).expanduser()
        for candidate in sorted(expanded.parent.glob(expanded.name), reverse=True):
            if (candidate / "sdk_version").is_file():
                return candidate
    return None


def toolchain_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The toolchain variables for a Zephyr build, added to a copy of ``environ``: what the user set
    wins; else the Zephyr SDK if installed; else Debian's arm-none-eabi-gcc as ``gnuarmemb``."""
    env = dict(os.environ if environ is None else environ)
    if env.get("ZEPHYR_TOOLCHAIN_VARIANT"):
        if env["ZEPHYR_TOOLCHAIN_VARIANT"] == "gnuarmemb" and not env.get("GNUARMEMB_TOOLCHAIN_PATH"):
            env["GNUARMEMB_TOOLCHAIN_PATH"] = gnu_arm_prefix(env)
        return env
    sdk = find_sdk(env)
    if sdk is not None:
        env["ZEPHYR_TOOLCHAIN_VARIANT"] = "zephyr"
        env.setdefault("ZEPHYR_SDK_INSTALL_DIR", str(sdk))
        return env
    env["ZEPHYR_TOOLCHAIN_VARIANT"] = "gnuarmemb"
    env["GNUARMEMB_TOOLCHAIN_PATH"] = gnu_arm_prefix(env)
    return env


def gnu_arm_prefix(environ: dict[str, str]) -> str:
    """The install prefix of arm-none-eabi-gcc (``/usr`` for Debian's): GNUARMEMB_TOOLCHAIN_PATH."""
    compiler = shutil.which(GNU_ARM_COMPILER, path=environ.get("PATH"))
    if compiler is None:
        raise ToolchainError(
            f"no toolchain for Zephyr: neither the Zephyr SDK nor {GNU_ARM_COMPILER} was found; "
            "install Debian's: sudo apt-get install gcc-arm-none-eabi (or the Zephyr SDK)"
        )
    return str(Path(compiler).resolve().parent.parent)


def build_environment(base: Path, environ: dict[str, str] | None = None) -> dict[str, str]:
    """Everything a ``west build`` in this workspace needs: ZEPHYR_BASE and the toolchain."""
    env = toolchain_environment(environ)
    env["ZEPHYR_BASE"] = str(base)
    return env
