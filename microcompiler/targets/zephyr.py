"""Zephyr projects: a model as a Zephyr application for any board with a Zephyr board target.

``create`` writes (from project_templates/zephyr, see docs/zephyr.md)::

    DIR/microcompiler-project.json   model, board, template "zephyr", Zephyr board target, mode
    DIR/board.toml                   a copy of the board description
    DIR/CMakeLists.txt               find_package(Zephyr), the model library, crt, platform hooks
    DIR/prj.conf                     Kconfig: C library, -O2, interrupt-driven UART, main stack
    DIR/boards/<target>.conf         per-board Kconfig (FPU, timing API, entropy driver)
    DIR/legacy_zephyr.conf           Kconfig added by CMakeLists.txt on Zephyr before 4.1 only
    DIR/src/main.c                   standalone main (fixed input, report) or the RPC server
    DIR/inputs/input<k>.npy          the input compiled into the standalone main
    DIR/host_driven.json             host-driven mode: the plan the host walks
    DIR/model/, DIR/crt/             the model library and the runtime (platform/zephyr only)

``build`` runs ``west build``; ``flash`` loads the firmware (``west flash``, or QEMU for emulated
boards) and runs it once. Emulated boards run in QEMU through microcompiler's own transport rather
than ``west build -t run``: Zephyr's run target multiplexes the QEMU monitor onto the console
(``-chardev ...,mux=on`` in cmake/emu/qemu.cmake), where the Ctrl-A bytes of binary RPC traffic
would be taken as monitor commands, and Zephyr's mps2/an386 and mps2/an500 declare only the FVP.

What Zephyr's Kconfig needs to know of a board (FPU, entropy source) is in the board file's
``[zephyr]`` table (microcompiler.boards.ZephyrBoardFacts), checked in Zephyr's source.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from pathlib import Path
from typing import ClassVar

from microcompiler.boards import Board, ZephyrBoardFacts, board_from_description, list_boards, resolve_board
from microcompiler.ccache import ccache_environment
from microcompiler.codegen.model_info import ModelInfo
from microcompiler.errors import BoardError, ToolchainError
from microcompiler.host import render_template
from microcompiler.targets.base import HOST_DRIVEN, STANDALONE, Log, Project, RunResult, Target, register
from microcompiler.targets.base import run_on_board as run_flow
from microcompiler.targets.files import BUILD_DIR, copy_runtime
from microcompiler.targets.footprint import check_fits
from microcompiler.targets.toolchain import (
    BUILD_LOG,
    BuildResult,
    check_can_build,
    measured_build,
    run_logged,
    tool_timeout,
)
from microcompiler.targets.zephyr_memory import (
    STANDALONE_RX_BUFFER_BYTES,
    base_stack_bytes,
    kernel_ram_bytes,
    small_board,
)
from microcompiler.zephyr import board_facts as board_facts_module
from microcompiler.zephyr import workspace
from microcompiler.zephyr.workspace import (
    ZephyrBaseError,
    build_environment,
    check_version,
    require_build_tools,
    require_west,
)

TEMPLATE = "zephyr"
DOCS = "docs/zephyr.md"
# Board targets renamed in a Zephyr release: (target before that release, first release with the name).
RENAMED_TARGETS = {"mps3/corstone300/an547": ("mps3/an547", (4, 0))}  # 4.0 migration guide
# Board targets Zephyr added after 3.7 LTS -> the name of the definition the project carries for
# trees without them (project_templates/zephyr/own_boards, copied to DIR/zephyr_boards: Zephyr's
# BOARD_ROOT and SOC_ROOT).
OWN_BOARDS = {"mps2/an386": "mps2_an386", "mps2/an500": "mps2_an500"}
OWN_BOARDS_DIR = "zephyr_boards"
FLASH_LOG = "microcompiler-flash.log"  # in the build folder: the last west flash's output
REPORT_PERIOD_MS = 1000  # standalone firmware repeats its report, so a late reader still gets one
RX_BUFFER_BYTES = 4096  # receive ring buffer: more than two maximal request frames (docs/rpc.md)
RX_BUFFER_PER_PAYLOAD = RX_BUFFER_BYTES // 1024  # ... of MC_RPC_MAX_PAYLOAD (1024 by default)
SMALL_BOARD_RPC_MAX_PAYLOAD = 256  # MC_RPC_MAX_PAYLOAD: the host splits its writes and reads to it
# RPC server's own static buffers besides the pool (mc_rpc_server_t): about 2.5 KB with 1024-byte
# payloads (docs/rpc.md); scaled with the payload
RPC_SERVER_BYTES_PER_PAYLOAD = 3
RPC_SERVER_FIXED_BYTES = 512
# The host-driven pool's room for the user's own buffers beyond the model's tensors (DEFAULT_POOL_HEADROOM
# elsewhere): less on a small board
SMALL_BOARD_POOL_HEADROOM = 512
# Every west call is bounded: a first Zephyr build (the kernel too) on a slow machine, a flash.
WEST_BUILD_TIMEOUT = 3600.0
WEST_FLASH_TIMEOUT = 300.0
WEST_TIMEOUT_VARIABLE = "MICROCOMPILER_WEST_TIMEOUT"  # seconds, overrides both
WEST_TIMEOUT_HINT = f"set {WEST_TIMEOUT_VARIABLE}=SECONDS to allow longer"


class ZephyrBoardError(BoardError):
    """The board has no Zephyr board target, or the Zephyr tree does not have it."""


# ---- Boards ----


def known_boards() -> dict[str, ZephyrBoardFacts]:
    """Zephyr board target -> its facts: of every board the workspace has described so far (read from
    its devicetree and Kconfig, microcompiler/zephyr/board_facts.py), and of every board file that
    gives them (those win: checked in Zephyr's source)."""
    described: dict[str, ZephyrBoardFacts] = {}
    base = found_base()
    if base is not None:
        for d in board_facts_module.cached(base):
            facts = board_from_description(d).zephyr_facts
            if facts is not None:
                described[d.target] = facts
    files = {b.zephyr_board: b.zephyr_facts for b in list_boards() if b.zephyr_board and b.zephyr_facts}
    return {**described, **files}


def __getattr__(name: str):
    if name == "KNOWN_BOARDS":  # read from boards/*.toml when asked, so a new board file counts at once
        return known_boards()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def zephyr_target(board: Board) -> str:
    """The board's Zephyr board target (hardware model v2, e.g. ``nrf5340dk/nrf5340/cpuapp``)."""
    if not board.zephyr_board:
        raise ZephyrBoardError(
            f'board {board.name} has no Zephyr board name; add [zephyr] board = "<Zephyr board target>" '
            f"to {board.source} if Zephyr supports it, or use --template baremetal"
        )
    return board.zephyr_board


def board_file_stem(target: str) -> str:
    """Zephyr's file name for a board target in an application's boards/ ('/' becomes '_')."""
    return target.replace("/", "_")


def board_facts(board: Board) -> ZephyrBoardFacts:
    """What Zephyr's Kconfig needs of ``board``: its own (a board file's [zephyr] table, or a board
    described from the workspace), else the workspace's description of its Zephyr board target, else
    derived from its CPU (not checked)."""
    target = zephyr_target(board)
    if board.zephyr_facts is not None:
        return board.zephyr_facts
    base = found_base()
    if base is not None:
        try:
            described = board_from_description(board_facts_module.describe(target, base)).zephyr_facts
        except BoardError:  # not a board of this workspace, or not describable: derive
            described = None
        if described is not None:
            return described
    return ZephyrBoardFacts(
        board.cpu.has_fpu, False, f"derived from {board.source} (not a board microcompiler has checked against Zephyr)"
    )


def rpc_max_payload(board: Board) -> int | None:
    """MC_RPC_MAX_PAYLOAD for the host-driven firmware on ``board``: None for the server's default (1024)."""
    return SMALL_BOARD_RPC_MAX_PAYLOAD if small_board(board) else None


def pool_headroom(board: Board) -> int:
    """The host-driven RPC pool's headroom on ``board`` (rpc_template_values' pool_headroom)."""
    from microcompiler.rpc.host_project import DEFAULT_POOL_HEADROOM

    return SMALL_BOARD_POOL_HEADROOM if small_board(board) else DEFAULT_POOL_HEADROOM


# QEMU machines whose Zephyr board ticks with the SysTick at SYS_CLOCK_HW_CYCLES_PER_SEC, which
# Zephyr's mps2 and mps3 SoCs set to 25 MHz; QEMU's SysTick counts at the machine's CPU clock
# (the board's clock_hz: 20 MHz on mps2-an521, 32 MHz on mps3-an547), so the board fragment says so,
# or k_cycle_get would count QEMU's cycles at Zephyr's rate and the times would be off.
QEMU_SYSTICK_MACHINES = frozenset({"mps2-an385", "mps2-an386", "mps2-an500", "mps2-an505", "mps2-an521", "mps3-an547"})


def qemu_systick_hz(board: Board) -> int | None:
    """CONFIG_SYS_CLOCK_HW_CYCLES_PER_SEC for an emulated board whose SysTick runs at QEMU's clock, else None."""
    if board.qemu_machine in QEMU_SYSTICK_MACHINES and board.cpu.clock_hz:
        return board.cpu.clock_hz
    return None


def uses_timing_api(board: Board) -> bool:
    """Hardware boards time with Zephyr's timing API (the DWT cycle counter on Cortex-M); QEMU has no DWT."""
    return not board.emulated


def main_stack_bytes(info: ModelInfo, mode: str, board: Board | None = None) -> int:
    """CONFIG_MAIN_STACK_SIZE for a model.

    Tensors live in static buffers and the operator functions keep only scalars on the stack, so
    the stack holds Zephyr's own frames, the report or the RPC server (whose buffers are static),
    one operator call, and for float models the libm calls (expf) and the FP context.
    """
    size = base_stack_bytes(mode, board)
    if info.has_float_io:
        size += 1024
    size += 64 * max((len(op.inputs) + len(op.outputs) for op in info.operators), default=0)
    return -(-size // 256) * 256


# ---- Zephyr workspace ----


def zephyr_base(explicit: str | Path | None = None, environ: dict[str, str] | None = None) -> Path:
    """The Zephyr tree to build with (microcompiler/zephyr/workspace.py says where it is looked for)."""
    return workspace.zephyr_base(explicit, environ)


def project_base(project: Project, explicit: str | Path | None = None) -> Path:
    """The workspace to build (or flash) ``project`` with: ``explicit`` (--zephyr-base), else the one
    the project was created with while it is still there, else the usual search."""
    if explicit:
        return workspace.zephyr_base(explicit)
    recorded = project.zephyr_base
    if recorded and (Path(recorded) / "VERSION").is_file():
        return workspace.check_tree(Path(recorded), f"the workspace {project.dir.name} was created with")
    return workspace.zephyr_base()


def found_base(explicit: str | Path | None = None) -> Path | None:
    """The workspace a new project records (create-project): ``explicit``, else the usual search;
    None when there is none yet (a project can be written without Zephyr; build will say so)."""
    if explicit:
        return workspace.zephyr_base(explicit)
    try:
        return workspace.zephyr_base()
    except ZephyrBaseError:
        return None


_BOARD_YML_NAME = re.compile(r"^\s*-?\s*name:\s*['\"]?([A-Za-z0-9_.+-]+)", re.M)


def board_names_in_tree(base: Path) -> set[str]:
    """Every board (and SoC, qualifier) name in the tree's boards/**/board.yml (hardware model v2)."""
    names: set[str] = set()
    for yml in (base / "boards").glob("**/board.yml"):
        names.update(_BOARD_YML_NAME.findall(yml.read_text(errors="replace")))
    return names


def tree_has_target(base: Path, target: str) -> bool:
    """Whether the tree's boards/**/board.yml has the board of ``target`` with each of its qualifiers
    (``mps2/an386``: a board.yml naming the board ``mps2`` that also names ``an386``)."""
    board, *qualifiers = target.split("/")
    for yml in (base / "boards").glob("**/board.yml"):
        names = set(_BOARD_YML_NAME.findall(yml.read_text(errors="replace")))
        if board in names and set(qualifiers) <= names:
            return True
    return False


def west_board_target(board: Board, base: Path) -> str:
    """The board target to pass to ``west build -b`` for this Zephyr tree."""
    target = zephyr_target(board)
    version = check_version(base)
    if target in RENAMED_TARGETS and version < RENAMED_TARGETS[target][1]:
        target = RENAMED_TARGETS[target][0]
    if target in OWN_BOARDS and not tree_has_target(base, target):
        return OWN_BOARDS[target]  # the definition in the project's zephyr_boards/
    names = board_names_in_tree(base)
    if names and target.split("/")[0] not in names:
        raise ZephyrBoardError(
            f"Zephyr {version[0]}.{version[1]} at {base} has no board '{target}' (board "
            f"{board.name}); update the workspace to a Zephyr that has it (west update): "
            f"see {DOCS}"
        )
    return target


# Zephyr 3.7's CMake splits the list of Kconfig fragments at spaces ("File not found: /tmp/my"),
# so an application in a folder whose path holds one does not configure (checked by hand:
# tests/test_zephyr_build.py builds the other characters microcompiler allows).
ZEPHYR_PATH_REFUSED = " "


def check_zephyr_path(path: Path, what: str) -> None:
    """Refuse, in one line, a project path that Zephyr's build cannot take (a space)."""
    bad = sorted({c for c in str(path) if c in ZEPHYR_PATH_REFUSED})
    if bad:
        shown = ", ".join("a space" if c == " " else repr(c) for c in bad)
        raise ToolchainError(
            f"{what} {str(path)!r} contains {shown}, which Zephyr's build cannot take (its CMake splits "
            f"the Kconfig file list there); choose a directory without spaces, e.g. {str(path).replace(' ', '_')!r}"
        )


def copy_own_board(dest: Path, name: str, source: Path) -> None:
    """The board definition ``name`` and its SoC (Zephyr's BOARD_ROOT and SOC_ROOT layout) into dest."""
    shutil.copytree(source / "boards" / "arm" / name, dest / "boards" / "arm" / name)
    shutil.copytree(source / "soc", dest / "soc")
    shutil.copyfile(source / "README.md", dest / "README.md")


# A whole report: its start, its end, nothing torn (a late reader may see the tail of one first).
_WHOLE_REPORT = rb"MC-BEGIN\r?\n(?:(?!MC-BEGIN).)*?MC-END[^\n]*\n"


def whole_reports(steps: int) -> re.Pattern:
    """One whole round of the standalone firmware's reports (it reports again and again): one report,
    or a sequence's ``steps`` reports in a row and MC-STEPS-END; or an abort. Nothing torn: a late
    reader may see the tail of an earlier round first."""
    if steps == 1:
        return re.compile(_WHOLE_REPORT + rb"|MC-ABORT[^\n]*\n", re.S)
    return re.compile(rb"(?:" + _WHOLE_REPORT + rb"){%d}MC-STEPS-END[^\n]*\n|MC-ABORT[^\n]*\n" % steps, re.S)


@register
class Zephyr(Target):
    name = TEMPLATE
    label = "Zephyr"
    several_models = True
    options: ClassVar[tuple[str, ...]] = (
        "zephyr_base",
    )  # create-project --zephyr-base: the workspace the project records
    _zephyr_base: str | Path | None = None  # of the project being created

    # ---- create ----

    def create(self, model, board: Board, out_dir: str | Path, *, zephyr_base: str | Path | None = None, **kwargs):
        """Target.create, refusing a directory Zephyr's build cannot take and recording the Zephyr
        workspace (``zephyr_base``, else the one found) in microcompiler-project.json."""
        check_zephyr_path(Path(os.path.abspath(Path(out_dir).expanduser())), "the project directory")
        self._zephyr_base = zephyr_base
        try:
            return super().create(model, board, out_dir, **kwargs)
        finally:
            self._zephyr_base = None

    def check_board(self, board: Board) -> None:
        zephyr_target(board)

    def default_stack_bytes(self, info: ModelInfo, mode: str, board: Board | None = None) -> int:
        return main_stack_bytes(info, mode, board)

    def receives(self, mode: str) -> bool:
        """Whether the firmware reads the console UART (all but the standalone report)."""
        return self.console_use(mode) != "standalone report"

    def rx_buffer_bytes(self, mode: str, board: Board) -> int:
        """MC_ZEPHYR_RX_BUFFER_BYTES: a few bytes where nothing is read, else RX_BUFFER_PER_PAYLOAD frames."""
        if not self.receives(mode):
            return STANDALONE_RX_BUFFER_BYTES
        return RX_BUFFER_PER_PAYLOAD * (rpc_max_payload(board) or 1024)

    def aot_arena_bytes(self, info: ModelInfo, mode: str) -> int:
        """Host-driven firmware also serves the model's own run (the MODEL request), whose static arena
        is linked beside the RPC pool."""
        return info.arena_bytes if mode == HOST_DRIVEN else 0

    def buffers_bytes(self, mode: str, board: Board) -> int:
        """The receive buffer and, host-driven, the RPC server's static buffers (for the fit check)."""
        size = self.rx_buffer_bytes(mode, board)
        if mode == HOST_DRIVEN:
            size += RPC_SERVER_FIXED_BYTES + RPC_SERVER_BYTES_PER_PAYLOAD * (rpc_max_payload(board) or 1024)
            size += pool_headroom(board)
        return size

    def check_fits(self, info: ModelInfo, board: Board, executor: str, mode: str, stack_bytes: int) -> None:
        # Zephyr links the weights with the code, into the devicetree's zephyr,flash region: a board
        # region that holds only the bare-metal project's weights (AN547's SRAM) does not count here.
        zephyr_layout = dataclasses.replace(
            board, memory=tuple(r for r in board.memory if getattr(r, "holds", None) != "weights")
        )
        check_fits(
            info,
            zephyr_layout,
            "graph" if mode == HOST_DRIVEN else executor,
            stack_bytes + kernel_ram_bytes(board) + self.buffers_bytes(mode, board) + self.aot_arena_bytes(info, mode),
        )

    def project_info(self, board: Board) -> dict:
        base = found_base(self._zephyr_base)
        return {"zephyr_board": zephyr_target(board), **({"zephyr_base": str(base)} if base else {})}

    def fill(self, stage: Path, values: dict, stack_bytes: int) -> None:
        board = values["board"]
        target = zephyr_target(board)
        copy_runtime(stage, TEMPLATE)
        portable = sorted(
            p.relative_to(stage).as_posix()
            for pattern in ("model/src/*.c", "models/*/src/*.c", "src/models.c", "crt/src/*.c")
            for p in stage.glob(pattern)
        )
        values = dict(
            values,
            zephyr_board=target,
            own_board=OWN_BOARDS.get(target),
            own_boards_dir=OWN_BOARDS_DIR,
            main_stack_bytes=stack_bytes,
            facts=board_facts(board),
            timing_api=uses_timing_api(board),
            portable_sources=portable,
            rx_buffer_bytes=self.rx_buffer_bytes(values["mode"], board),
            rpc_max_payload=rpc_max_payload(board) if values["mode"] == HOST_DRIVEN else None,
            qemu_timer_hz=qemu_systick_hz(board),
            **({"pool_headroom": pool_headroom(board)} if values["mode"] == HOST_DRIVEN else {}),
            report_period_ms=REPORT_PERIOD_MS,
            console_use=self.console_use(values["mode"]),
            reports_stack=self.reports_stack(values["mode"]),
        )
        template_dir = self.template_dir
        values.setdefault("include_dirs", ["model/include"])
        main_template = self.main_template(values, "host_driven_main.c.j2")
        (stage / "src" / "main.c").write_text(render_template(template_dir, main_template, **values))
        (stage / "CMakeLists.txt").write_text(render_template(template_dir, "CMakeLists.txt.j2", **values))
        (stage / "prj.conf").write_text(render_template(template_dir, "prj.conf.j2", **values))
        shutil.copyfile(template_dir / "legacy_zephyr.conf", stage / "legacy_zephyr.conf")
        (stage / "boards").mkdir()
        fragment = render_template(template_dir, "board.conf.j2", **values)
        stems = [board_file_stem(target)]
        if target in RENAMED_TARGETS:  # the same fragment under the board's name in older Zephyr
            stems.append(board_file_stem(RENAMED_TARGETS[target][0]))
        for stem in stems:
            (stage / "boards" / f"{stem}.conf").write_text(fragment)
        if target in OWN_BOARDS:
            copy_own_board(stage / OWN_BOARDS_DIR, OWN_BOARDS[target], template_dir / "own_boards")

    def check_sequence(self, mode: str) -> None:
        """Both modes run a sequence: standalone firmware runs its input sets in order (and, after a
        reset, again every REPORT_PERIOD_MS), as bare metal does."""

    def console_use(self, mode: str) -> str:
        """What the console UART carries (prj.conf's comments)."""
        return "standalone report" if mode == STANDALONE else "RPC protocol"

    def reports_stack(self, mode: str) -> bool:
        """Whether main() prints its stack high-water mark (prj.conf's comments)."""
        return mode == STANDALONE

    # ---- build ----

    def elf(self, project: Project) -> Path:
        return project.dir / BUILD_DIR / "zephyr" / "zephyr.elf"  # west build's output

    def build(self, project: Project, log: Log = print) -> BuildResult:
        """``west build`` the project; returns the firmware sizes. The workspace is the project's
        (project_base) and the toolchain the one workspace.build_environment picks, so nothing
        needs to be exported; the whole output goes to build/microcompiler-build.log."""
        check_can_build(project.dir)
        check_zephyr_path(project.dir, "the project directory")  # a project moved under such a path
        west = require_west()
        base = project_base(project)
        require_build_tools()
        env = ccache_environment(project.dir, build_environment(base))
        target = west_board_target(project.board, base)
        build_dir = project.dir / BUILD_DIR
        toolchain = env["ZEPHYR_TOOLCHAIN_VARIANT"]
        log(f"building {project.dir.name} for {target} with west (Zephyr at {base}, toolchain {toolchain})")
        run_logged(
            [west, "build", "-p", "auto", "-b", target, "-d", str(build_dir), str(project.dir)],
            log,
            "west build",
            tool_timeout(WEST_TIMEOUT_VARIABLE, WEST_BUILD_TIMEOUT),
            WEST_TIMEOUT_HINT,
            env=env,
            log_file=build_dir / BUILD_LOG,
        )
        elf = self.elf(project)
        if not elf.is_file():
            raise ToolchainError(f"west build finished but {elf} is missing; see {build_dir / BUILD_LOG}")
        return measured_build(project.board, elf, log)

    # ---- run ----

    def load(self, project: Project, log: Log = print) -> None:
        """``west flash`` a hardware board with its runner (emulated boards load the firmware when
        QEMU starts); the output goes to build/microcompiler-flash.log."""
        board = project.board
        if board.emulated:
            return
        west = require_west()
        base = project_base(project)
        runner = project.runner or board.runner
        build_dir = project.dir / BUILD_DIR
        cmd = [west, "flash", "-d", str(build_dir)] + (["-r", runner] if runner else [])
        log(f"flashing {board.name} with west flash" + (f" ({runner})" if runner else ""))
        try:
            run_logged(
                cmd,
                log,
                "west flash",
                tool_timeout(WEST_TIMEOUT_VARIABLE, WEST_FLASH_TIMEOUT),
                f"is the board plugged in? {WEST_TIMEOUT_HINT}",
                env=build_environment(base),
                log_file=build_dir / FLASH_LOG,
            )
        except ToolchainError as exc:
            if not exc.details:  # the timeout: one line that says it already
                raise
            raise ToolchainError(
                f"{str(exc).rstrip(':')}; is the board plugged in and its runner "
                f"({runner or 'the board default'}) installed?",
                details=exc.details,
            ) from None

    def device_name(self, project: Project, port: str | None) -> str:
        return f"{project.board.name} (Zephyr)"

    def report_pattern(self, steps: int) -> re.Pattern:
        return whole_reports(steps)

    def report_text(self, text: str, steps: int) -> str:
        match = whole_reports(steps).search(text.encode())
        return match.group(0).decode(errors="replace") if match else text


def run_on_board(
    model,
    board: str | Board,
    project_dir: str | Path,
    mode: str = STANDALONE,
    executor: str = "aot",
    input=None,
    log=print,
    timeout: float = 300.0,
    port: str | None = None,
) -> tuple[Project, BuildResult, RunResult]:
    """create + build + run, the whole Zephyr flow: (project, BuildResult, RunResult)."""
    return run_flow(
        model,
        resolve_board(board),
        project_dir,
        template=TEMPLATE,
        mode=mode,
        executor=executor,
        input=input,
        log=log,
        timeout=timeout,
        port=port,
    )


__all__ = [
    "Zephyr",
    "run_on_board",
    "zephyr_target",
    "west_board_target",
    "board_facts",
    "known_boards",
    "main_stack_bytes",
    "ZephyrBoardError",
    "zephyr_base",
    "check_zephyr_path",
    "rpc_max_payload",
]
