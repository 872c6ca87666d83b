"""Board descriptions: one TOML file per board in boards/ (see docs/porting.md for the format), or
any Cortex-M board target of the Zephyr workspace, described from Zephyr's own Kconfig and
devicetree (microcompiler.zephyr.board_facts; docs/zephyr.md, "Any Zephyr board").

A board says which CPU it has (compiler flags and features the kernels may use), where its flash
and RAM are, which console UART and timer the bare-metal platform drives, and how to reach it:
a QEMU machine when it is emulated, a USB VID:PID and a flash runner when it is real hardware.
"""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from microcompiler import resources
from microcompiler.errors import BoardError
from microcompiler.ops.features import core_features

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


def resolve_board(name: str | Board, zephyr_base: str | Path | None = None) -> Board:
    """The board a command line names: ``host`` (this computer) or a board as in load_board."""
    if isinstance(name, Board):
        return name
    return HOST_BOARD if name == HOST else load_board(name, zephyr_base)


ZEPHYR_TARGET = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@/-]*")


def load_board(name: str, zephyr_base: str | Path | None = None) -> Board:
    """The board called ``name``: a file name in boards/ without .toml, a path to a TOML file, or
    else a Zephyr board target (``nucleo_l4r5zi``, ``nrf5340dk/nrf5340/cpuapp``) of the Zephyr
    workspace (``zephyr_base``, else $ZEPHYR_BASE or the recorded one: microcompiler.zephyr.workspace)."""
    if name == HOST:
        raise BoardError(
            "'host' is this computer, not a board with a firmware project; "
            "use it as 'microcompiler run MODEL --board host'"
        )
    path = Path(name)
    if path.suffix == ".toml" and path.is_file():
        return load_board_file(path)
    files = _board_files()
    if name in files:
        return load_board_file(files[name])
    known = ", ".join([HOST, *files])
    if not ZEPHYR_TARGET.fullmatch(name) or path.suffix == ".toml":
        raise BoardError(f"unknown board '{name}'; known boards: {known}")
    from microcompiler.zephyr import workspace

    try:
        base = workspace.zephyr_base(zephyr_base)
    except workspace.ZephyrBaseError as exc:
        if zephyr_base:
            raise
        raise BoardError(
            f"unknown board '{name}'; known boards: {known}, or any Cortex-M board of a Zephyr "
            f"workspace (none found: {str(exc).split('; ', 1)[0].removeprefix('no Zephyr workspace found: ')}; "
            "give --zephyr-base <workspace>/zephyr)"
        ) from None
    from microcompiler.zephyr import board_facts

    try:
        return zephyr_board(name, base)
    except board_facts.UnknownZephyrBoardError as exc:
        raise BoardError(f"unknown board '{name}'; known boards: {known}; nor is it a Zephyr board: {exc}") from None


def zephyr_board(target: str, zephyr_base: str | Path) -> Board:
    """The Zephyr board ``target`` of the workspace ``zephyr_base`` as a Board (Zephyr projects only)."""
    from microcompiler.zephyr import board_facts

    return board_from_description(board_facts.describe(target, Path(zephyr_base)))


# -mfpu= for each core with an FPU, by precision ("auto": the -mcpu's own FPU, as for Armv8.1-M)
FPU_FLAGS = {
    ("cortex-m4", "single"): "fpv4-sp-d16",
    ("cortex-m7", "single"): "fpv5-sp-d16",
    ("cortex-m7", "double"): "fpv5-d16",
    ("cortex-m33", "single"): "fpv5-sp-d16",
    ("cortex-m35p", "single"): "fpv5-sp-d16",
}

# Debug probes' USB VID:PIDs (their virtual COM port carries the console), by probe
PROBE_USB_IDS = {
    "st-link": ("0483:3748", "0483:374b", "0483:374e", "0483:374f", "0483:3752", "0483:3753"),
    "j-link": ("1366:0101", "1366:0105", "1366:1008", "1366:1015", "1366:1051", "1366:1055", "1366:1061"),
    "cmsis-dap": ("0d28:0204",),  # Arm DAPLink (mbed interface)
    "mcu-link": ("1fc9:0143", "1fc9:0090"),  # NXP MCU-Link, LPC-Link2 (linkserver)
    "black-magic": ("1d50:6018",),
}
# The probe each flash runner talks to (openocd and friends serve several: the board's other runners decide)
RUNNER_PROBES = {
    "stm32cubeprogrammer": "st-link",
    "stlink": "st-link",
    "nrfjprog": "j-link",
    "nrfutil": "j-link",
    "jlink": "j-link",
    "pyocd": "cmsis-dap",
    "linkserver": "mcu-link",
    "blackmagicprobe": "black-magic",
}


def probe_usb_ids(runners: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The USB ids of the debug probe the board's runners (the default first) talk to."""
    for runner in runners:
        if runner in RUNNER_PROBES:
            return PROBE_USB_IDS[RUNNER_PROBES[runner]]
    return ()


def board_from_description(d) -> Board:
    """A Board of a ``microcompiler.zephyr.board_facts.ZephyrBoardDescription``: its CPU flags and
    the features the kernels use ("dsp", "fpu", "fpu_dp", "mve"), the chosen flash and RAM."""
    fpu = None if d.fpu == "none" else FPU_FLAGS.get((d.core, d.fpu), "auto")
    mcpu = d.core
    if d.core in ("cortex-m33", "cortex-m35p", "cortex-m55", "cortex-m85", "cortex-m52"):
        # GCC's -mcpu for these has the DSP extension, an FPU (and Helium) unless told otherwise
        mcpu += "" if d.dsp else "+nodsp"
        if d.core in ("cortex-m55", "cortex-m85", "cortex-m52"):
            mcpu += {"none": "+nomve", "int": "+nomve.fp", "float": ""}[d.mve]
        mcpu += "" if fpu else "+nofp"
    features = set()
    if d.dsp:
        features.add("dsp")
    if fpu:
        features.add("fpu")
        if d.fpu == "double":
            features.add("fpu_dp")
    if d.mve == "float" or (d.mve == "int" and not fpu):  # the float kernels' Helium is MVE-F
        features.add("mve")
    fpu_name = {"none": "", "single": "F", "double": "F (double)"}[d.fpu]
    clock = f" at {d.clock_hz / 1e6:g} MHz" if d.clock_hz else ""
    runners = (d.runner, *d.runners) if d.runner else d.runners
    return Board(
        name=d.target,
        description=f"Zephyr board {d.target} ({d.soc}), {d.core.capitalize()}{fpu_name}{clock}",
        cpu=Cpu(
            core=d.core,
            mcpu=mcpu,
            fpu=fpu,
            float_abi="hard" if fpu else "soft",
            features=core_features(d.core, features),
            clock_hz=d.clock_hz or 0,
        ),
        memory=(
            MemoryRegion("FLASH", "flash", d.flash_origin, d.flash_size),
            MemoryRegion("RAM", "ram", d.ram_origin, d.ram_size),
        ),
        platform=None,
        qemu_machine=d.qemu_machine,
        zephyr_board=d.target,
        zephyr_facts=ZephyrBoardFacts(d.fpu != "none", d.entropy, d.source),
        usb_ids=() if d.qemu_machine else probe_usb_ids(runners),
        runner=None if d.qemu_machine else d.runner,
        source=None,
    )


def board_toml(board: Board) -> str:
    """A board file (the format load_board_file reads) that describes ``board``: what a project keeps
    as its board.toml when the board was described from Zephyr rather than read from a file."""

    def q(text: str) -> str:
        return json.dumps(text)  # a TOML basic string is a JSON string

    cpu = board.cpu
    lines = [f"name = {q(board.name)}", f"description = {q(board.description)}"]
    if board.platform:
        lines.append(f"platform = {q(board.platform)}")
    lines += ["", "[cpu]", f"core = {q(cpu.core)}", f"mcpu = {q(cpu.mcpu)}"]
    if cpu.fpu:
        lines.append(f"fpu = {q(cpu.fpu)}")
    lines += [
        f"float_abi = {q(cpu.float_abi)}",
        f"features = [{', '.join(q(f) for f in sorted(cpu.features))}]",
        f"clock_hz = {cpu.clock_hz}",
    ]
    for r in board.memory:
        lines += [
            "",
            "[[memory]]",
            f"name = {q(r.name)}",
            f"kind = {q(r.kind)}",
            f"origin = 0x{r.origin:08x}",
            f"size = 0x{r.size:08x}",
        ]
        if r.holds:
            lines.append(f"holds = {q(r.holds)}")
    if board.qemu_machine:
        lines += ["", "[qemu]", f"machine = {q(board.qemu_machine)}"]
    if board.zephyr_board:
        lines += ["", "[zephyr]", f"board = {q(board.zephyr_board)}"]
        if board.zephyr_facts:
            facts = board.zephyr_facts
            lines += [
                f"fpu = {str(facts.fpu).lower()}",
                f"entropy = {str(facts.entropy).lower()}",
                f"source = {q(facts.source)}",
            ]
    if board.usb_ids or board.runner:
        lines += ["", "[hardware]", f"usb_ids = [{', '.join(q(u) for u in board.usb_ids)}]"]
        if board.runner:
            lines.append(f"runner = {q(board.runner)}")
    return "\n".join(lines) + "\n"


def write_board_file(board: Board, path: str | Path) -> None:
    """Keep ``board`` as a board file at ``path``: a copy of its TOML, else one made by board_toml."""
    if board.source is not None:
        shutil.copyfile(board.source, path)
    else:
        Path(path).write_text(board_toml(board), encoding="utf-8")


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
            features=core_features(cpu_table["core"], cpu_table.get("features", [])),
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
