"""Bare-metal firmware projects: CMake + Ninja + arm-none-eabi-gcc, crt/platform/<family>.

``create`` writes (from project_templates/baremetal, see docs/porting.md)::

    DIR/microcompiler-project.json   what the project is: model, board, template, executor
    DIR/board.toml                   a copy of the board description
    DIR/CMakeLists.txt               CMake + Ninja build
    DIR/arm-none-eabi.cmake          the toolchain file
    DIR/linker.ld                    generated from the board's memory regions
    DIR/src/main.c                   standalone main (fixed input, timed inference, report) or RPC server
    DIR/inputs/input<k>.npy          the input compiled into main.c
    DIR/host_driven.json             host-driven mode: the plan the host walks
    DIR/model/                       the model library (microcompiler compile)
    DIR/crt/                         the runtime: include/, src/, platform/<family>/

``build`` runs cmake and ninja; ``flash`` runs the firmware in QEMU (emulated boards) and decodes
the report it prints.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from microcompiler.boards import Board
from microcompiler.ccache import ccache_environment, compiler_launcher
from microcompiler.errors import BoardError, MicrocompilerError, ToolchainError
from microcompiler.host import render_template
from microcompiler.targets.base import HOST_DRIVEN, Log, Project, Target, quiet, register, why
from microcompiler.targets.files import BUILD_DIR, copy_runtime
from microcompiler.targets.toolchain import (
    BUILD_LOG,
    BuildResult,
    check_can_build,
    measured_build,
    require_tool,
    run_logged,
    tool_timeout,
)

FIRMWARE = "firmware.elf"
CONFIGURE_TIMEOUT = 300.0  # seconds cmake may take to configure
BUILD_TIMEOUT = 1800.0  # seconds ninja may take (a large model's C on a slow machine)
TIMEOUT_VARIABLE = "MICROCOMPILER_BUILD_TIMEOUT"  # overrides both
TIMEOUT_HINT = f"set {TIMEOUT_VARIABLE}=SECONDS to allow longer"


def platform_definitions(board: Board) -> list[str]:
    """The compile definitions that tell crt/platform/<family> about the board's peripherals."""
    if board.platform != "cmsdk":
        raise BoardError(
            f"board {board.name}: platform family '{board.platform}' has no bare-metal support (known: cmsdk)"
        )
    uart, timer = board.uart, board.timer
    if uart is None or uart.kind != "cmsdk":
        raise BoardError(f"board {board.name}: the cmsdk platform needs a [uart] of kind 'cmsdk' in {board.source}")
    defs = [
        f"MC_UART_BASE=0x{uart.base:08x}u",
        f"MC_UART_CLOCK_HZ={board.cpu.clock_hz}u",
        f"MC_UART_BAUD={int(uart.get('baud', 115200))}u",
    ]
    if timer is None or "hz" not in timer.settings:
        raise BoardError(f"board {board.name}: the cmsdk platform needs a [timer] with 'hz' in {board.source}")
    defs += [f"MC_TIMER_BASE=0x{timer.base:08x}u", f"MC_TIMER_HZ={int(timer.get('hz'))}u"]
    if timer.kind == "cmsdk":
        defs.append("MC_TIMER_CMSDK=1")
    elif timer.kind == "sse_system_timer":
        if "counter_base" not in timer.settings:
            raise BoardError(f"board {board.name}: an sse_system_timer needs 'counter_base' in {board.source}")
        defs += ["MC_TIMER_SSE_SYSTEM=1", f"MC_TIMER_COUNTER_BASE=0x{int(timer.get('counter_base')):08x}u"]
    else:
        raise BoardError(
            f"board {board.name}: timer kind '{timer.kind}' is not supported by the cmsdk "
            "platform (supported: cmsdk, sse_system_timer)"
        )
    defs.append(f"MC_HAS_FPU={1 if board.cpu.has_fpu else 0}")
    return defs


def _cmake_cache_entry(build_dir: Path, key: str) -> str | None:
    try:
        text = (build_dir / "CMakeCache.txt").read_text(errors="replace")
    except OSError:
        return None
    found = re.search(rf"^{key}:\w+=(.*)$", text, re.MULTILINE)
    return found.group(1).strip() if found else None


def _same_directory(a: str, b: Path) -> bool:
    try:
        return os.path.realpath(a) == str(b.resolve()) or os.path.samefile(a, b)
    except OSError:
        return False


def _check_build_dir(project: Project, build_dir: Path, log: Log) -> None:
    """A copied or moved project must build its own sources, not the ones CMake's cache points at."""
    source = _cmake_cache_entry(build_dir, "CMAKE_HOME_DIRECTORY")
    if source is None or _same_directory(source, project.dir):
        return
    if _cmake_cache_entry(build_dir, "CMAKE_PROJECT_NAME") != f"{project.model}_firmware":
        raise MicrocompilerError(
            f"{build_dir} holds a CMake build of {source}, not of this project; remove "
            "it (or move it away) and build again"
        )
    log(f"{project.dir.name} was copied or moved from {Path(source)}; configuring a fresh build directory")
    try:
        shutil.rmtree(build_dir)
    except OSError as exc:
        raise MicrocompilerError(f"cannot remove the stale build directory {build_dir}: {why(exc)}") from None


@register
class BareMetal(Target):
    name = "baremetal"
    template_folder = "baremetal"  # a variant that subclasses this one keeps these templates
    several_models = True

    def check_board(self, board: Board) -> None:
        if board.platform is None:
            raise BoardError(f"board {board.name} has no bare-metal platform family; use --template zephyr")
        platform_definitions(board)

    def check_sequence(self, mode: str) -> None:
        """Both modes run a sequence: standalone firmware runs its input sets in order."""

    def definitions(self, board: Board) -> list[str]:
        """The compile definitions the board's platform family reads."""
        return platform_definitions(board)

    def fill(self, stage: Path, values: dict, stack_bytes: int) -> None:
        board = values["board"]
        template_dir = self.template_dir
        copy_runtime(stage, board.platform)
        sources = sorted(
            p.relative_to(stage).as_posix()
            for pattern in (
                "model/src/*.c",
                "models/*/src/*.c",
                "src/models.c",
                "crt/src/*.c",
                f"crt/platform/{board.platform}/*.c",
            )
            for p in stage.glob(pattern)
        )
        values = dict(
            values,
            board_file=f"boards/{board.source.name}",
            flash=board.flash,
            ram=board.ram,
            weights=board.weights_region,
            stack_bytes=stack_bytes,
            cflags=board.cpu.cflags,
            definitions=self.definitions(board),
            sources=sources,
        )
        values.setdefault("include_dirs", ["model/include"])
        main_template = self.main_template(values, "rpc_main.c.j2")
        (stage / "src" / "main.c").write_text(render_template(template_dir, main_template, **values))
        (stage / "linker.ld").write_text(render_template(template_dir, "linker.ld.j2", **values))
        (stage / "CMakeLists.txt").write_text(render_template(template_dir, "CMakeLists.txt.j2", **values))
        shutil.copyfile(template_dir / "arm-none-eabi.cmake", stage / "arm-none-eabi.cmake")

    def elf(self, project: Project) -> Path:
        return project.dir / BUILD_DIR / FIRMWARE

    def build(self, project: Project, log: Log = print) -> BuildResult:
        """Configure (once) and build the project with CMake and Ninja; returns the firmware sizes."""
        check_can_build(project.dir)
        cmake = require_tool("cmake", "install CMake 3.20 or newer (Debian: apt-get install cmake)")
        require_tool("ninja", "install Ninja (Debian: apt-get install ninja-build)")
        require_tool(
            "arm-none-eabi-gcc",
            "install the GNU Arm Embedded toolchain "
            "(Debian: apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi)",
        )
        build_dir = project.dir / BUILD_DIR
        _check_build_dir(project, build_dir, log)
        build_log = build_dir / BUILD_LOG  # the whole output of this build's steps
        configured = not (build_dir / "build.ninja").is_file()
        if configured:
            log(f"configuring {project.dir.name} for {project.board.name} (cmake)")
            run_logged(
                [cmake, "-G", "Ninja", "-S", str(project.dir), "-B", str(build_dir), *compiler_launcher()],
                quiet,
                "cmake",
                tool_timeout(TIMEOUT_VARIABLE, CONFIGURE_TIMEOUT),
                TIMEOUT_HINT,
                env=ccache_environment(project.dir),
                log_file=build_log,
            )
        log(f"building {project.dir.name} (ninja)")
        run_logged(
            ["ninja", "-C", str(build_dir)],
            log,
            "ninja",
            tool_timeout(TIMEOUT_VARIABLE, BUILD_TIMEOUT),
            TIMEOUT_HINT,
            env=ccache_environment(project.dir),
            log_file=build_log,
            append=configured,
        )
        return measured_build(project.board, project.elf, log)

    def load(self, project: Project, log: Log = print) -> None:
        # Host-driven firmware on a hardware board is flashed by the user; it is reached on its port.
        if not project.board.emulated and project.mode != HOST_DRIVEN:
            raise ToolchainError(
                f"flashing the hardware board {project.board.name} (runner "
                f"{project.board.runner}) is not supported yet; it comes with the Zephyr template"
            )
