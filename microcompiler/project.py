"""Firmware projects: turn a model into a buildable project for a board, build it, run it.

``create_project`` compiles the model for the board's CPU, checks that it fits the board's flash
and RAM, and writes a self-contained project directory (nothing in it points back here)::

    DIR/microcompiler-project.json   what the project is: model, board, template, executor
    DIR/board.toml                   a copy of the board description
    DIR/CMakeLists.txt               CMake + Ninja build (template: project_templates/<template>)
    DIR/arm-none-eabi.cmake          the toolchain file
    DIR/linker.ld                    generated from the board's memory regions
    DIR/src/main.c                   standalone main: fixed input, timed inference, report
    DIR/inputs/input<k>.npy          the input compiled into main.c
    DIR/model/                       the model library (microcompiler compile)
    DIR/crt/                         the runtime: include/, src/, platform/<family>/

``build`` runs cmake and ninja; ``flash`` loads the firmware on the board (QEMU for emulated
boards) and returns the report it prints.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from microcompiler import cleanup, resources
from microcompiler.boards import Board, load_board, load_board_file
from microcompiler.codegen import ModelLibrary
from microcompiler.codegen.c_arrays import c_array, c_initializer
from microcompiler.errors import BoardError, DeviceError, MicrocompilerError, ToolchainError
from microcompiler.host import render_template
from microcompiler.inputs import check_input, load_inputs, random_inputs
from microcompiler.ir import c_type, np_dtype
from microcompiler.outdir import (check_output_dir, check_path_is_safe, listed_files, read_manifest,
                                  replace_output_dir)
from microcompiler.standalone import StandaloneResult, parse_reports

PROJECT_FILE = "microcompiler-project.json"
EXECUTORS = ("aot", "graph")
MODES = ("standalone", "host-driven")  # host-driven: an RPC server main (docs/rpc.md)
DEFAULT_STACK_BYTES = 8 * 1024
MIN_STACK_BYTES = 1024
FIRMWARE = "firmware.elf"

# Flash estimate besides weights and input: startup, platform, report, libc/libgcc pieces, plus
# each operator's code (measured on this project's kernels at -O2, rounded up).
RUNTIME_CODE_BYTES = 6 * 1024
OPERATOR_CODE_BYTES = 1024
GRAPH_EXECUTOR_CODE_BYTES = 2 * 1024
RUNTIME_RAM_BYTES = 1024  # libc's state, the executor's bookkeeping

Log = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


@dataclass
class Project:
    dir: Path
    board: Board
    template: str
    executor: str
    model: str
    metadata: dict
    stack_bytes: int
    mode: str = "standalone"

    @property
    def elf(self) -> Path:
        if self.template == "zephyr":  # west build's output (microcompiler.zephyr)
            return self.dir / "build" / "zephyr" / "zephyr.elf"
        return self.dir / "build" / FIRMWARE

    @classmethod
    def load(cls, project_dir: str | Path) -> "Project":
        try:
            project_dir = Path(project_dir).resolve()
            info_path = project_dir / PROJECT_FILE
            is_project = info_path.is_file()
        except (OSError, RuntimeError) as exc:  # a name too long; a loop of symbolic links (RuntimeError)
            raise MicrocompilerError(f"cannot open project {project_dir}: {_why(exc)}") from None
        if not is_project:
            raise MicrocompilerError(f"{project_dir} is not a microcompiler project (no {PROJECT_FILE}); "
                                     "make one with 'microcompiler create-project'")
        info = read_project_info(project_dir)
        try:
            metadata = json.loads((project_dir / "model" / "metadata.json").read_text())
        except (OSError, ValueError) as exc:
            raise MicrocompilerError(f"{project_dir / 'model' / 'metadata.json'} is missing or damaged ({_why(exc)}); "
                                     f"{_RECREATE}") from None
        if not isinstance(metadata, dict) or not all(k in metadata for k in ("name", "inputs", "outputs")):
            raise MicrocompilerError(f"{project_dir / 'model' / 'metadata.json'} is damaged (not a model "
                                     f"library's metadata); {_RECREATE}")
        return cls(project_dir, load_board_file(project_dir / "board.toml"), info["template"],
                   info["executor"], info["model"], metadata, info["stack_bytes"], info.get("mode", "standalone"))


_RECREATE = "recreate the project with 'microcompiler create-project'"
# The fields of microcompiler-project.json, with their types.
_PROJECT_FIELDS = {"model": str, "board": str, "template": str, "executor": str, "stack_bytes": int}


def _why(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def read_project_info(project_dir: Path) -> dict:
    """microcompiler-project.json, checked: a one-line error when it is unreadable or damaged."""
    info_path = project_dir / PROJECT_FILE
    try:
        info = json.loads(info_path.read_text())
    except (OSError, ValueError) as exc:
        raise MicrocompilerError(f"cannot read {info_path} ({_why(exc)}); {_RECREATE}") from None
    if not isinstance(info, dict):
        raise MicrocompilerError(f"{info_path} is damaged (not a JSON object); {_RECREATE}")
    for key, kind in _PROJECT_FIELDS.items():
        if not isinstance(info.get(key), kind) or isinstance(info.get(key), bool):
            raise MicrocompilerError(f"{info_path} is damaged ('{key}' is missing or not a {kind.__name__}); "
                                     f"{_RECREATE}")
    if info["executor"] not in EXECUTORS or info.get("mode", "standalone") not in MODES:
        raise MicrocompilerError(f"{info_path} is damaged (unknown executor or mode); {_RECREATE}")
    return info


@dataclass
class BuildResult:
    elf: Path
    flash_bytes: int  # text + rodata + the initial values of data
    ram_bytes: int  # data + bss + the stack region


@dataclass
class RunResult:
    outputs: list[np.ndarray]
    ticks: int
    hz: int
    stack_bytes: int | None  # stack high-water mark, when the firmware reports it
    log: str  # everything the firmware printed


# ---- Does it fit ----

def estimate_footprint(metadata: dict, executor: str, stack_bytes: int) -> dict:
    """Flash and RAM the firmware will need, estimated from metadata.json before building."""
    weights = metadata["params_bytes"]
    input_bytes = sum(t["bytes"] for t in metadata["inputs"])
    output_bytes = sum(t["bytes"] for t in metadata["outputs"])
    code = RUNTIME_CODE_BYTES + OPERATOR_CODE_BYTES * len(metadata["operators"])
    if executor == "graph":
        code += GRAPH_EXECUTOR_CODE_BYTES
        # the pool holds the arena, a copy of the inputs and the outputs
        activations = metadata["arena_bytes"] + input_bytes + output_bytes + 8 * (
            len(metadata["inputs"]) + len(metadata["outputs"]))
    else:
        activations = metadata["arena_bytes"]
    activations += metadata.get("scratch_bytes", 0)  # the kernels' shared scratch buffer (.bss)
    return {"weights": weights, "code": code + input_bytes, "flash": weights + code + input_bytes,
            "activations": activations + output_bytes, "stack": stack_bytes,
            "ram": activations + output_bytes + stack_bytes + RUNTIME_RAM_BYTES}


def check_fits(metadata: dict, board: Board, executor: str = "aot",
               stack_bytes: int = DEFAULT_STACK_BYTES) -> dict:
    """Raise BoardError when the model cannot fit the board; returns the estimate."""
    need = estimate_footprint(metadata, executor, stack_bytes)
    name = metadata["name"]
    flash, ram, weights = board.flash, board.ram, board.weights_region
    if need["weights"] > weights.size:
        raise BoardError(f"model {name} needs {need['weights']:,} B of flash for weights but board "
                         f"{board.name} has {weights.size:,} B ({weights.name})")
    if weights.name != flash.name:
        need["flash"] -= need["weights"]
        if need["flash"] > flash.size:
            raise BoardError(f"model {name} needs about {need['flash']:,} B of flash for code and input but "
                             f"board {board.name} has {flash.size:,} B ({flash.name})")
    elif need["flash"] > flash.size:
        raise BoardError(f"model {name} needs about {need['flash']:,} B of flash ({need['weights']:,} B of "
                         f"weights + {need['code']:,} B of code and input) but board {board.name} has "
                         f"{flash.size:,} B ({flash.name})")
    if need["ram"] > ram.size:
        raise BoardError(f"model {name} needs about {need['ram']:,} B of RAM ({need['activations']:,} B of "
                         f"activations and outputs + {need['stack']:,} B of stack) but board {board.name} has "
                         f"{ram.size:,} B ({ram.name})")
    return need


# ---- Create ----

def templates() -> list[str]:
    """Firmware project templates (the host template is microcompiler.host's, not a project)."""
    return sorted(p.name for p in resources.templates_dir().iterdir()
                  if p.is_dir() and p.name != "host" and (p / "CMakeLists.txt.j2").is_file())


def platform_definitions(board: Board) -> list[str]:
    """The compile definitions that tell crt/platform/<family> about the board's peripherals."""
    if board.platform != "cmsdk":
        raise BoardError(f"board {board.name}: platform family '{board.platform}' has no bare-metal "
                         "support (known: cmsdk)")
    uart, timer = board.uart, board.timer
    if uart is None or uart.kind != "cmsdk":
        raise BoardError(f"board {board.name}: the cmsdk platform needs a [uart] of kind 'cmsdk' in "
                         f"{board.source}")
    defs = [f"MC_UART_BASE=0x{uart.base:08x}u", f"MC_UART_CLOCK_HZ={board.cpu.clock_hz}u",
            f"MC_UART_BAUD={int(uart.get('baud', 115200))}u"]
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
        raise BoardError(f"board {board.name}: timer kind '{timer.kind}' is not supported by the cmsdk "
                         "platform (supported: cmsdk, sse_system_timer)")
    defs.append(f"MC_HAS_FPU={1 if board.cpu.has_fpu else 0}")
    return defs


def _resolve_inputs(inputs, metadata: dict) -> list[np.ndarray]:
    if inputs is None:
        return random_inputs(metadata["inputs"])
    if isinstance(inputs, (str, Path)):
        inputs = [inputs]
    if all(isinstance(x, (str, Path)) for x in inputs):
        return load_inputs([str(x) for x in inputs], metadata["inputs"])
    if len(inputs) != len(metadata["inputs"]):
        raise MicrocompilerError(f"the model has {len(metadata['inputs'])} input(s) but {len(inputs)} were given")
    return [check_input(np.asarray(arr), meta, f"input for '{meta['name']}'")
            for arr, meta in zip(inputs, metadata["inputs"])]


# Top-level names a project written before microcompiler-project.json listed its files can hold.
_LEGACY_PROJECT_ENTRIES = ("microcompiler-project.json", "board.toml", "CMakeLists.txt", "arm-none-eabi.cmake",
                           "linker.ld", "src/main.c", "inputs", "model", "crt", "host_driven.json", "prj.conf",
                           "legacy_zephyr.conf", "boards")
BUILD_DIR = "build"  # written by 'microcompiler build' (CMake or west), replaced with the project


def previous_project_files(directory: Path) -> set[str] | None:
    """What a previous create-project (and build) wrote in ``directory``, or None if it is no project."""
    try:
        info = json.loads((directory / PROJECT_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not all(k in info for k in ("model", "board", "template")):
        return None
    if "files" in info:
        files = read_manifest(info["files"], directory)
        return None if files is None else files | {BUILD_DIR}
    return {name for name in (*_LEGACY_PROJECT_ENTRIES, BUILD_DIR) if (directory / name).exists()}


def write_project_dir(out_dir: str | Path, fill: Callable[[Path], None], info: dict) -> Path:
    """Write a project with ``fill(staging_dir)`` and put it at out_dir, never losing the user's files.

    out_dir must be new, empty or a previous project (only the files that project's create-project
    and build wrote are replaced: see microcompiler.outdir). The path must suit CMake and the shell.
    """
    out_dir = check_output_dir(out_dir, "project directory")
    check_path_is_safe(Path(os.path.realpath(out_dir)), "the project directory")

    def fill_and_list(stage: Path) -> None:
        fill(stage)
        (stage / PROJECT_FILE).write_text(json.dumps(info, indent=2) + "\n")
        files = listed_files(stage)
        (stage / PROJECT_FILE).write_text(json.dumps({**info, "files": files}, indent=2) + "\n")

    return replace_output_dir(out_dir, fill_and_list, previous_project_files, "microcompiler project")


def _copy_runtime(project_dir: Path, family: str) -> None:
    crt = resources.crt_dir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(crt / "include", project_dir / "crt" / "include", ignore=ignore)
    shutil.copytree(crt / "src", project_dir / "crt" / "src", ignore=ignore)
    shutil.copytree(crt / "platform" / family, project_dir / "crt" / "platform" / family, ignore=ignore)


def create_project(model: str | Path | ModelLibrary, template: str, board: str | Board, out_dir: str | Path,
                   executor: str = "aot", input=None, stack_bytes: int = DEFAULT_STACK_BYTES,
                   mode: str = "standalone") -> Project:
    """Write a firmware project for ``model`` on ``board`` into ``out_dir`` (replaced if a project).

    ``model`` is a .tflite path or an already compiled library (compile it with the board's
    ``cpu.features``). ``input`` is None (a fixed seeded random input), .npy paths, or arrays.
    ``mode`` "host-driven" makes src/main.c an RPC server instead (rpc_main.c.j2, docs/rpc.md).
    """
    board = board if isinstance(board, Board) else load_board(board)
    known = templates()
    if template not in known:
        raise MicrocompilerError(f"unknown project template '{template}'; known templates: {', '.join(known)}")
    if executor not in EXECUTORS:
        raise MicrocompilerError(f"unknown executor '{executor}'; use one of {', '.join(EXECUTORS)}")
    if stack_bytes < MIN_STACK_BYTES or stack_bytes % 8:
        raise MicrocompilerError(f"a stack of {stack_bytes} B is too small or unaligned; give a multiple of 8 "
                                 f"of at least {MIN_STACK_BYTES} B")
    if mode not in MODES:
        raise MicrocompilerError(f"unknown mode '{mode}'; use one of {', '.join(MODES)}")
    if template == "zephyr":  # Zephyr applications: microcompiler/zephyr.py (docs/zephyr.md)
        from microcompiler.zephyr import create_zephyr_project
        return create_zephyr_project(model, board, out_dir, executor=executor, mode=mode, input=input,
                                     stack_bytes=None if stack_bytes == DEFAULT_STACK_BYTES else stack_bytes)
    if template == "baremetal" and board.platform is None:
        raise BoardError(f"board {board.name} has no bare-metal platform family; use --template zephyr")
    definitions = platform_definitions(board)
    check_output_dir(out_dir, "project directory")  # fail before the compile
    check_path_is_safe(Path(os.path.realpath(out_dir)), "the project directory")
    if isinstance(model, ModelLibrary):
        library = model
    else:
        from microcompiler.compiler import compile_model
        library = compile_model(model, features=board.cpu.features)
    metadata = library.metadata
    check_fits(metadata, board, "graph" if mode == "host-driven" else executor, stack_bytes)
    arrays = _resolve_inputs(input, metadata)

    info = {"model": metadata["name"], "board": board.name, "template": template, "executor": executor,
            "stack_bytes": stack_bytes, "mode": mode}

    def fill(stage: Path) -> None:
        library.write(stage / "model")
        _copy_runtime(stage, board.platform)
        shutil.copyfile(board.source, stage / "board.toml")
        (stage / "inputs").mkdir()
        input_values = []
        for k, (arr, meta) in enumerate(zip(arrays, metadata["inputs"])):
            np.save(stage / "inputs" / f"input{k}.npy", arr)
            input_values.append({**meta, "elements": max(1, arr.size), "initializer": c_initializer(arr),
                                 "definition": c_array(f"g_{meta['c_name']}", c_type(meta["dtype"]), arr)})
        outputs = [{**meta, "elements": max(1, meta["bytes"] // np.dtype(np_dtype(meta["dtype"])).itemsize)}
                   for meta in metadata["outputs"]]

        template_dir = resources.templates_dir() / template
        name = metadata["name"]
        sources = sorted(p.relative_to(stage).as_posix() for pattern in
                         ("model/src/*.c", "crt/src/*.c", f"crt/platform/{board.platform}/*.c")
                         for p in stage.glob(pattern))
        values = dict(name=name, NAME=name.upper(), board=board, executor=executor, inputs=input_values,
                      outputs=outputs, input_origin="given" if input is not None else "seeded random",
                      board_file=f"boards/{board.source.name}", flash=board.flash, ram=board.ram,
                      weights=board.weights_region,
                      stack_bytes=stack_bytes, cflags=board.cpu.cflags, definitions=definitions, sources=sources)
        (stage / "src").mkdir()
        if mode == "host-driven":
            from microcompiler.rpc.host_project import rpc_template_values
            from microcompiler.rpc.plan import ModelPlan
            values.update(rpc_template_values(library))
            ModelPlan.from_library(library).save(stage)
        main_template = "rpc_main.c.j2" if mode == "host-driven" else "main.c.j2"
        (stage / "src" / "main.c").write_text(render_template(template_dir, main_template, **values))
        (stage / "linker.ld").write_text(render_template(template_dir, "linker.ld.j2", **values))
        (stage / "CMakeLists.txt").write_text(render_template(template_dir, "CMakeLists.txt.j2", **values))
        shutil.copyfile(template_dir / "arm-none-eabi.cmake", stage / "arm-none-eabi.cmake")

    return Project.load(write_project_dir(out_dir, fill, info))


# ---- Build ----

def _require_tool(tool: str, hint: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise ToolchainError(f"'{tool}' is not on PATH; {hint}")
    return path


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
        raise MicrocompilerError(f"{build_dir} holds a CMake build of {source}, not of this project; remove "
                                 "it (or move it away) and build again")
    log(f"{project.dir.name} was copied or moved from {Path(source)}; configuring a fresh build directory")
    try:
        shutil.rmtree(build_dir)
    except OSError as exc:
        raise MicrocompilerError(f"cannot remove the stale build directory {build_dir}: {_why(exc)}") from None


def _check_can_build(project: Project) -> None:
    check_path_is_safe(project.dir, "the project directory")  # a project moved under such a path
    build_dir = project.dir / BUILD_DIR
    target = build_dir if build_dir.is_dir() else project.dir
    if not os.access(target, os.W_OK | os.X_OK):
        raise MicrocompilerError(f"cannot build {project.dir}: no write permission for {target} (the build "
                                 f"writes to {build_dir}); copy the project somewhere writable")


def build(project_dir: str | Path, log: Log = print) -> BuildResult:
    """Configure (once) and build the project with CMake and Ninja; returns the firmware sizes."""
    project = Project.load(project_dir)
    _check_can_build(project)
    if project.template == "zephyr":
        from microcompiler import zephyr
        return zephyr.build(project.dir, log=log)
    cmake = _require_tool("cmake", "install CMake 3.20 or newer (Debian: apt-get install cmake)")
    _require_tool("ninja", "install Ninja (Debian: apt-get install ninja-build)")
    _require_tool("arm-none-eabi-gcc", "install the GNU Arm Embedded toolchain "
                  "(Debian: apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi)")
    build_dir = project.dir / BUILD_DIR
    _check_build_dir(project, build_dir, log)
    if not (build_dir / "build.ninja").is_file():
        log(f"configuring {project.dir.name} for {project.board.name} (cmake)")
        _run_logged([cmake, "-G", "Ninja", "-S", str(project.dir), "-B", str(build_dir)], _quiet, "cmake")
    log(f"building {project.dir.name} (ninja)")
    _run_logged(["ninja", "-C", str(build_dir)], log, "ninja")
    flash_bytes, ram_bytes = firmware_size(project.elf)
    log(f"built {project.elf}: flash {flash_bytes:,} B, RAM {ram_bytes:,} B "
        f"(board: {project.board.flash.size:,} B / {project.board.ram.size:,} B)")
    return BuildResult(project.elf, flash_bytes, ram_bytes)


_OVERFLOW = re.compile(r"region [`']?(\w+)'? overflowed by (\d+) bytes")


def _run_logged(cmd: list[str], log: Log, what: str) -> None:
    # its own process group: an interrupted build stops every compiler it started (microcompiler/cleanup.py)
    proc = cleanup.spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            line = line.rstrip("\n")
            lines.append(line)
            if line.startswith("["):  # ninja's "[3/12] Building C object ..."
                log("  " + line)
        proc.wait()
    finally:
        cleanup.stop(proc, grace=2.0)
    if proc.returncode != 0:
        text = "\n".join(lines)
        overflow = _OVERFLOW.search(text)
        if overflow:
            raise BoardError(f"the firmware does not fit: memory region {overflow.group(1)} overflowed by "
                             f"{int(overflow.group(2)):,} B")
        tail = "\n".join(lines[-40:])
        raise ToolchainError(f"{what} failed (exit {proc.returncode}):\n{tail}")


def firmware_size(elf: str | Path) -> tuple[int, int]:
    """(flash_bytes, ram_bytes) of a firmware from its ELF section headers.

    flash: every allocated section with contents (text, rodata, exidx, the initial values of data);
    RAM: every allocated writable section (data, bss, the stack region).
    """
    data = Path(elf).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 1:
        raise ToolchainError(f"{elf} is not a 32-bit ELF file")
    endian = "<" if data[5] == 1 else ">"
    shoff, = struct.unpack_from(endian + "I", data, 0x20)
    shentsize, shnum = struct.unpack_from(endian + "HH", data, 0x2E)
    flash = ram = 0
    sht_nobits, shf_write, shf_alloc = 8, 0x1, 0x2
    for i in range(shnum):
        _, sh_type, flags, _, _, size = struct.unpack_from(endian + "IIIIII", data, shoff + i * shentsize)
        if not flags & shf_alloc:
            continue
        if sh_type != sht_nobits:
            flash += size
        if flags & shf_write:
            ram += size
    return flash, ram


# ---- Flash and run ----

_REPORT_DONE = re.compile(rb"^(MC-END|MC-ABORT)[^\n]*\n", re.MULTILINE)


def flash(project_dir: str | Path, timeout: float = 300.0, log: Log = print) -> RunResult:
    """Load the built firmware on the board, wait for its report and decode it."""
    project = Project.load(project_dir)
    if project.template == "zephyr":
        from microcompiler import zephyr
        return zephyr.flash(project.dir, timeout=timeout, log=log)
    if not project.elf.is_file():
        raise MicrocompilerError(f"{project.elf} does not exist; build it first: "
                                     f"microcompiler build {shlex.quote(str(project.dir))}")
    board = project.board
    if not board.emulated:
        raise ToolchainError(f"flashing the hardware board {board.name} (runner {board.runner}) is not "
                             "supported yet; it comes with the Zephyr template")
    from microcompiler.transport.qemu import QemuTransport
    log(f"running {project.elf.name} in QEMU ({board.qemu_machine})")
    start = time.monotonic()
    with QemuTransport(board.qemu_machine, project.elf) as link:
        text = link.read_until(_REPORT_DONE, timeout).decode(errors="replace")
    log(f"report received after {time.monotonic() - start:.1f} s")
    return decode_report(text, project.metadata)


def decode_report(text: str, metadata: dict) -> RunResult:
    for line in text.splitlines():
        if line.startswith("MC-FAULT") or line.startswith("MC-ABORT"):
            raise DeviceError(f"the firmware stopped: {line.strip()}")
    results: list[StandaloneResult] = parse_reports(text, metadata["outputs"])
    if not results:
        raise DeviceError(f"the firmware printed no complete report; it printed: {text[-500:]!r}")
    stack = re.search(r"^stack_bytes (\d+)", text, re.MULTILINE)
    result = results[-1]
    return RunResult(result.outputs, result.ticks, result.hz, int(stack.group(1)) if stack else None, text)


def run_on_board(model: str | Path | ModelLibrary, board: str | Board, project_dir: str | Path,
                 executor: str = "aot", input=None, log: Log = print,
                 timeout: float = 300.0) -> tuple[Project, BuildResult, RunResult]:
    """create_project + build + flash, the whole standalone flow."""
    project = create_project(model, "baremetal", board, project_dir, executor=executor, input=input)
    built = build(project.dir, log=log)
    return project, built, flash(project.dir, timeout=timeout, log=log)


__all__ = ["Project", "BuildResult", "RunResult", "create_project", "build", "flash", "firmware_size",
           "check_fits", "estimate_footprint", "templates", "run_on_board"]
