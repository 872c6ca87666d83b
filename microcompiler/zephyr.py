"""Zephyr projects: a model as a Zephyr application for any board with a Zephyr board target.

``create_zephyr_project`` writes (from project_templates/zephyr, see docs/zephyr.md)::

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
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from microcompiler import resources
from microcompiler.boards import Board, load_board
from microcompiler.codegen import ModelLibrary
from microcompiler.codegen.c_arrays import c_array, c_initializer
from microcompiler.errors import BoardError, MicrocompilerError, ToolchainError
from microcompiler.host import render_template
from microcompiler.ir import c_type, np_dtype

TEMPLATE = "zephyr"
DOCS = "docs/zephyr.md"
MIN_ZEPHYR = (3, 7)  # hardware model v2 board targets (mps2/an385, nrf5340dk/nrf5340/cpuapp, ...)
# Board targets renamed in a Zephyr release: (target before that release, first release with the name).
RENAMED_TARGETS = {"mps3/corstone300/an547": ("mps3/an547", (4, 0))}  # 4.0 migration guide
MODES = ("standalone", "host-driven")
EXECUTORS = ("aot", "graph")
REPORT_PERIOD_MS = 1000  # standalone firmware repeats its report, so a late reader still gets one
RX_BUFFER_BYTES = 4096  # receive ring buffer: more than two maximal request frames (docs/rpc.md)
# RAM Zephyr needs besides the model (kernel, idle and ISR stacks, drivers), for the fit check.
KERNEL_RAM_BYTES = 16 * 1024


class ZephyrBoardError(BoardError):
    """The board has no Zephyr board target, or the Zephyr tree does not have it."""


class WestNotFoundError(ToolchainError):
    """west is not installed."""


class ZephyrBaseError(ToolchainError):
    """ZEPHYR_BASE is not set or is not a Zephyr tree."""


@dataclass(frozen=True)
class ZephyrBoardFacts:
    """What the Kconfig of a board needs, as Zephyr defines the board (checked in its source)."""
    fpu: bool  # the SoC selects CPU_HAS_FPU, so CONFIG_FPU=y is valid
    entropy: bool  # the board's devicetree enables the zephyr,entropy chosen node
    source: str  # where in the Zephyr tree that comes from


KNOWN_BOARDS = {
    "mps2/an385": ZephyrBoardFacts(False, False, "soc/arm/mps2/Kconfig: SOC_MPS2_AN385 (Cortex-M3)"),
    "mps2/an386": ZephyrBoardFacts(True, False, "soc/arm/mps2/Kconfig: SOC_MPS2_AN386 selects CPU_HAS_VFP"),
    # Zephyr builds AN500 soft-float: SOC_MPS2_AN500 does not select CPU_HAS_FPU.
    "mps2/an500": ZephyrBoardFacts(False, False, "soc/arm/mps2/Kconfig: SOC_MPS2_AN500 (no CPU_HAS_FPU)"),
    "mps3/corstone300/an547": ZephyrBoardFacts(
        True, False, "soc/arm/mps3/Kconfig: SOC_MPS3_CORSTONE300 selects CPU_HAS_FPU, MVE"),
    "nrf5340dk/nrf5340/cpuapp": ZephyrBoardFacts(
        True, False, "soc/nordic/nrf53/Kconfig: SOC_NRF5340_CPUAPP selects CPU_HAS_FPU; entropy needs the "
                     "network core"),
    "nucleo_f746zg": ZephyrBoardFacts(
        True, True, "soc/st/stm32/stm32f7x/Kconfig selects CPU_HAS_FPU; board dts enables &rng, "
                    "stm32f7.dtsi chooses it as zephyr,entropy"),
    "nucleo_l4r5zi": ZephyrBoardFacts(
        True, False, "soc/st/stm32/stm32l4x/Kconfig selects CPU_HAS_FPU; board dts leaves &rng disabled"),
}


# ---- Boards ----

def zephyr_target(board: Board) -> str:
    """The board's Zephyr board target (hardware model v2, e.g. ``nrf5340dk/nrf5340/cpuapp``)."""
    if not board.zephyr_board:
        raise ZephyrBoardError(
            f"board {board.name} has no Zephyr board name; add [zephyr] board = \"<Zephyr board target>\" "
            f"to {board.source} if Zephyr supports it, or use --template baremetal")
    return board.zephyr_board


def board_file_stem(target: str) -> str:
    """Zephyr's file name for a board target in an application's boards/ ('/' becomes '_')."""
    return target.replace("/", "_")


def board_facts(board: Board) -> ZephyrBoardFacts:
    target = zephyr_target(board)
    if target in KNOWN_BOARDS:
        return KNOWN_BOARDS[target]
    return ZephyrBoardFacts(board.cpu.has_fpu, False, f"derived from {board.source} (not a board microcompiler "
                                                      "has checked against Zephyr)")


def uses_timing_api(board: Board) -> bool:
    """Hardware boards time with Zephyr's timing API (the DWT cycle counter on Cortex-M); QEMU has no DWT."""
    return not board.emulated


def main_stack_bytes(metadata: dict, mode: str) -> int:
    """CONFIG_MAIN_STACK_SIZE for a model.

    Tensors live in static buffers and the operator functions keep only scalars on the stack, so
    the stack holds Zephyr's own frames, the report or the RPC server (whose buffers are static),
    one operator call, and for float models the libm calls (expf) and the FP context.
    """
    size = 3072 if mode == "standalone" else 4096
    if any(t["dtype"].startswith("float") for t in metadata["inputs"] + metadata["outputs"]):
        size += 1024
    size += 64 * max((len(op["inputs"]) + len(op["outputs"]) for op in metadata["operators"]), default=0)
    return -(-size // 256) * 256


# ---- Create ----

def create_zephyr_project(model, board: str | Board, out_dir: str | Path, executor: str = "aot",
                          mode: str = "standalone", input=None, stack_bytes: int | None = None):
    """Write a Zephyr application for ``model`` on ``board`` into ``out_dir`` (replaced if a project).

    ``model``: a .tflite path or a compiled ModelLibrary. ``input``: None (fixed seeded random),
    .npy paths or arrays. ``stack_bytes``: CONFIG_MAIN_STACK_SIZE (default: sized for the model).
    """
    from microcompiler import project as projects
    from microcompiler.outdir import check_output_dir, check_path_is_safe
    board = board if isinstance(board, Board) else load_board(board)
    target = zephyr_target(board)
    check_output_dir(out_dir, "project directory")  # fail before the compile
    check_path_is_safe(Path(os.path.realpath(out_dir)), "the project directory")
    if executor not in EXECUTORS:
        raise MicrocompilerError(f"unknown executor '{executor}'; use one of {', '.join(EXECUTORS)}")
    if mode not in MODES:
        raise MicrocompilerError(f"unknown mode '{mode}'; use one of {', '.join(MODES)}")
    if isinstance(model, ModelLibrary):
        library = model
    else:
        from microcompiler.compiler import compile_model
        library = compile_model(model, features=board.cpu.features)
    meta = library.metadata
    stack = stack_bytes or main_stack_bytes(meta, mode)
    # Zephyr links the weights with the code, into the devicetree's zephyr,flash region: a board
    # region that holds only the bare-metal project's weights (AN547's SRAM) does not count here.
    zephyr_layout = dataclasses.replace(board, memory=tuple(
        r for r in board.memory if getattr(r, "holds", None) != "weights"))
    projects.check_fits(meta, zephyr_layout, "graph" if mode == "host-driven" else executor,
                        stack + KERNEL_RAM_BYTES)
    arrays = projects._resolve_inputs(input, meta)

    info = {"model": meta["name"], "board": board.name, "template": TEMPLATE, "executor": executor,
            "stack_bytes": stack, "mode": mode, "zephyr_board": target}

    def fill(stage: Path) -> None:
        library.write(stage / "model")
        projects._copy_runtime(stage, TEMPLATE)
        shutil.copyfile(board.source, stage / "board.toml")
        (stage / "inputs").mkdir()
        inputs = []
        for k, (arr, tensor) in enumerate(zip(arrays, meta["inputs"])):
            np.save(stage / "inputs" / f"input{k}.npy", arr)
            inputs.append({**tensor, "elements": max(1, arr.size), "initializer": c_initializer(arr),
                           "definition": c_array(f"g_{tensor['c_name']}", c_type(tensor["dtype"]), arr)})
        outputs = [{**t, "elements": max(1, t["bytes"] // np.dtype(np_dtype(t["dtype"])).itemsize)}
                   for t in meta["outputs"]]

        facts = board_facts(board)
        portable = sorted(p.relative_to(stage).as_posix()
                          for pattern in ("model/src/*.c", "crt/src/*.c") for p in stage.glob(pattern))
        values = dict(name=meta["name"], NAME=meta["name"].upper(), board=board, zephyr_board=target, mode=mode,
                      executor=executor, inputs=inputs, outputs=outputs,
                      input_origin="given" if input is not None else "seeded random", main_stack_bytes=stack,
                      facts=facts, timing_api=uses_timing_api(board), portable_sources=portable,
                      rx_buffer_bytes=RX_BUFFER_BYTES, report_period_ms=REPORT_PERIOD_MS)
        if mode == "host-driven":
            from microcompiler.rpc.host_project import rpc_template_values
            from microcompiler.rpc.plan import ModelPlan
            values.update(rpc_template_values(library))
            ModelPlan.from_library(library).save(stage)
        template_dir = resources.templates_dir() / TEMPLATE
        (stage / "src").mkdir()
        main_template = "host_driven_main.c.j2" if mode == "host-driven" else "main.c.j2"
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

    return projects.Project.load(projects.write_project_dir(out_dir, fill, info))


def elf_path(project_dir: str | Path) -> Path:
    return Path(project_dir) / "build" / "zephyr" / "zephyr.elf"


# ---- Zephyr workspace ----

def require_west() -> str:
    west = shutil.which("west")
    if west is None:
        raise WestNotFoundError(f"'west' is not on PATH; install west: pip install west, and set up a workspace: "
                                f"see {DOCS}")
    return west


def zephyr_base() -> Path:
    value = os.environ.get("ZEPHYR_BASE")
    if not value:
        raise ZephyrBaseError(f"ZEPHYR_BASE is not set; export ZEPHYR_BASE=<west workspace>/zephyr (or source "
                              f"zephyr/zephyr-env.sh in your workspace): see {DOCS}")
    base = Path(value).expanduser()
    if not (base / "VERSION").is_file():
        raise ZephyrBaseError(f"ZEPHYR_BASE={value} is not a Zephyr tree (it has no VERSION file); point it at "
                              f"the zephyr directory of your west workspace: see {DOCS}")
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


def west_board_target(board: Board, base: Path) -> str:
    """The board target to pass to ``west build -b`` for this Zephyr tree."""
    target = zephyr_target(board)
    version = zephyr_version(base)
    if version < MIN_ZEPHYR:
        raise ZephyrBaseError(f"Zephyr {version[0]}.{version[1]} at {base} is too old; microcompiler needs Zephyr "
                              f"{MIN_ZEPHYR[0]}.{MIN_ZEPHYR[1]} LTS or newer (hardware model v2 board names): "
                              f"see {DOCS}")
    if target in RENAMED_TARGETS and version < RENAMED_TARGETS[target][1]:
        target = RENAMED_TARGETS[target][0]
    names = board_names_in_tree(base)
    if names and target.split("/")[0] not in names:
        raise ZephyrBoardError(f"Zephyr {version[0]}.{version[1]} at {base} has no board '{target}' (board "
                               f"{board.name}); update the workspace to a Zephyr that has it (west update): "
                               f"see {DOCS}")
    return target


# ---- Build ----

def build(project_dir: str | Path, log=print):
    """``west build`` the project; returns the firmware sizes (microcompiler.project.BuildResult)."""
    from microcompiler import project as projects
    project = projects.Project.load(project_dir)
    west = require_west()
    base = zephyr_base()
    target = west_board_target(project.board, base)
    build_dir = project.dir / "build"
    log(f"building {project.dir.name} for {target} with west (Zephyr at {base})")
    projects._run_logged([west, "build", "-p", "auto", "-b", target, "-d", str(build_dir), str(project.dir)],
                         log, "west build")
    elf = elf_path(project.dir)
    if not elf.is_file():
        raise ToolchainError(f"west build finished but {elf} is missing; see the build output above")
    flash_bytes, ram_bytes = projects.firmware_size(elf)
    log(f"built {elf}: flash {flash_bytes:,} B, RAM {ram_bytes:,} B "
        f"(board: {project.board.flash.size:,} B / {project.board.ram.size:,} B)")
    return projects.BuildResult(elf, flash_bytes, ram_bytes)


# ---- Run ----

# A whole report: its start, its end, nothing torn (a late reader may see the tail of one first).
_WHOLE_REPORT = re.compile(rb"MC-BEGIN\r?\n(?:(?!MC-BEGIN).)*?MC-END[^\n]*\n|MC-ABORT[^\n]*\n", re.S)


def load_firmware(project, log=print) -> None:
    """``west flash`` a hardware board (emulated boards load the firmware when QEMU starts)."""
    if project.board.emulated:
        return
    west = require_west()
    zephyr_base()
    cmd = [west, "flash", "-d", str(project.dir / "build")]
    if project.board.runner:
        cmd += ["-r", project.board.runner]
    log(f"flashing {project.board.name} with west flash" + (f" ({project.board.runner})" if project.board.runner
                                                             else ""))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-30:])
        raise ToolchainError(f"west flash failed (exit {proc.returncode}); is the board plugged in and its "
                             f"runner ({project.board.runner or 'the board default'}) installed?\n{tail}")


def open_link(project, log=print, port: str | None = None):
    """A transport to the running firmware: QEMU for emulated boards, else the board's serial port."""
    if port is None and project.board.emulated:
        from microcompiler.transport.qemu import QemuTransport
        elf = elf_path(project.dir)
        if not elf.is_file():
            raise MicrocompilerError(f"{elf} does not exist; build it first: "
                                 f"microcompiler build {shlex.quote(str(project.dir))}")
        log(f"running {elf.name} in QEMU ({project.board.qemu_machine})")
        return QemuTransport(project.board.qemu_machine, elf)
    from microcompiler.transport.serial import SerialTransport
    if port is None and not project.board.usb_ids:
        raise MicrocompilerError(f"board {project.board.name} has no USB id in {project.board.source}; "
                                 "pass the serial port")
    return SerialTransport(port, usb_ids=project.board.usb_ids)


def flash(project_dir: str | Path, timeout: float = 300.0, log=print, port: str | None = None):
    """Load the firmware, run the model once and return what it produced (project.RunResult).

    Standalone firmware is read for its report; host-driven firmware is driven over RPC on the
    input saved with the project.
    """
    from microcompiler import project as projects
    project = projects.Project.load(project_dir)
    if not elf_path(project.dir).is_file():
        raise MicrocompilerError(f"{elf_path(project.dir)} does not exist; run 'microcompiler build "
                                 f"{project.dir}' first")
    if project.mode == "host-driven":
        inputs = [np.load(project.dir / "inputs" / f"input{k}.npy") for k in range(len(project.metadata["inputs"]))]
        return run_host_driven(project.dir, inputs, timeout=timeout, log=log, port=port)
    if port is None:
        load_firmware(project, log)
    start = time.monotonic()
    with open_link(project, log, port) as link:
        text = link.read_until(_WHOLE_REPORT, timeout).decode(errors="replace")
    log(f"report received after {time.monotonic() - start:.1f} s")
    match = _WHOLE_REPORT.search(text.encode())
    return projects.decode_report(match.group(0).decode(errors="replace") if match else text, project.metadata)


def run_host_driven(project_dir: str | Path, inputs, timeout: float = 300.0, log=print, port: str | None = None,
                    rpc_timeout: float = 10.0):
    """Load host-driven firmware, run the model once operator by operator over RPC (project.RunResult).

    ticks: the sum of the operators' device times, as ``microcompiler run --mode host-driven`` reports.
    """
    from microcompiler import project as projects
    from microcompiler.rpc.client import Session
    from microcompiler.rpc.plan import ModelPlan
    project = projects.Project.load(project_dir)
    if project.mode != "host-driven":
        raise MicrocompilerError(f"{project.dir} is a standalone project; create it with --mode host-driven")
    plan = ModelPlan.load(project.dir)
    if port is None:
        load_firmware(project, log)
    link = open_link(project, log, port)
    with Session(link, timeout=rpc_timeout, call_timeout=timeout, plan=plan,
                 name=f"{project.board.name} (Zephyr)") as session:
        with session.executor() as ex:
            outputs = ex(*inputs)
            ticks = sum(ex.last_ticks)
        hz = session.device.timer_hz
        logs = "\n".join(session.logs)
    return projects.RunResult(outputs, ticks, hz, None, logs)


def run_on_board(model, board: str | Board, project_dir: str | Path, mode: str = "standalone",
                 executor: str = "aot", input=None, log=print, timeout: float = 300.0, port: str | None = None):
    """create + build + run, the whole Zephyr flow: (project, BuildResult, RunResult)."""
    project = create_zephyr_project(model, board, project_dir, executor=executor, mode=mode, input=input)
    built = build(project.dir, log=log)
    return project, built, flash(project.dir, timeout=timeout, log=log, port=port)


def run_command(args) -> int:
    """``microcompiler run MODEL --template zephyr --board B [--mode ...]`` (commands/run.py)."""
    import sys
    import tempfile

    from microcompiler.compiler import compile_model
    from microcompiler.inputs import load_inputs, random_inputs

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    board = load_board(args.board)
    zephyr_target(board)  # a board without a Zephyr name fails before compiling
    library = compile_model(args.model, features=board.cpu.features)
    meta = library.metadata
    inputs = load_inputs(args.input, meta["inputs"]) if args.input else random_inputs(meta["inputs"])
    with tempfile.TemporaryDirectory(prefix="microcompiler-zephyr-") as tmp:
        project_dir = Path(args.keep) if args.keep else Path(tmp) / "project"
        _, built, result = run_on_board(library, board, project_dir, mode=args.mode, executor=args.executor,
                                        input=inputs, log=progress, timeout=args.timeout,
                                        port=getattr(args, "port", None))
    report = {"model": meta["name"], "board": board.name, "template": TEMPLATE, "mode": args.mode,
              "executor": args.executor, "outputs": [out.tolist() for out in result.outputs],
              "output_dtypes": [o["dtype"] for o in meta["outputs"]], "device_ticks": result.ticks,
              "timer_hz": result.hz, "flash_bytes": built.flash_bytes, "ram_bytes": built.ram_bytes,
              "stack_bytes": result.stack_bytes, "arena_bytes": meta["arena_bytes"],
              "params_bytes": meta["params_bytes"]}
    if args.json:
        print(json.dumps(report))
        return 0
    for k, out in enumerate(result.outputs):
        print(f"output{k} {meta['outputs'][k]['dtype']}{list(out.shape)}:")
        print(np.array2string(out, threshold=64))
    what = "sum of the operators, host-driven" if args.mode == "host-driven" else "standalone"
    print(f"time on {board.name} (Zephyr, {what}): {result.ticks} ticks at {result.hz} Hz")
    print(f"firmware: flash {built.flash_bytes:,} B, RAM {built.ram_bytes:,} B"
          + (f" (stack high-water {result.stack_bytes:,} B)" if result.stack_bytes else ""))
    return 0


__all__ = ["create_zephyr_project", "build", "flash", "run_host_driven", "run_on_board", "zephyr_target",
           "west_board_target", "ZephyrBoardError", "WestNotFoundError", "ZephyrBaseError", "KNOWN_BOARDS"]
