"""Board descriptions: one TOML file per board in boards/ (see docs/porting.md for the format).

A board says which CPU it has (compiler flags and features the kernels may use), where its flash
and RAM are, which console UART and timer the bare-metal platform drives, and how to reach it:
a QEMU machine when it is emulated, a USB VID:PID and a flash runner when it is real hardware.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from microcompiler import resources
from microcompiler.errors import BoardError

HOST = "host"  # not a TOML file: the computer microcompiler runs on (microcompiler.host)


@dataclass(frozen=True)
class Cpu:
    core: str  # e.g. "cortex-m4"
    mcpu: str  # -mcpu=
    fpu: str | None  # -mfpu=, None when the core has no FPU
    float_abi: str  # -mfloat-abi= (soft, softfp, hard)
    features: frozenset[str]  # e.g. {"dsp", "fpu"}: what generated kernels may use
    clock_hz: int

    @property
    def cflags(self) -> list[str]:
        flags = [f"-mcpu={self.mcpu}", "-mthumb", f"-mfloat-abi={self.float_abi}"]
        if self.fpu:
            flags.insert(1, f"-mfpu={self.fpu}")
        return flags

    @property
    def has_fpu(self) -> bool:
        return self.fpu is not None and self.float_abi != "soft"


@dataclass(frozen=True)
class MemoryRegion:
    name: str  # the linker script's name for it
    kind: str  # "flash" (code, constants) or "ram" (data, bss, stack)
    origin: int
    size: int
    holds: str | None = None  # "weights": the model's constant data go here, not in the main flash


@dataclass(frozen=True)
class Peripheral:
    kind: str  # the driver, e.g. "cmsdk"
    base: int
    settings: dict = field(default_factory=dict, hash=False)  # everything else from the TOML table

    def get(self, key: str, default=None):
        return self.settings.get(key, default)


@dataclass(frozen=True)
class ZephyrBoardFacts:
    """What the Kconfig of a board needs, as Zephyr defines the board (checked in its source).

    From the board file's ``[zephyr]`` table: ``fpu``, ``entropy`` and ``source``."""

    fpu: bool  # the SoC selects CPU_HAS_FPU, so CONFIG_FPU=y is valid
    entropy: bool  # the board's devicetree enables the zephyr,entropy chosen node
    source: str  # where in the Zephyr tree that comes from


@dataclass(frozen=True)
class Board:
    name: str
    description: str
    cpu: Cpu
    memory: tuple[MemoryRegion, ...]
    platform: str | None = None  # bare-metal platform family (crt/platform/<family>), None if none
    uart: Peripheral | None = None
    timer: Peripheral | None = None
    qemu_machine: str | None = None  # set when the board is emulated
    qemu_args: tuple[str, ...] = ()  # more qemu-system-arm arguments the machine needs ([qemu] args)
    zephyr_board: str | None = None
    zephyr_facts: ZephyrBoardFacts | None = None  # None: not checked against Zephyr's source
    usb_ids: tuple[str, ...] = ()  # "VID:PID" of the USB serial adapter, hardware boards
    runner: str | None = None  # flash runner (west flash --runner), hardware boards
    source: Path | None = None  # the TOML file

    @property
    def emulated(self) -> bool:
        return self.qemu_machine is not None

    @property
    def is_host(self) -> bool:
        """The computer microcompiler runs on (``--board host``), not a board with firmware."""
        return self is HOST_BOARD

    def region(self, kind: str) -> MemoryRegion:
        """The region the linker fills with ``kind`` ("flash" or "ram"): the first of that kind."""
        for region in self.memory:
            if region.kind == kind:
                return region
        raise BoardError(f"board {self.name} has no {kind} region in {self.source}")

    @property
    def flash(self) -> MemoryRegion:
        return self.region("flash")

    @property
    def weights_region(self) -> MemoryRegion:
        """Where the model's weights go: a flash region marked ``holds = "weights"``, else the flash."""
        for region in self.memory:
            if region.holds == "weights":
                return region
        return self.flash

    @property
    def ram(self) -> MemoryRegion:
        return self.region("ram")


def _board_files() -> dict[str, Path]:
    return {p.stem: p for p in sorted(resources.boards_dir().glob("*.toml"))}


def list_boards() -> list[Board]:
    """Every board in boards/, sorted by name."""
    return [load_board_file(path) for path in _board_files().values()]


def board_names() -> list[str]:
    return list(_board_files())


def resolve_board(name: str | Board) -> Board:
    """The board a command line names: ``host`` (this computer) or a board as in load_board."""
    if isinstance(name, Board):
        return name
    return HOST_BOARD if name == HOST else load_board(name)


def load_board(name: str) -> Board:
    """The board called ``name`` (a file name in boards/ without .toml, or a path to a TOML file)."""
    if name == HOST:
        raise BoardError(
            "'host' is this computer, not a board with a firmware project; "
            "use it as 'microcompiler run MODEL --board host'"
        )
    path = Path(name)
    if path.suffix == ".toml" and path.is_file():
        return load_board_file(path)
    files = _board_files()
    if name not in files:
        known = ", ".join([HOST, *files])
        raise BoardError(f"unknown board '{name}'; known boards: {known}")
    return load_board_file(files[name])


def _int(table: dict, key: str, where: str) -> int:
    value = table.get(key)
    if not isinstance(value, int) or value < 0:
        raise BoardError(f"{where}: '{key}' must be a non-negative integer, got {value!r}")
    return value


def _peripheral(table: dict | None, where: str) -> Peripheral | None:
    if table is None:
        return None
    if not isinstance(table.get("kind"), str):
        raise BoardError(f"{where}: missing 'kind'")
    settings = {k: v for k, v in table.items() if k not in ("kind", "base")}
    return Peripheral(table["kind"], _int(table, "base", where), settings)


_ZEPHYR_FACTS = {"fpu": bool, "entropy": bool, "source": str}


def _qemu_args(table: dict, where: str) -> tuple[str, ...]:
    args = table.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise BoardError(f"{where} [qemu]: 'args' must be a list of strings (qemu-system-arm arguments), got {args!r}")
    return tuple(args)


def _zephyr_facts(table: dict, where: str) -> ZephyrBoardFacts | None:
    given = [key for key in _ZEPHYR_FACTS if key in table]
    if not given:
        return None
    for key, kind in _ZEPHYR_FACTS.items():
        if not isinstance(table.get(key), kind):
            raise BoardError(
                f"{where} [zephyr]: '{key}' must be a {kind.__name__} (give fpu, entropy and source "
                "together, checked in Zephyr's source: docs/zephyr.md)"
            )
    return ZephyrBoardFacts(table["fpu"], table["entropy"], table["source"])


def load_board_file(path: str | Path) -> Board:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise BoardError(f"cannot read board file {path}: {exc}") from None
    where = str(path)
    try:
        cpu_table = data["cpu"]
        cpu = Cpu(
            core=cpu_table["core"],
            mcpu=cpu_table.get("mcpu", cpu_table["core"]),
            fpu=cpu_table.get("fpu"),
            float_abi=cpu_table.get("float_abi", "soft"),
            features=frozenset(cpu_table.get("features", [])),
            clock_hz=_int(cpu_table, "clock_hz", where),
        )
        memory = tuple(
            MemoryRegion(r["name"], r["kind"], _int(r, "origin", where), _int(r, "size", where), r.get("holds"))
            for r in data["memory"]
        )
    except KeyError as exc:
        raise BoardError(f"{where}: missing {exc}") from None
    for region in memory:
        if region.kind not in ("flash", "ram"):
            raise BoardError(f"{where}: memory region {region.name} has kind '{region.kind}'; use 'flash' or 'ram'")
        if region.holds not in (None, "weights") or (region.holds and region.kind != "flash"):
            raise BoardError(
                f"{where}: memory region {region.name}: 'holds' can only be \"weights\", on a flash region"
            )
    hardware = data.get("hardware", {})
    board = Board(
        name=data.get("name", path.stem),
        description=data.get("description", ""),
        cpu=cpu,
        memory=memory,
        platform=data.get("platform"),
        uart=_peripheral(data.get("uart"), f"{where} [uart]"),
        timer=_peripheral(data.get("timer"), f"{where} [timer]"),
        qemu_machine=data.get("qemu", {}).get("machine"),
        qemu_args=_qemu_args(data.get("qemu", {}), where),
        zephyr_board=data.get("zephyr", {}).get("board"),
        zephyr_facts=_zephyr_facts(data.get("zephyr", {}), where),
        usb_ids=tuple(hardware.get("usb_ids", [])),
        runner=hardware.get("runner"),
        source=path,
    )
    for kind in ("flash", "ram"):  # both must exist
        board.region(kind)
    return board


# --board host: this computer. No firmware, no memory map; the system C compiler, generic C kernels.
HOST_BOARD = Board(
    name=HOST,
    description="this computer (the system C compiler)",
    cpu=Cpu(core="host", mcpu="native", fpu=None, float_abi="soft", features=frozenset(), clock_hz=0),
    memory=(),
)
