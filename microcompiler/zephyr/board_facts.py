"""What a Zephyr board target is, read from the Zephyr workspace itself (docs/zephyr.md, "Any Zephyr
board").

``describe(target, base)`` configures a minimal application for the target with Zephyr's own CMake
(``cmake -GNinja -S app -B build -DBOARD=<target>``: Kconfig and the devicetree, no compiling) and
reads what that made: ``zephyr/.config`` (the core, its FPU, DSP and Helium, flash and RAM, the
system clock), ``zephyr/zephyr.dts`` (the chosen nodes: entropy, the CPU's clock),
``zephyr/runners.yaml`` (the default flash runner) and ``build.ninja`` (the QEMU machine of
``run_qemu``, emulated boards). A configure takes some seconds, so the result is cached as JSON per
workspace and target (``${XDG_CACHE_HOME:-~/.cache}/microcompiler/zephyr-boards/``); a damaged cache
entry is made again, never trusted.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from microcompiler import cleanup
from microcompiler.errors import BoardError
from microcompiler.zephyr import hardware, workspace

CACHE_FORMAT = 2  # bump when the description's fields or their meaning change (2: QEMU's clocks)
CONFIGURE_TIMEOUT = 300.0  # seconds; a configure takes ~5-20 s
FAST_LIBC = "-DCONFIG_MINIMAL_LIBC=y"  # for the describe configure only (configure())
CORES = (
    "cortex-m0",
    "cortex-m0plus",
    "cortex-m1",
    "cortex-m3",
    "cortex-m4",
    "cortex-m7",
    "cortex-m23",
    "cortex-m33",
    "cortex-m35p",
    "cortex-m52",
    "cortex-m55",
    "cortex-m85",
)
# Kconfig symbol of each core (CONFIG_CPU_CORTEX_M4, CONFIG_CPU_CORTEX_M0PLUS, ...)
CORE_SYMBOLS = {f"CPU_CORTEX_M{c[len('cortex-m') :].upper()}": c for c in CORES}
DSP_CORES = ("cortex-m4", "cortex-m7")  # Armv7E-M: the DSP extension is part of the core
ARCH_SYMBOLS = ("ARM64", "RISCV", "XTENSA", "X86", "ARC", "NIOS2", "SPARC", "MIPS", "POSIX", "ARM")

# The CPU clock QEMU 7.2 gives each machine Zephyr emulates a board with: an emulated board runs at
# QEMU's clock, not at its devicetree's or Kconfig's (qemu_cortex_m0's devicetree gives none, and its
# SYS_CLOCK_HW_CYCLES_PER_SEC is the 1 MHz of the nRF TIMER it ticks with; Zephyr's mps2/an521 says
# 25 MHz, QEMU's SSE-200 runs at 20 MHz). From QEMU's hw/arm sources: nrf51_soc.c HCLK_FRQ,
# mps2.c and mps2-tz.c sysclk_frq.
QEMU_CPU_CLOCKS = {
    "microbit": 16_000_000,  # the nRF51822's 16 MHz HCLK
    "mps2-an385": 25_000_000,
    "mps2-an386": 25_000_000,
    "mps2-an500": 25_000_000,
    "mps2-an511": 25_000_000,
    "mps2-an505": 20_000_000,
    "mps2-an521": 20_000_000,
    "mps3-an524": 32_000_000,
    "mps3-an547": 32_000_000,
}

# The vendor HAL module each SoC vendor folder (soc/<vendor>/) needs, as west.yml names it.
VENDOR_HALS = {
    "adi": "hal_adi",
    "ambiq": "hal_ambiq",
    "atmel": "hal_atmel",
    "cypress": "hal_infineon",
    "espressif": "hal_espressif",
    "gd": "hal_gigadevice",
    "infineon": "hal_infineon",
    "microchip": "hal_microchip",
    "nordic": "hal_nordic",
    "nuvoton": "hal_nuvoton",
    "nxp": "hal_nxp",
    "openisa": "hal_openisa",
    "quicklogic": "hal_quicklogic",
    "raspberrypi": "hal_rpi_pico",
    "renesas": "hal_renesas",
    "silabs": "hal_silabs",
    "st": "hal_stm32",
    "telink": "hal_telink",
    "ti": "hal_ti",
    "wch": "hal_wch",
    "ene": "hal_ene",
    "altr": "hal_altera",
    "sifive": None,
}

APP_CMAKE = """cmake_minimum_required(VERSION 3.20.0)
find_package(Zephyr REQUIRED HINTS $ENV{ZEPHYR_BASE})
project(microcompiler_describe)
target_sources(app PRIVATE src/main.c)
"""


class ZephyrBoardDescriptionError(BoardError):
    """A Zephyr board target that cannot be described: unknown, not a Cortex-M, or a missing HAL."""


class UnknownZephyrBoardError(ZephyrBoardDescriptionError):
    """The workspace has no board of that name."""


def unknown_board(target: str, base: Path) -> UnknownZephyrBoardError:
    return UnknownZephyrBoardError(
        f"Zephyr {version_text(base)} at {base} has no board '{target}'; `microcompiler boards --zephyr "
        f"{target.split('/')[0][:6]}` lists its Cortex-M board targets (as 'west boards' names them, "
        "e.g. nrf5340dk/nrf5340/cpuapp)"
    )


@dataclass(frozen=True)
class ZephyrBoardDescription:
    """A Zephyr board target as its Kconfig and devicetree define it."""

    target: str  # the board target as given, e.g. "nrf5340dk/nrf5340/cpuapp"
    board_target: str  # Zephyr's full target (CONFIG_BOARD_TARGET), e.g. "nucleo_l4r5zi/stm32l4r5xx"
    soc: str  # CONFIG_SOC
    core: str  # "cortex-m4", "cortex-m33", ...
    fpu: str  # "none", "single" or "double" (CPU_HAS_FPU, CPU_HAS_FPU_DOUBLE_PRECISION)
    dsp: bool  # the DSP extension: Cortex-M4/M7, or ARMV8_M_DSP
    mve: str  # Helium: "none", "int" (ARMV8_1_M_MVEI) or "float" (ARMV8_1_M_MVEF)
    flash_origin: int  # CONFIG_FLASH_BASE_ADDRESS (the zephyr,flash chosen node)
    flash_size: int  # bytes, CONFIG_FLASH_SIZE (KiB) * 1024
    ram_origin: int  # CONFIG_SRAM_BASE_ADDRESS (the zephyr,sram chosen node)
    ram_size: int  # bytes, CONFIG_SRAM_SIZE (KiB) * 1024
    # the CPU node's clock-frequency, else the SysTick rate; QEMU's clock (QEMU_CPU_CLOCKS) for an
    # emulated board; None if unknown
    clock_hz: int | None
    entropy: bool  # the devicetree's zephyr,entropy chosen node exists and is enabled
    qemu_machine: str | None  # QEMU's -machine when Zephyr emulates the board
    runner: str | None  # the default flash runner (runners.yaml: flash-runner)
    runners: tuple[str, ...]  # every runner board.cmake configures
    zephyr_version: str  # e.g. "3.7.1"
    source: str  # what this was read from

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["runners"] = list(self.runners)
        return data

    @classmethod
    def from_json(cls, data: dict) -> ZephyrBoardDescription:
        """The description a cache file holds; ValueError if any field is missing or of the wrong type."""
        if not isinstance(data, dict):
            raise ValueError("not an object")
        values = {}
        for f in dataclasses.fields(cls):
            if f.name not in data:
                raise ValueError(f"no {f.name}")
            value = data[f.name]
            kind = str(f.type)
            if f.name == "runners":
                if not isinstance(value, list) or not all(isinstance(r, str) for r in value):
                    raise ValueError("runners")
                value = tuple(value)
            elif kind == "bool":
                ok = isinstance(value, bool)
            elif kind == "int":
                ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
            elif kind == "int | None":
                ok = value is None or (isinstance(value, int) and not isinstance(value, bool))
            elif kind == "str | None":
                ok = value is None or isinstance(value, str)
            else:
                ok = isinstance(value, str)
            if f.name != "runners" and not ok:
                raise ValueError(f"{f.name}: {value!r}")
            values[f.name] = value
        if values["core"] not in CORES or values["fpu"] not in ("none", "single", "double"):
            raise ValueError("core/fpu")
        if values["mve"] not in ("none", "int", "float"):
            raise ValueError("mve")
        return cls(**values)


# ---- the workspace ----


def version_text(base: Path) -> str:
    fields = dict(
        re.findall(r"^\s*(VERSION_MAJOR|VERSION_MINOR|PATCHLEVEL)\s*=\s*(\d+)", _read(base / "VERSION"), re.M)
    )
    return ".".join(fields.get(k, "0") for k in ("VERSION_MAJOR", "VERSION_MINOR", "PATCHLEVEL"))


def cache_dir(base: Path, environ: dict[str, str] | None = None) -> Path:
    """Where the descriptions of this workspace's boards are cached: one folder per workspace (its
    resolved path and VERSION file)."""
    env = os.environ if environ is None else environ
    root = Path(env.get("XDG_CACHE_HOME") or Path("~/.cache").expanduser()) / "microcompiler" / "zephyr-boards"
    resolved = Path(base).resolve()
    digest = hashlib.sha256(f"{CACHE_FORMAT}\n{resolved}\n{_read(resolved / 'VERSION')}".encode()).hexdigest()
    return root / digest[:16]


def cache_file(target: str, base: Path, environ: dict[str, str] | None = None) -> Path:
    return cache_dir(base, environ) / f"{target.replace('/', '_')}.json"


def west_projects(base: Path) -> dict[str, Path]:
    """The projects of the workspace's west.yml: name -> where it belongs (its ``path``)."""
    text = _read(base / "west.yml")
    projects: dict[str, Path] = {}
    name = None
    for line in text.splitlines():
        m = re.match(r"\s*-\s*name:\s*([\w.-]+)", line)
        if m:
            name = m.group(1)
            projects[name] = base.parent / name
            continue
        m = re.match(r"\s+path:\s*(\S+)", line)
        if m and name:
            projects[name] = base.parent / m.group(1)
    return projects


def missing_hal(base: Path, vendor: str | None) -> str | None:
    """The HAL module (west.yml's name) the SoC vendor needs when the workspace lacks it, else None."""
    module = VENDOR_HALS.get(vendor or "")
    if module is None:
        return None
    path = west_projects(base).get(module)
    if path is None or path.is_dir() and any(path.iterdir()):
        return None
    return module


def hal_hint(target: str, module: str, base: Path) -> str:
    return (
        f"board {target} needs Zephyr's {module} module, which the workspace at {base.parent} does "
        f"not have: west update {module}"
    )


# ---- describe ----


def describe(target: str, base: str | Path, environ: dict[str, str] | None = None) -> ZephyrBoardDescription:
    """The description of the Zephyr board ``target`` in the workspace ``base`` (its zephyr folder):
    from the cache when a sound entry is there, else from a CMake configure (then cached)."""
    base = Path(base).resolve()
    workspace.check_tree(base, "the Zephyr workspace")
    path = cache_file(target, base, environ)
    try:
        cached = ZephyrBoardDescription.from_json(json.loads(path.read_text(encoding="utf-8")))
        if cached.target == target:
            return cached
    except (OSError, ValueError):  # none yet, or damaged: configure again
        pass
    if not hardware.has_board(base, target):  # a quick look at the board.yml files spares a configure
        raise unknown_board(target, base)
    description = configure(target, base, environ)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(description.to_json(), indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return description


def cached(base: str | Path, environ: dict[str, str] | None = None) -> list[ZephyrBoardDescription]:
    """The descriptions of the workspace's boards described so far (its cache), damaged entries left out."""
    found = []
    for path in sorted(cache_dir(Path(base), environ).glob("*.json")):
        try:
            found.append(ZephyrBoardDescription.from_json(json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError, TypeError):  # the catalog, or a damaged entry
            continue
    return found


def configure(target: str, base: Path, environ: dict[str, str] | None = None) -> ZephyrBoardDescription:
    """Run Zephyr's CMake configure for ``target`` in a temporary folder and read what it made."""
    workspace.require_build_tools()
    env = workspace.build_environment(base, environ)
    tmp = cleanup.temp_dir("mc-zephyr-describe-")
    try:
        app, build = tmp / "app", tmp / "build"
        (app / "src").mkdir(parents=True)
        (app / "CMakeLists.txt").write_text(APP_CMAKE)
        (app / "prj.conf").write_text("")
        (app / "src" / "main.c").write_text("int main(void)\n{\n\treturn 0;\n}\n")
        argv = ["cmake", "-GNinja", "-S", str(app), "-B", str(build), f"-DBOARD={target}"]
        argv.append(f"-DPython3_EXECUTABLE={sys.executable}")  # the Python with west and Zephyr's packages
        what = f"Zephyr's CMake configure for board {target}"
        # Zephyr's minimal C library: the default (picolibc built from source when the toolchain has
        # none, as with gnuarmemb) adds some 900 source files whose CMake processing is most of a
        # configure; the C library changes none of the CPU, memory, clock or runner facts read here.
        proc = cleanup.run_bounded([*argv, FAST_LIBC], CONFIGURE_TIMEOUT, what, text=True, env=env, cwd=tmp)
        if proc.returncode != 0 and "MINIMAL_LIBC" in proc.stdout + proc.stderr:  # a board that refuses it
            cleanup.remove_dir(build)
            proc = cleanup.run_bounded(argv, CONFIGURE_TIMEOUT, what, text=True, env=env, cwd=tmp)
        return read_build(target, base, build, proc.returncode, proc.stdout + proc.stderr)
    finally:
        cleanup.remove_dir(tmp)


def read_build(target: str, base: Path, build: Path, returncode: int, log: str) -> ZephyrBoardDescription:
    """The description from a configured build folder (``returncode`` and ``log`` of the configure
    explain one that failed)."""
    version = version_text(base)
    config_path = build / "zephyr" / ".config"
    if not config_path.is_file():
        if re.search(r"Invalid BOARD|No board named", log):
            raise unknown_board(target, base)
        qualifiers = re.search(r"Board qualifiers `([^`]*)` for board `([^`]*)` not found", log)
        if qualifiers:  # the board exists, the target does not (e.g. a name from another Zephyr release)
            board = qualifiers.group(2)
            valid = re.findall(rf"^\s*({re.escape(board)}(?:/[\w.-]+)*)\s*$", log, re.M)
            raise UnknownZephyrBoardError(
                f"Zephyr {version} at {base} has no board target '{target}': its targets of board {board} "
                f"are {', '.join(dict.fromkeys(valid)) or '(none listed)'}"
            )
        missing = _missing_include(log)
        vendor = _board_vendor(target, base)
        module = missing_hal(base, vendor)
        if module is not None:
            raise ZephyrBoardDescriptionError(hal_hint(target, module, base))
        raise ZephyrBoardDescriptionError(
            f"Zephyr's CMake configure for board {target} failed ({_first_error(log, missing)}); "
            f"try 'west build -b {target} --cmake-only' in the workspace at {base.parent}"
        )
    config = parse_config(config_path.read_text(errors="replace"))
    if config.get("ARM") != "y" or config.get("CPU_CORTEX_M") != "y":
        arch = next((f"CONFIG_{s}" for s in ARCH_SYMBOLS if config.get(s) == "y"), "no CONFIG_ARM")
        kind = {"CONFIG_ARM": "a Cortex-A/R (CONFIG_ARM without CONFIG_CPU_CORTEX_M)"}.get(arch)
        name = kind or f"{arch[len('CONFIG_') :].lower().replace('arm64', 'arm64 (aarch64)')} ({arch})"
        raise ZephyrBoardDescriptionError(
            f"board {target} is {name}, not a Cortex-M: microcompiler generates code for Cortex-M cores "
            "only; `microcompiler boards --zephyr` lists the workspace's Cortex-M boards"
        )
    if returncode != 0:
        module = missing_hal(base, _board_vendor(target, base))
        if module is not None:
            raise ZephyrBoardDescriptionError(hal_hint(target, module, base))
        raise ZephyrBoardDescriptionError(
            f"Zephyr's CMake configure for board {target} failed ({_first_error(log, None)}); "
            f"try 'west build -b {target} --cmake-only' in the workspace at {base.parent}"
        )
    core = next((c for s, c in CORE_SYMBOLS.items() if config.get(s) == "y"), None)
    if core is None:
        raise ZephyrBoardDescriptionError(f"board {target}: its .config names no Cortex-M core (CONFIG_CPU_CORTEX_M*)")
    fpu = "none"
    if config.get("CPU_HAS_FPU") == "y":
        fpu = "double" if config.get("CPU_HAS_FPU_DOUBLE_PRECISION") == "y" else "single"
    mve = "float" if config.get("ARMV8_1_M_MVEF") == "y" else "int" if config.get("ARMV8_1_M_MVEI") == "y" else "none"
    dts = build / "zephyr" / "zephyr.dts"
    chosen = dts_facts(base, dts) if dts.is_file() else {}
    clock = chosen.get("cpu_clock")
    if clock is None and config.get("CORTEX_M_SYSTICK") == "y":
        clock = _int(config.get("SYS_CLOCK_HW_CYCLES_PER_SEC")) or None
    runners_yaml = _read(build / "zephyr" / "runners.yaml")
    runner = re.search(r"^flash-runner:\s*(\S+)", runners_yaml, re.M)
    runners_block = re.search(r"^runners:\n((?:- .*\n)*)", runners_yaml, re.M)
    runners = tuple(line[2:].strip() for line in runners_block.group(1).splitlines()) if runners_block else ()
    machine = None
    for line in _read(build / "build.ninja").splitlines():
        if "-machine" in line and "COMMAND" in line:
            m = re.search(r"-machine\s+([\w.-]+)(?:\s|$)", line)
            if m:
                machine = m.group(1)
                break
    if machine in QEMU_CPU_CLOCKS:  # what runs an emulated board is QEMU
        clock = QEMU_CPU_CLOCKS[machine]
    return ZephyrBoardDescription(
        target=target,
        board_target=config.get("BOARD_TARGET", target),
        soc=config.get("SOC", ""),
        core=core,
        fpu=fpu,
        dsp=core in DSP_CORES or config.get("ARMV8_M_DSP") == "y",
        mve=mve,
        flash_origin=_int(config.get("FLASH_BASE_ADDRESS")),
        flash_size=_int(config.get("FLASH_SIZE")) * 1024,
        ram_origin=_int(config.get("SRAM_BASE_ADDRESS")),
        ram_size=_int(config.get("SRAM_SIZE")) * 1024,
        clock_hz=clock,
        entropy=bool(chosen.get("entropy")),
        qemu_machine=machine,
        runner=runner.group(1) if runner else None,
        runners=runners,
        zephyr_version=version,
        source=f"Zephyr {version} at {base}: CMake configure of board {target} (zephyr/.config, zephyr.dts, runners.yaml)",
    )


def parse_config(text: str) -> dict[str, str]:
    """A Kconfig .config: CONFIG_NAME=value lines to {NAME: value} (strings without their quotes)."""
    values = {}
    for m in re.finditer(r"^CONFIG_(\w+)=(.*)$", text, re.M):
        value = m.group(2).strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        values[m.group(1)] = value
    return values


def dts_facts(base: Path, dts: Path) -> dict:
    """From a devicetree (zephyr.dts): ``entropy`` (the zephyr,entropy chosen node exists and is
    enabled) and ``cpu_clock`` (clock-frequency of /cpus/cpu@0, None if it has none)."""
    tree = hardware.dtlib(base).DT(str(dts), include_path=[], force=True)
    facts: dict = {"entropy": False, "cpu_clock": None}
    chosen = tree.root.nodes.get("chosen")
    if chosen is not None and "zephyr,entropy" in chosen.props:
        try:
            node = chosen.props["zephyr,entropy"].to_path()
        except Exception:  # a malformed reference: no entropy node
            node = None
        if node is not None:
            status = node.props["status"].to_string() if "status" in node.props else "okay"
            facts["entropy"] = status in ("okay", "ok")
    cpus = tree.root.nodes.get("cpus")
    cpu = None if cpus is None else next((n for n in cpus.nodes.values() if n.name.startswith("cpu@")), None)
    if cpu is not None and "clock-frequency" in cpu.props:
        try:
            facts["cpu_clock"] = cpu.props["clock-frequency"].to_num() or None
        except Exception:
            facts["cpu_clock"] = None
    return facts


# ---- helpers ----


def _board_vendor(target: str, base: Path) -> str | None:
    """The vendor folder (soc/<vendor>) of the SoC the board target names (its board.yml)."""
    return hardware.target_soc_vendor(base, target)


def _missing_include(log: str) -> str | None:
    m = re.search(r"fatal error: (\S+): No such file", log)
    return m.group(1) if m else None


def _first_error(log: str, missing: str | None) -> str:
    if missing:
        return f"{missing} not found"
    for line in log.splitlines():
        if "error" in line.lower() and line.strip():
            return line.strip()[:200]
    return "see 'west build --cmake-only'"


def _int(text: str | None) -> int:
    if not text:
        return 0
    try:
        return int(text, 0)
    except ValueError:
        return 0


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
