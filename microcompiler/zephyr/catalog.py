"""A fast list of the workspace's Cortex-M board targets (``microcompiler boards --zephyr``).

Configuring each of the hundreds of boards would take an hour, so the list reads the files instead:
the boards' ``board.yml`` (hardware model v2: names, SoCs, CPU clusters, variants), the Kconfig
``select``s from a board target to its core and features (CPU_CORTEX_M4, CPU_HAS_FPU,
CPU_HAS_FPU_DOUBLE_PRECISION, ARMV8_M_DSP, ARMV8_1_M_MVEI/MVEF), and the board's devicetree
(preprocessed as Zephyr's dts.cmake does, parsed with Zephyr's dtlib) for the CPU's compatible and
the zephyr,flash / zephyr,sram chosen nodes. ``board_facts.describe`` is the Kconfig truth for one
board; the tests hold the two to agree. The list is cached per workspace beside the descriptions.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from microcompiler import cleanup
from microcompiler.errors import ToolchainError
from microcompiler.zephyr import board_facts, hardware, workspace

CATALOG_FORMAT = 3  # 3: the default revision's devicetree overlay
CPP_TIMEOUT = 30.0  # seconds, one board's devicetree


@dataclass(frozen=True)
class CatalogEntry:
    target: str
    soc: str
    vendor: str  # soc/<vendor>
    core: str
    fpu: str  # none / single / double
    dsp: bool
    mve: str  # none / int / float
    flash_origin: int | None  # None: the devicetree could not be read (see note)
    flash_size: int | None
    ram_origin: int | None
    ram_size: int | None
    emulated: bool  # board.cmake supports QEMU
    hal_missing: str | None  # the vendor HAL module the workspace lacks (west.yml's name)
    note: str | None = None  # why the memory is unknown


def catalog(base: str | Path, pattern: str = "", environ: dict[str, str] | None = None) -> list[CatalogEntry]:
    """The Cortex-M board targets of the workspace ``base`` (its zephyr folder) whose name contains
    ``pattern``, sorted by target. Each target's devicetree is read once and cached."""
    base = Path(base).resolve()
    workspace.check_tree(base, "the Zephyr workspace")
    path = board_facts.cache_dir(base, environ) / "catalog.json"
    cached: dict[str, CatalogEntry] = {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") == CATALOG_FORMAT:
            cached = {e["target"]: CatalogEntry(**e) for e in data["boards"]}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):  # none yet, or damaged
        cached = {}
    wanted = [c for c in cortex_m_targets(base) if pattern.lower() in c[0].target.lower()]
    missing = [c for c in wanted if c[0].target not in cached]
    if missing:
        cached.update((e.target, e) for e in build_entries(base, missing))
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        payload = {"format": CATALOG_FORMAT, "boards": [dataclasses.asdict(e) for e in cached.values()]}
        tmp.write_text(json.dumps(payload, indent=0) + "\n", encoding="utf-8")
        tmp.replace(path)
    return sorted((cached[c[0].target] for c in wanted), key=lambda e: e.target)


def find(entries: list[CatalogEntry], target: str) -> CatalogEntry | None:
    """The entry of ``target`` (also as Zephyr's full form, e.g. nucleo_l4r5zi/stm32l4r5xx)."""
    for entry in entries:
        if entry.target == target:
            return entry
    board, _, soc = target.partition("/")
    for entry in entries:
        if "/" not in entry.target and entry.target == board and entry.soc == soc:
            return entry
    return None


def cortex_m_targets(base: Path) -> list[tuple[hardware.BoardTarget, set[str], str]]:
    """(target, its Kconfig symbols, core) of every board target whose Kconfig selects a Cortex-M core."""
    found = []
    for target in hardware.board_targets(base):
        enabled = hardware.enabled_symbols(base, target)
        core = next((c for s, c in board_facts.CORE_SYMBOLS.items() if s in enabled), None)
        if core is not None and "ARM" in enabled:
            found.append((target, enabled, core))
    return found


def build_entries(base: Path, candidates: list[tuple[hardware.BoardTarget, set[str], str]]) -> list[CatalogEntry]:
    known = hardware.socs(base)
    cpp = _preprocessor()
    hal_missing = {}
    for target, _, _ in candidates:
        vendor = known[target.soc].vendor if target.soc in known else ""
        if vendor not in hal_missing:
            hal_missing[vendor] = board_facts.missing_hal(base, vendor)
    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        memories = list(pool.map(lambda c: _devicetree(base, cpp, c[0]), candidates))
    entries = []
    for (target, enabled, core), (dts_core, memory, note) in zip(candidates, memories, strict=True):
        vendor = known[target.soc].vendor if target.soc in known else ""
        fpu = "none"
        if "CPU_HAS_FPU" in enabled:
            fpu = "double" if "CPU_HAS_FPU_DOUBLE_PRECISION" in enabled else "single"
        mve = "float" if "ARMV8_1_M_MVEF" in enabled else "int" if "ARMV8_1_M_MVEI" in enabled else "none"
        core = dts_core or core
        board_cmake = _read(target.board_dir / "board.cmake")
        entries.append(
            CatalogEntry(
                target=target.target,
                soc=target.soc,
                vendor=vendor,
                core=core,
                fpu=fpu,
                dsp=core in board_facts.DSP_CORES or "ARMV8_M_DSP" in enabled,
                mve=mve,
                flash_origin=memory.get("flash", (None, None))[0],
                flash_size=memory.get("flash", (None, None))[1],
                ram_origin=memory.get("ram", (None, None))[0],
                ram_size=memory.get("ram", (None, None))[1],
                emulated=bool(re.search(r"SUPPORTED_EMU_PLATFORMS[^)]*\bqemu\b", board_cmake)),
                hal_missing=hal_missing[vendor],
                note=_hal_note(vendor, note) if not hal_missing[vendor] else note,
            )
        )
    return sorted(entries, key=lambda e: e.target)


def _hal_note(vendor: str, note: str | None) -> str | None:
    """A devicetree include that is missing from a HAL the workspace has: the HAL lacks that family."""
    module = board_facts.VENDOR_HALS.get(vendor)
    if note and module and note.endswith(" not found"):
        return f"{module} lacks {note.removesuffix(' not found')} (west update {module})"
    return note


def _preprocessor() -> list[str]:
    for name in ("arm-none-eabi-cpp", "cpp"):
        found = shutil.which(name)
        if found:
            return [found]
    gcc = shutil.which("gcc") or shutil.which("arm-none-eabi-gcc")
    if gcc:
        return [gcc, "-E"]
    raise ToolchainError("no C preprocessor for the boards' devicetrees: sudo apt-get install gcc-arm-none-eabi")


CPU_COMPATIBLE = re.compile(r"^arm,cortex-(m\d+)(\+|plus)?f?$")


def _devicetree(base: Path, cpp: list[str], target: hardware.BoardTarget) -> tuple[str | None, dict, str | None]:
    """(core from the CPU's compatible, {"flash"/"ram": (origin, size)}, note) of a board target."""
    dts = next((p for p in target.dts_candidates() if p.is_file()), None)
    if dts is None:
        return None, {}, "no devicetree file"
    argv = [*cpp, "-x", "assembler-with-cpp", "-nostdinc", "-undef", "-D__DTS__", "-E", "-include", str(dts)]
    overlay = target.revision_overlay()  # e.g. a board whose pinctrl nodes are per revision
    if overlay is not None:
        argv += ["-include", str(overlay)]
    for d in hardware.dts_include_dirs(base, target.board_dir):
        argv += ["-I", str(d)]
    argv.append(str(base / "misc" / "empty_file.c"))
    tmp = cleanup.temp_dir("mc-zephyr-dts-")
    try:
        argv += ["-o", str(tmp / "board.dts")]
        try:
            proc = cleanup.run_bounded(argv, CPP_TIMEOUT, f"the preprocessor on {dts.name}", text=True)
        except (ToolchainError, OSError) as exc:
            return None, {}, str(exc)
        if proc.returncode != 0:
            missing = re.search(r"fatal error: (\S+): No such file", proc.stderr)
            return None, {}, f"{missing.group(1) if missing else 'the devicetree'} not found"
        try:
            tree = hardware.dtlib(base).DT(str(tmp / "board.dts"), include_path=[], force=True)
        except Exception as exc:  # dtlib's own errors: a devicetree this list cannot read
            return None, {}, f"devicetree: {str(exc).splitlines()[0][:120]}"
    finally:
        cleanup.remove_dir(tmp)
    return _cpu_core(tree), _memory(base, tree), None


def _cpu_core(tree) -> str | None:
    cpus = tree.root.nodes.get("cpus")
    for node in [] if cpus is None else cpus.nodes.values():
        if "compatible" not in node.props:
            continue
        for compatible in node.props["compatible"].to_strings():
            m = CPU_COMPATIBLE.match(compatible)
            if m:
                core = f"cortex-{m.group(1)}{'plus' if m.group(2) else ''}"
                if core in board_facts.CORES:
                    return core
    return None


def _memory(base: Path, tree) -> dict[str, tuple[int, int]]:
    chosen = tree.root.nodes.get("chosen")
    found: dict[str, tuple[int, int]] = {}
    if chosen is None:
        return found
    for kind, prop in (("flash", "zephyr,flash"), ("ram", "zephyr,sram")):
        if prop not in chosen.props:
            continue
        try:
            node = chosen.props[prop].to_path()
            reg = _first_reg(base, node)
        except Exception:  # a reference to nowhere, a malformed reg: unknown
            continue
        if reg is not None:
            found[kind] = reg
    return found


def _first_reg(base: Path, node) -> tuple[int, int] | None:
    """The first (address, size) of the node's reg, its address translated through the parents'
    ranges as Zephyr's edtlib does."""
    if "reg" not in node.props or node.parent is None:
        return None
    edt = hardware.edtlib(base)
    parent = node.parent
    address_cells = parent.props["#address-cells"].to_num() if "#address-cells" in parent.props else 2
    size_cells = parent.props["#size-cells"].to_num() if "#size-cells" in parent.props else 1
    value = node.props["reg"].value
    if len(value) < 4 * (address_cells + size_cells):
        return None
    address = int.from_bytes(value[: 4 * address_cells], "big")
    size = int.from_bytes(value[4 * address_cells : 4 * (address_cells + size_cells)], "big")
    translate = getattr(edt, "_translate", None)
    return (translate(address, node) if translate else address), size


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
