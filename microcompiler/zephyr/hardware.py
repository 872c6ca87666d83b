"""The workspace's hardware as its files declare it, read without configuring anything: the boards
(hardware model v2 ``board.yml``), their SoCs (``soc.yml``), the Kconfig ``select``s from a board
target to its core and CPU features, the devicetree library (``scripts/dts/python-devicetree``),
and the modules' devicetree roots. catalog.py lists the boards with it; board_facts.py names a
missing HAL with it.
"""

from __future__ import annotations

import functools
import importlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from microcompiler.errors import ToolchainError


@dataclass(frozen=True)
class SocInfo:
    name: str
    vendor: str  # the folder under soc/ (st, nordic, arm, ...)
    series: str
    family: str
    clusters: tuple[str, ...]


@dataclass(frozen=True)
class BoardTarget:
    target: str  # e.g. "nrf5340dk/nrf5340/cpuapp", "nucleo_l4r5zi"
    board: str  # the board name
    board_dir: Path
    soc: str
    cluster: str | None
    variant: str | None
    single_soc: bool  # the board has one SoC (its targets may leave it out)
    revision: str | None = None  # the board.yml's default revision (revision: default:), if any

    @property
    def qualifiers(self) -> str:
        """Zephyr's qualifiers: soc[/cluster][/variant]."""
        return "/".join(q for q in (self.soc, self.cluster, self.variant) if q)

    @property
    def kconfig_symbols(self) -> set[str]:
        return {f"BOARD_{symbol(self.board)}", f"BOARD_{symbol(self.board)}_{symbol(self.qualifiers)}"}

    def _file_stems(self) -> list[str]:
        """Zephyr's names for the target's files in its board folder: <board>_<soc>[_<cluster>][_<variant>],
        and for a board of one SoC also the shortened <board>[_<cluster>][_<variant>]."""
        rest = [q for q in (self.cluster, self.variant) if q]
        names = ["_".join([self.board, self.soc, *rest])]
        if self.single_soc:
            names.append("_".join([self.board, *rest]))
        return names

    def dts_candidates(self) -> list[Path]:
        return [self.board_dir / f"{n}.dts" for n in self._file_stems()]

    def revision_overlay(self) -> Path | None:
        """The devicetree overlay of the board's default revision (<stem>_<revision>.overlay, dots as
        underscores), which Zephyr's dts.cmake appends to the board's devicetree; None if none."""
        if not self.revision:
            return None
        suffix = self.revision.replace(".", "_")
        found = (self.board_dir / f"{n}_{suffix}.overlay" for n in self._file_stems())
        return next((p for p in found if p.is_file()), None)


def symbol(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", text).upper()


def _yaml():
    try:
        import yaml
    except ImportError:
        raise ToolchainError(
            "PyYAML is not installed; Zephyr's board files need it: pip install 'microcompiler[zephyr]'"
        ) from None
    return yaml


def _load_yaml(path: Path):
    yaml = _yaml()
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, yaml.YAMLError):
        return None


@functools.lru_cache(maxsize=8)
def socs(base: Path) -> dict[str, SocInfo]:
    """Every SoC of the workspace's soc/**/soc.yml, by name."""
    found: dict[str, SocInfo] = {}
    for path in sorted((base / "soc").rglob("soc.yml")):
        data = _load_yaml(path)
        if not isinstance(data, dict):
            continue
        vendor = path.relative_to(base / "soc").parts[0]
        entries = []  # (soc, series, family)
        for family in data.get("family") or []:
            for series in family.get("series") or []:
                entries += [(soc, series.get("name", ""), family.get("name", "")) for soc in series.get("socs") or []]
            entries += [(soc, "", family.get("name", "")) for soc in family.get("socs") or []]
        for series in data.get("series") or []:
            entries += [(soc, series.get("name", ""), "") for soc in series.get("socs") or []]
        entries += [(soc, "", "") for soc in data.get("socs") or []]
        for soc, series_name, family_name in entries:
            if isinstance(soc, dict) and isinstance(soc.get("name"), str):
                clusters = tuple(c["name"] for c in soc.get("cpuclusters") or [] if isinstance(c, dict))
                found[soc["name"]] = SocInfo(soc["name"], vendor, series_name, family_name, clusters)
    return found


@functools.lru_cache(maxsize=8)
def board_targets(base: Path) -> tuple[BoardTarget, ...]:
    """Every board target of the workspace's boards/**/board.yml (hardware model v2), as
    ``west boards`` would name them; revisions are left out."""
    known = socs(base)
    targets: list[BoardTarget] = []
    for path in sorted((base / "boards").rglob("board.yml")):
        data = _load_yaml(path)
        boards = [] if not isinstance(data, dict) else data.get("boards") or [data.get("board")]
        for board in boards:
            if not isinstance(board, dict) or not isinstance(board.get("name"), str):
                continue
            board_socs = [s for s in board.get("socs") or [] if isinstance(s, dict) and s.get("name")]
            single = len(board_socs) == 1
            revision = board.get("revision") if isinstance(board.get("revision"), dict) else {}
            default_revision = revision.get("default")
            default_revision = str(default_revision) if default_revision is not None else None
            for soc in board_socs:
                info = known.get(soc["name"])
                clusters = info.clusters if info else ()
                variants = [v for v in soc.get("variants") or [] if isinstance(v, dict) and v.get("name")]

                for cluster in clusters or (None,):
                    for variant in [
                        None,
                        *(v["name"] for v in variants if v.get("cpucluster") in (None, cluster) or not clusters),
                    ]:
                        parts = [q for q in (cluster, variant) if q]
                        name = board["name"] if single and not parts else "/".join([board["name"], soc["name"], *parts])
                        targets.append(
                            BoardTarget(
                                name,
                                board["name"],
                                path.parent,
                                soc["name"],
                                cluster,
                                variant,
                                single,
                                default_revision,
                            )
                        )
    return tuple(targets)


def has_board(base: Path, target: str) -> bool:
    """Whether the workspace has a board of the target's name (its qualifiers are Zephyr's to check);
    boards of other board roots (a module's) are not indexed here, so those count as present."""
    name = target.split("/")[0].split("@")[0]
    if any(t.board == name for t in board_targets(base)):
        return True
    return any((base.parent / "modules").glob(f"**/boards/**/{name}/board.yml"))


def target_soc_vendor(base: Path, target: str) -> str | None:
    """The soc/<vendor> folder of the SoC a board target uses (its board.yml), None if unknown."""
    board, _, rest = target.partition("/")
    board = board.split("@")[0]
    soc_name = rest.split("/")[0] if rest else None
    known = socs(base)
    for t in board_targets(base):
        if t.board == board and (not soc_name or t.soc == soc_name):
            info = known.get(t.soc)
            return info.vendor if info else None
    return None


# ---- Kconfig selects ----

_CONFIG = re.compile(r"^\s*(?:menu)?config\s+(\w+)\s*$")
_SELECT = re.compile(r"^\s+select\s+(\w+)(?:\s+if\s+(.+?))?\s*(?:#.*)?$")


@functools.lru_cache(maxsize=8)
def kconfig_selects(base: Path) -> dict[str, tuple[tuple[str, str | None], ...]]:
    """symbol -> its ``select``s (selected symbol, condition or None) from the SoC Kconfig files
    (soc/**/Kconfig*), the Arm core Kconfig and the boards' Kconfig.<board> files."""
    files = [p for p in (base / "soc").rglob("Kconfig*") if p.is_file()]
    files += [
        p for p in (base / "boards").rglob("Kconfig.*") if p.is_file() and not p.name.startswith("Kconfig.defconfig")
    ]
    files += [p for p in (base / "arch" / "arm" / "core").rglob("Kconfig*") if p.is_file()]
    selects: dict[str, list[tuple[str, str | None]]] = {}
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        current = None
        for line in text.splitlines():
            m = _CONFIG.match(line)
            if m:
                current = m.group(1)
                continue
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if not line[0].isspace():  # a new statement (if, endif, menu, source, choice...)
                current = None
                continue
            m = _SELECT.match(line)
            if m and current:
                selects.setdefault(current, []).append((m.group(1), m.group(2)))
    return {k: tuple(v) for k, v in selects.items()}


def _condition(expr: str, enabled: set[str]) -> bool:
    """A Kconfig condition of symbols with !, &&, || and parentheses, against the enabled symbols
    (``ZEPHYR_*_MODULE`` and anything unknown count as off)."""
    tokens = re.findall(r"\w+|&&|\|\||!=|=|!|\(|\)|\"[^\"]*\"", expr)
    py = []
    for tok in tokens:
        if tok == "&&":
            py.append(" and ")
        elif tok == "||":
            py.append(" or ")
        elif tok == "!":
            py.append(" not ")
        elif tok in ("(", ")"):
            py.append(tok)
        elif tok in ("=", "!=") or tok.startswith('"'):
            return False  # comparisons: not needed for a board's CPU
        else:
            py.append(" True " if tok in enabled or tok == "y" else " False ")
    try:
        return bool(eval("".join(py) or "False", {"__builtins__": {}}))  # only True/False/and/or/not
    except SyntaxError:
        return False


def enabled_symbols(base: Path, target: BoardTarget) -> set[str]:
    """The symbols the board target's Kconfig selects, transitively (conditions evaluated)."""
    selects = kconfig_selects(base)
    enabled = set(target.kconfig_symbols)
    changed = True
    while changed:
        changed = False
        for sym in list(enabled):
            for selected, cond in selects.get(sym, ()):
                if selected not in enabled and (cond is None or _condition(cond, enabled)):
                    enabled.add(selected)
                    changed = True
    return enabled


# ---- devicetree ----


@functools.lru_cache(maxsize=4)
def devicetree_package(base: Path) -> ModuleType:
    """Zephyr's devicetree package (scripts/dts/python-devicetree/src/devicetree) of this workspace."""
    src = base / "scripts" / "dts" / "python-devicetree" / "src"
    if not (src / "devicetree" / "dtlib.py").is_file():
        raise ToolchainError(f"the Zephyr tree at {base} has no scripts/dts/python-devicetree: is it Zephyr 3.7+?")
    if str(src) not in sys.path:
        sys.path.insert(0, str(src))
    return importlib.import_module("devicetree")


def dtlib(base: Path) -> ModuleType:
    devicetree_package(base)
    return importlib.import_module("devicetree.dtlib")


def edtlib(base: Path) -> ModuleType:
    devicetree_package(base)
    return importlib.import_module("devicetree.edtlib")


def module_dirs(base: Path) -> list[Path]:
    """The workspace's modules present on disk (folders with zephyr/module.yml beside the zephyr tree)."""
    found = []
    for yml in sorted(base.parent.glob("modules/**/zephyr/module.yml")):
        found.append(yml.parent.parent)
    return found


@functools.lru_cache(maxsize=4)
def dts_roots(base: Path) -> tuple[Path, ...]:
    """The devicetree roots: the Zephyr tree and every present module whose module.yml names one."""
    roots = [base]
    for module in module_dirs(base):
        data = _load_yaml(module / "zephyr" / "module.yml")
        settings = (data or {}).get("build", {}).get("settings", {}) if isinstance(data, dict) else {}
        root = settings.get("dts_root") if isinstance(settings, dict) else None
        if isinstance(root, str):
            roots.append((module / root).resolve())
    return tuple(roots)


def dts_include_dirs(base: Path, board_dir: Path) -> list[Path]:
    """The C preprocessor's include folders for a board's devicetree, as Zephyr's dts.cmake gives them."""
    dirs = []
    for root in (*dts_roots(base), board_dir):
        for sub in ("include", "include/zephyr", "dts/common", "dts/arm", "dts"):
            if (root / sub).is_dir():
                dirs.append(root / sub)
    return [board_dir, *dirs]
