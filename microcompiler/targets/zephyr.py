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

from microcompiler import cleanup
from microcompiler.boards import Board, ZephyrBoardFacts, list_boards, resolve_board
from microcompiler.codegen.model_info import ModelInfo
from microcompiler.errors import BoardError, ToolchainError
from microcompiler.host import render_template
from microcompiler.targets.base import HOST_DRIVEN, STANDALONE, Log, Project, RunResult, Target, register
from microcompiler.targets.base import run_on_board as run_flow
from microcompiler.targets.files import BUILD_DIR, copy_runtime
from microcompiler.targets.footprint import check_fits
from microcompiler.targets.toolchain import BuildResult, check_can_build, measured_build, run_logged, tool_timeout

TEMPLATE = "zephyr"
DOCS = "docs/zephyr.md"
MIN_ZEPHYR = (3, 7)  # hardware model v2 board targets (mps2/an385, nrf5340dk/nrf5340/cpuapp, ...)
# Board targets renamed in a Zephyr release: (target before that release, first release with the name).
RENAMED_TARGETS = {"mps3/corstone300/an547": ("mps3/an547", (4, 0))}  # 4.0 migration guide
# Board targets Zephyr added after 3.7 LTS -> the name of the definition the project carries for
# trees without them (project_templates/zephyr/own_boards, copied to DIR/zephyr_boards: Zephyr's
# BOARD_ROOT and SOC_ROOT).
OWN_BOARDS = {"mps2/an386": "mps2_an386", "mps2/an500": "mps2_an500"}
OWN_BOARDS_DIR = "zephyr_boards"
REPORT_PERIOD_MS = 1000  # standalone firmware repeats its report, so a late reader still gets one
RX_BUFFER_BYTES = 4096  # receive ring buffer: more than two maximal request frames (docs/rpc.md)
# RAM Zephyr needs besides the model (kernel, idle and ISR stacks, drivers), for the fit check.
KERNEL_RAM_BYTES = 16 * 1024
# Every west call is bounded: a first Zephyr build (the kernel too) on a slow machine, a flash.
WEST_BUILD_TIMEOUT = 3600.0
WEST_FLASH_TIMEOUT = 300.0
WEST_TIMEOUT_VARIABLE = "MICROCOMPILER_WEST_TIMEOUT"  # seconds, overrides both
WEST_TIMEOUT_HINT = f"set {WEST_TIMEOUT_VARIABLE}=SECONDS to allow longer"


class ZephyrBoardError(BoardError):
    """The board has no Zephyr board target, or the Zephyr tree does not have it."""


class WestNotFoundError(ToolchainError):
    """west is not installed."""


class ZephyrBaseError(ToolchainError):
    """ZEPHYR_BASE is not set or is not a Zephyr tree."""


# ---- Boards ----


def known_boards() -> dict[str, ZephyrBoardFacts]:
    """Zephyr board target -> its facts, for every board file that gives them."""
    return {b.zephyr_board: b.zephyr_facts for b in list_boards() if b.zephyr_board and b.zephyr_facts}


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
    zephyr_target(board)
    if board.zephyr_facts is not None:
        return board.zephyr_facts
    return ZephyrBoardFacts(
        board.cpu.has_fpu, False, f"derived from {board.source} (not a board microcompiler has checked against Zephyr)"
    )


def uses_timing_api(board: Board) -> bool:
    """Hardware boards time with Zephyr's timing API (the DWT cycle counter on Cortex-M); QEMU has no DWT."""
    return not board.emulated


def main_stack_bytes(info: ModelInfo, mode: str) -> int:
    """CONFIG_MAIN_STACK_SIZE for a model.

    Tensors live in static buffers and the operator functions keep only scalars on the stack, so
    the stack holds Zephyr's own frames, the report or the RPC server (whose buffers are static),
    one operator call, and for float models the libm calls (expf) and the FP context.
    """
    size = 3072 if mode == STANDALONE else 4096
    if info.has_float_io:
        size += 1024
    size += 64 * max((len(op.inputs) + len(op.outputs) for op in info.operators), default=0)
    return -(-size // 256) * 256


# ---- Zephyr workspace ----


def require_west() -> str:
    west = shutil.which("west")
    if west is None:
        raise WestNotFoundError(
            f"'west' is not on PATH; install west: pip install west, and set up a workspace: see {DOCS}"
        )
    return west


def zephyr_base() -> Path:
    value = os.environ.get("ZEPHYR_BASE")
    if not value:
        raise ZephyrBaseError(
            f"ZEPHYR_BASE is not set; export ZEPHYR_BASE=<west workspace>/zephyr (or source "
            f"zephyr/zephyr-env.sh in your workspace): see {DOCS}"
        )
    base = Path(value).expanduser()
    if not (base / "VERSION").is_file():
        raise ZephyrBaseError(
            f"ZEPHYR_BASE={value} is not a Zephyr tree (it has no VERSION file); point it at "
            f"the zephyr directory of your west workspace: see {DOCS}"
        )
    return base


def zephyr_version(base: Path) -> tuple[int, int]:
    text = (base / "VERSION").read_text()
    fields = dict(re.findall(r"^\s*(VERSION_MAJOR|VERSION_MINOR)\s*=\s*(\d+)", text, re.M))
    if len(fields) != 2:
        raise ZephyrBaseError(f"cannot read the Zephyr version from {base / 'VERSION'}: see {DOCS}")
    return int(fields["VERSION_MAJOR"]), int(fields["VERSION_MINOR"])


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
    version = zephyr_version(base)
    if version < MIN_ZEPHYR:
        raise ZephyrBaseError(
            f"Zephyr {version[0]}.{version[1]} at {base} is too old; microcompiler needs Zephyr "
            f"{MIN_ZEPHYR[0]}.{MIN_ZEPHYR[1]} LTS or newer (hardware model v2 board names): "
            f"see {DOCS}"
        )
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


def ccache_environment(project_dir: Path, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for ``west build``, so that ccache (which Zephyr uses when it is installed)
    reuses what another project built for the same board: the C library and the kernel.

    Each project's build directory appears in every compile command (``-imacros <build>/.../autoconf.h``,
    ``-isystem <build>/modules/picolibc/...``); CCACHE_BASEDIR makes the paths under the project
    relative, and CCACHE_NOHASHDIR leaves the compiler's working directory (the build directory) out
    of the hash that ``-g`` puts it in. The debug information then names the directory of the build
    that filled the cache. A user's own CCACHE_BASEDIR / CCACHE_NOHASHDIR win (docs/zephyr.md).
    """
    env = dict(os.environ if environ is None else environ)
    env.setdefault("CCACHE_BASEDIR", str(Path(project_dir).resolve()))
    env.setdefault("CCACHE_NOHASHDIR", "true")
    return env


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

    # ---- create ----

    def check_board(self, board: Board) -> None:
        zephyr_target(board)

    def default_stack_bytes(self, info: ModelInfo, mode: str) -> int:
        return main_stack_bytes(info, mode)

    def check_fits(self, info: ModelInfo, board: Board, executor: str, mode: str, stack_bytes: int) -> None:
        # Zephyr links the weights with the code, into the devicetree's zephyr,flash region: a board
        # region that holds only the bare-metal project's weights (AN547's SRAM) does not count here.
        zephyr_layout = dataclasses.replace(
            board, memory=tuple(r for r in board.memory if getattr(r, "holds", None) != "weights")
        )
        check_fits(info, zephyr_layout, "graph" if mode == HOST_DRIVEN else executor, stack_bytes + KERNEL_RAM_BYTES)

    def project_info(self, board: Board) -> dict:
        return {"zephyr_board": zephyr_target(board)}

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
            rx_buffer_bytes=RX_BUFFER_BYTES,
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
        """``west build`` the project; returns the firmware sizes."""
        check_can_build(project.dir)
        west = require_west()
        base = zephyr_base()
        target = west_board_target(project.board, base)
        build_dir = project.dir / BUILD_DIR
        log(f"building {project.dir.name} for {target} with west (Zephyr at {base})")
        run_logged(
            [west, "build", "-p", "auto", "-b", target, "-d", str(build_dir), str(project.dir)],
            log,
            "west build",
            tool_timeout(WEST_TIMEOUT_VARIABLE, WEST_BUILD_TIMEOUT),
            WEST_TIMEOUT_HINT,
            env=ccache_environment(project.dir),
        )
        elf = self.elf(project)
        if not elf.is_file():
            raise ToolchainError(f"west build finished but {elf} is missing; see the build output above")
        return measured_build(project.board, elf, log)

    # ---- run ----

    def load(self, project: Project, log: Log = print) -> None:
        """``west flash`` a hardware board (emulated boards load the firmware when QEMU starts)."""
        board = project.board
        if board.emulated:
            return
        west = require_west()
        zephyr_base()
        cmd = [west, "flash", "-d", str(project.dir / BUILD_DIR)]
        if board.runner:
            cmd += ["-r", board.runner]
        log(f"flashing {board.name} with west flash" + (f" ({board.runner})" if board.runner else ""))
        timeout = tool_timeout(WEST_TIMEOUT_VARIABLE, WEST_FLASH_TIMEOUT)
        try:
            proc = cleanup.run_bounded(cmd, timeout, "west flash", text=True)
        except ToolchainError as exc:  # the timeout: one line, with how to allow longer
            raise ToolchainError(f"{exc}; is the board plugged in? ({WEST_TIMEOUT_HINT})") from None
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-30:])
            raise ToolchainError(
                f"west flash failed (exit {proc.returncode}); is the board plugged in and its "
                f"runner ({board.runner or 'the board default'}) installed?\n{tail}"
            )

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
    "WestNotFoundError",
    "ZephyrBaseError",
    "ZephyrBoardFacts",
]
