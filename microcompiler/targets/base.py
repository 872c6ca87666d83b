"""The project core every target shares, and the table of targets.

A *target* is a way to put a compiled model on something that runs it: ``baremetal`` (CMake +
Ninja firmware, crt/platform/<family>), ``zephyr`` (a Zephyr application, west) and ``host`` (this
computer). Each is a :class:`Target` subclass in ``microcompiler/targets/<name>.py``, registered
with ``@register``; nothing outside this package asks which template a project uses.

A target has one small interface:

- ``create(model, board, out_dir, ...) -> Project``: compile (if given a .tflite), check the model
  fits, and write the project directory (``write_project_dir``: new, empty or a previous project);
- ``build(project, log) -> BuildResult | None``: build the firmware (None: nothing to measure);
- ``flash(project, ...) -> RunResult``: load the firmware, run the model once, decode the report;
- ``start(project, ...) -> Session``: load host-driven firmware and open an RPC session to it;
- ``open_link(project, ...) -> Transport``: the byte link to the running firmware.

The base class implements everything the targets share: the fit check (with ``footprint.py``),
the inputs compiled into the firmware, the runtime copy and the output directory (with
``files.py``), the tool runs and the ELF sizes (with ``build.py``), reading and decoding the report
and opening the link (QEMU for emulated boards, else the board's serial port).
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from microcompiler import resources
from microcompiler.boards import Board, load_board_file, resolve_board, write_board_file
from microcompiler.codegen import ModelLibrary
from microcompiler.codegen.graph_description import check_graph_executor
from microcompiler.codegen.model_info import ModelInfo, ModelInfoError
from microcompiler.compiler import compile_model
from microcompiler.errors import DeviceError, MicrocompilerError
from microcompiler.host import HostProgram, runner_model
from microcompiler.standalone import StandaloneResult, model_report, parse_reports
from microcompiler.targets.files import (
    PROJECT_FILE,
    check_project_dir,
    resolve_input_steps,
    save_inputs,
    write_project_dir,
)
from microcompiler.targets.footprint import DEFAULT_STACK_BYTES, check_fits
from microcompiler.targets.toolchain import BuildResult, Log

if TYPE_CHECKING:
    from microcompiler.rpc.client import Session
    from microcompiler.transport.base import Transport

EXECUTORS = ("aot", "graph")
STANDALONE, HOST_DRIVEN = "standalone", "host-driven"
MODES = (STANDALONE, HOST_DRIVEN)  # host-driven: an RPC server main (docs/rpc.md)
AUTO_PORT = "auto"  # --port auto: the board's serial port, found by its USB VID:PID (transport/serial.py)
RPC_TIMEOUT = 10.0  # seconds to wait for each device reply (run --rpc-timeout)


def quiet(_: str) -> None:
    pass


# ---- Projects ----


@dataclass
class Project:
    dir: Path
    board: Board
    template: str
    executor: str
    model: str
    metadata: dict
    stack_bytes: int
    mode: str = STANDALONE
    steps: int = 1  # input sets saved with the project: a sequence of inferences (docs/state.md)
    # Every model's metadata when the firmware holds several (docs/multiple_models.md); else empty.
    models: list[dict] = field(default_factory=list)
    share_arena: bool = False
    # The Zephyr workspace the project was created with (or --zephyr-base names), for build and flash.
    zephyr_base: str | None = None
    runner: str | None = None  # the flash runner to use instead of the board's (flash --runner)
    # What the target keeps of a project it made in this process (the host's built program), or None.
    program: HostProgram | None = field(default=None, repr=False, compare=False)

    @property
    def target(self) -> Target:
        return get_target(self.template)

    @property
    def elf(self) -> Path:
        """The firmware the build writes (where depends on the target's build system)."""
        return self.target.elf(self)

    @classmethod
    def load(cls, project_dir: str | Path) -> Project:
        try:
            project_dir = Path(project_dir).resolve()
            info_path = project_dir / PROJECT_FILE
            is_project = info_path.is_file()
        except (OSError, RuntimeError) as exc:  # a name too long; a loop of symbolic links (RuntimeError)
            raise MicrocompilerError(f"cannot open project {project_dir}: {why(exc)}") from None
        if not is_project:
            raise MicrocompilerError(
                f"{project_dir} is not a microcompiler project (no {PROJECT_FILE}); "
                "make one with 'microcompiler create-project'"
            )
        info = read_project_info(project_dir)
        names = info.get("models")
        if names is None:
            models, metadata = [], _read_metadata(project_dir / "model")
        elif isinstance(names, list) and names and all(isinstance(n, str) and n.isidentifier() for n in names):
            models = [_read_metadata(project_dir / "models" / n) for n in names]
            metadata = models[0]
        else:
            raise MicrocompilerError(
                f"{project_dir / PROJECT_FILE} is damaged ('models' is not a list of model names); {_RECREATE}"
            )
        return cls(
            project_dir,
            load_board_file(project_dir / "board.toml"),
            info["template"],
            info["executor"],
            info["model"],
            metadata,
            info["stack_bytes"],
            info.get("mode", STANDALONE),
            info.get("steps", 1),
            models,
            bool(info.get("share_arena", False)),
            info["zephyr_base"] if isinstance(info.get("zephyr_base"), str) else None,
        )

    def saved_inputs(self, model: str | None = None) -> list[np.ndarray]:
        """The input the project was created with (inputs/input<k>.npy, the first step of a sequence;
        with several models, the named model's, inputs/<model>/input<k>.npy)."""
        return self.saved_input_steps(model)[0]

    def saved_input_steps(self, model: str | None = None) -> list[list[np.ndarray]]:
        """Every input set the project was created with, in order (one unless it runs a sequence:
        then inputs/input<k>.npy hold the steps along a leading axis)."""
        info, folder = self.info, self.dir / "inputs"
        if self.models:
            info = self.model_info(model or self.model)
            folder = folder / info.name
        arrays = [np.load(folder / f"input{k}.npy") for k in range(len(info.inputs))]
        if self.steps == 1:
            return [arrays]
        return [[arr[s] for arr in arrays] for s in range(self.steps)]

    @property
    def info(self) -> ModelInfo:
        """The (first) model's metadata, typed (codegen/model_info.py)."""
        return ModelInfo.from_json(self.metadata, str(self.dir / "model" / "metadata.json"))

    @property
    def model_infos(self) -> list[ModelInfo]:
        """Every model's metadata, typed, in the order the firmware runs them (one unless several)."""
        if not self.models:
            return [self.info]
        return [ModelInfo.from_json(m, str(self.dir / "models" / m["name"] / "metadata.json")) for m in self.models]

    def model_info(self, model: str) -> ModelInfo:
        """The metadata of the model named ``model`` in this project, typed (one-line error if absent)."""
        for info in self.model_infos:
            if info.name == model:
                return info
        known = ", ".join(info.name for info in self.model_infos)
        raise MicrocompilerError(f"{self.dir} holds no model named '{model}' (it holds: {known})")


_RECREATE = "recreate the project with 'microcompiler create-project'"


def _read_metadata(library_dir: Path) -> dict:
    """A model library's metadata.json inside a project, read through ModelInfo (the fields every
    reader relies on, and the format version, checked) and handed on as its JSON object."""
    path = library_dir / "metadata.json"
    try:
        return ModelInfo.load(path).to_json()
    except ModelInfoError as exc:
        raise MicrocompilerError(f"{str(exc).rpartition(';')[0]}; {_RECREATE}") from None


# The fields of microcompiler-project.json, with their types.
_PROJECT_FIELDS = {"model": str, "board": str, "template": str, "executor": str, "stack_bytes": int}


def why(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def read_project_info(project_dir: Path) -> dict:
    """microcompiler-project.json, checked: a one-line error when it is unreadable or damaged."""
    info_path = project_dir / PROJECT_FILE
    try:
        info = json.loads(info_path.read_text())
    except (OSError, ValueError) as exc:
        raise MicrocompilerError(f"cannot read {info_path} ({why(exc)}); {_RECREATE}") from None
    if not isinstance(info, dict):
        raise MicrocompilerError(f"{info_path} is damaged (not a JSON object); {_RECREATE}")
    for key, kind in _PROJECT_FIELDS.items():
        if not isinstance(info.get(key), kind) or isinstance(info.get(key), bool):
            raise MicrocompilerError(
                f"{info_path} is damaged ('{key}' is missing or not a {kind.__name__}); {_RECREATE}"
            )
    steps = info.get("steps", 1)
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise MicrocompilerError(f"{info_path} is damaged ('steps' is not a positive integer); {_RECREATE}")
    if info["executor"] not in EXECUTORS or info.get("mode", STANDALONE) not in MODES:
        raise MicrocompilerError(f"{info_path} is damaged (unknown executor or mode); {_RECREATE}")
    if info["template"] not in _registry():
        raise MicrocompilerError(f"{info_path} is damaged (unknown template '{info['template']}'); {_RECREATE}")
    return info


@dataclass
class RunResult:
    outputs: list[np.ndarray]  # of the last inference
    ticks: int
    hz: int
    stack_bytes: int | None  # stack high-water mark, when the firmware reports it
    log: str  # everything the firmware printed
    # a sequence (docs/state.md): the outputs and device ticks of every step, in order
    step_outputs: list[list[np.ndarray]] = field(default_factory=list)
    step_ticks: list[int] = field(default_factory=list)
    # A firmware with several models: each model's result by name (this result is the first's).
    models: dict[str, RunResult] = field(default_factory=dict)


# ---- The report ----


def decode_report(text: str, info: ModelInfo) -> RunResult:
    for line in text.splitlines():
        if line.startswith("MC-FAULT") or line.startswith("MC-ABORT"):
            raise DeviceError(f"the firmware stopped: {line.strip()}")
    results: list[StandaloneResult] = parse_reports(text, info.outputs)
    if not results:
        raise DeviceError(f"the firmware printed no complete report; it printed: {text[-500:]!r}")
    stack = re.search(r"^stack_bytes (\d+)", text, re.MULTILINE)
    result = results[-1]
    return RunResult(
        result.outputs,
        result.ticks,
        result.hz,
        int(stack.group(1)) if stack else None,
        text,
        [r.outputs for r in results],
        [r.ticks for r in results],
    )


# The firmware printed its report, or stopped.
_REPORT_DONE = re.compile(rb"^(MC-END|MC-ABORT)[^\n]*\n", re.MULTILINE)
# Firmware that runs a sequence prints one report per step, then this line (or stopped).
SEQUENCE_DONE = re.compile(rb"^(MC-STEPS-END|MC-ABORT)[^\n]*\n", re.MULTILINE)


# ---- Targets ----


def check_executor(infos: list[ModelInfo], executor: str, mode: str) -> None:
    """Refuse the graph executor and host-driven mode for a model whose operators they cannot pass
    (an UNPACK of 21 outputs, metadata "graph_executor_refusal"); the AOT executor runs any model."""
    if executor == "graph" or mode == HOST_DRIVEN:
        for info in infos:
            check_graph_executor(info)


class Target:
    """How models get onto one kind of device. Subclasses set ``name`` and register with @register."""

    name: ClassVar[str]
    label: ClassVar[str | None] = None  # how run's summary names the target ("Zephyr"); None: no mention
    firmware_project: ClassVar[bool] = True  # create-project writes it (listed by templates())
    template_folder: ClassVar[str | None] = None  # project_templates/<this> (default: the name)
    options: ClassVar[tuple[str, ...]] = ()  # create-project options of this template only (mlperf: benchmark)
    several_models: ClassVar[bool] = False  # its mains run several models (docs/multiple_models.md)

    @property
    def template_dir(self) -> Path:
        return resources.templates_dir() / (self.template_folder or self.name)

    # ---- create ----

    def check_board(self, board: Board) -> None:
        """Raise BoardError when this target cannot serve the board (before anything is compiled)."""

    def check_run(self, *, mode: str, keep: str | Path | None, port: str | None) -> None:
        """Refuse a run's options that mean nothing for this target (before anything is compiled)."""

    def default_stack_bytes(self, info: ModelInfo, mode: str, board: Board | None = None) -> int:
        return DEFAULT_STACK_BYTES

    def check_fits(self, info: ModelInfo, board: Board, executor: str, mode: str, stack_bytes: int) -> None:
        check_fits(info, board, "graph" if mode == HOST_DRIVEN else executor, stack_bytes)

    def project_info(self, board: Board) -> dict:
        """What microcompiler-project.json records besides model, board, template, executor, stack, mode."""
        return {}

    def create(
        self,
        model: str | Path | ModelLibrary,
        board: Board,
        out_dir: str | Path,
        *,
        executor: str = "aot",
        mode: str = STANDALONE,
        input=None,
        stack_bytes: int | None = None,
        log: Log = quiet,
        input_steps=None,
    ) -> Project:
        """Write the project for ``model`` on ``board`` into ``out_dir`` (replaced if a project).

        ``input_steps``, instead of ``input``: several input sets, one per inference, run in order
        (a sequence for a model that keeps state, docs/state.md)."""
        self.check_board(board)
        check_project_dir(out_dir)  # fail before the compile
        library = compile_for(model, board)
        model_info = library.info
        stack = stack_bytes or self.default_stack_bytes(model_info, mode, board)
        check_executor([model_info], executor, mode)
        self.check_fits(model_info, board, executor, mode, stack)
        steps = resolve_input_steps(input, input_steps, model_info)
        if len(steps) > 1:
            self.check_sequence(mode)
        info = {
            "model": model_info.name,
            "board": board.name,
            "template": self.name,
            "executor": executor,
            "stack_bytes": stack,
            "mode": mode,
            **self.project_info(board),
        }
        if len(steps) > 1:
            info["steps"] = len(steps)

        def fill(stage: Path) -> None:
            library.write(stage / "model")
            write_board_file(board, stage / "board.toml")
            values = dict(
                name=model_info.name,
                NAME=model_info.name.upper(),
                model_info=model_info,
                board=board,
                executor=executor,
                mode=mode,
                models=[runner_model(model_info, save_inputs(stage, steps, model_info))],  # a table of one
                steps=len(steps),
                share_arena=False,
                input_origin="given" if input is not None or input_steps is not None else "seeded random",
            )
            if mode == HOST_DRIVEN:
                from microcompiler.rpc.host_project import rpc_template_values
                from microcompiler.rpc.plan import ModelPlan

                values.update(rpc_template_values(library))
                ModelPlan.from_library(library).save(stage)
            (stage / "src").mkdir()
            self.fill(stage, values, stack)

        return Project.load(write_project_dir(out_dir, fill, info))

    def check_sequence(self, mode: str) -> None:
        """Refuse a sequence of input sets where this target's firmware cannot run one."""
        if mode == STANDALONE:
            raise MicrocompilerError(
                f"the {self.name} template's standalone firmware runs one input set; "
                "use --template baremetal or --mode host-driven for a sequence"
            )

    def fill(self, stage: Path, values: dict, stack_bytes: int) -> None:
        """Write the target's own files (runtime, main, build files) into the staging directory."""
        raise NotImplementedError

    @staticmethod
    def main_template(values: dict, host_driven_main: str) -> str:
        """The template of the project's src/main.c, for one model or several: main.c.j2 (which
        includes project_templates/models/runners.c.j2), or ``host_driven_main`` for a host-driven
        project (which includes project_templates/models/rpc_server.c.j2)."""
        return host_driven_main if values["mode"] == HOST_DRIVEN else "main.c.j2"

    # ---- build ----

    def elf(self, project: Project) -> Path:
        raise NotImplementedError

    def build(self, project: Project, log: Log = print) -> BuildResult | None:
        raise NotImplementedError

    def require_elf(self, project: Project) -> Path:
        elf = self.elf(project)
        if not elf.is_file():
            raise MicrocompilerError(
                f"{elf} does not exist; build it first: microcompiler build {shlex.quote(str(project.dir))}"
            )
        return elf

    # ---- run ----

    def load(self, project: Project, log: Log = print) -> None:
        """Put the built firmware on the board (emulated boards load it when QEMU starts)."""

    def open_link(self, project: Project, *, port: str | None = None, log: Log = quiet) -> Transport:
        """A transport to the running firmware: QEMU for emulated boards, else the board's serial port."""
        board = project.board
        if port == AUTO_PORT:  # the board already runs the firmware: its port by USB id
            if board.emulated:
                raise MicrocompilerError(
                    f"--port {AUTO_PORT} finds a hardware board's serial port by its USB id; "
                    f"{board.name} is emulated (drop --port: it runs in QEMU)"
                )
            port = None
        if port is None and board.emulated:
            from microcompiler.transport.qemu import QemuTransport

            elf = self.require_elf(project)
            log(f"starting QEMU ({board.qemu_machine}) with {elf.name}")
            return QemuTransport.for_board(board, elf)
        from microcompiler.transport.serial import SerialTransport

        if port is None and not board.usb_ids:
            raise MicrocompilerError(
                f"board {board.name} has no USB id in {board.source}; pass the serial port (--port /dev/ttyACM0)"
            )
        return SerialTransport(port, usb_ids=board.usb_ids)

    def device_name(self, project: Project, port: str | None) -> str:
        """How RPC errors name the device."""
        board = project.board
        if port is None and board.emulated:
            return f"{board.name} (QEMU)"
        return f"{board.name} ({port if port not in (None, AUTO_PORT) else 'USB'})"

    def start(
        self, project: Project, *, port: str | None = None, log: Log = quiet, load: bool = True, **session_options
    ) -> Session:
        """Load the host-driven firmware (unless ``port``: it already runs there) and open a session."""
        from microcompiler.rpc.client import Session
        from microcompiler.rpc.plan import ModelPlan

        if project.mode != HOST_DRIVEN:
            raise MicrocompilerError(
                f"{project.dir} is a standalone project; create it with mode 'host-driven' "
                "(microcompiler run --mode host-driven) to talk RPC to it"
            )
        plan = session_options.pop("plan", None) or ModelPlan.load(project.dir)
        if load and port is None:
            self.load(project, log)
        name = self.device_name(project, port)
        transport = self.open_link(project, port=port, log=log)
        log(f"connecting to {name}")
        return Session(transport, plan=plan, name=name, **session_options)

    def flash(
        self, project: Project, *, timeout: float = 300.0, log: Log = print, port: str | None = None
    ) -> RunResult:
        """Load the firmware, run the model once and return what it produced.

        Standalone firmware is read for its report; host-driven firmware is driven over RPC on the
        input saved with the project (ticks: the sum of the operators' device times).
        """
        self.require_elf(project)
        if project.mode == HOST_DRIVEN:  # each model, picked by name when the firmware holds several
            from microcompiler.rpc.plan import ModelPlan

            results = {}
            with self.start(project, port=port, log=log, timeout=RPC_TIMEOUT, call_timeout=timeout) as session:
                for meta in project.model_infos:
                    plan = ModelPlan.load(project.dir / "models" / meta.name) if project.models else None
                    step_outputs, step_ticks = [], []
                    with session.executor(plan) as ex:
                        for inputs in project.saved_input_steps(meta.name):  # the device keeps the state
                            step_outputs.append(ex(*inputs))
                            step_ticks.append(sum(ex.last_ticks))
                    results[meta.name] = RunResult(
                        step_outputs[-1], step_ticks[-1], session.device.timer_hz, None, "", step_outputs, step_ticks
                    )
                logs = "\n".join(session.logs)
            first = results[project.model]
            return RunResult(
                first.outputs,
                first.ticks,
                first.hz,
                None,
                logs,
                first.step_outputs,
                first.step_ticks,
                results if project.models else {},
            )
        if port is None:
            self.load(project, log)
        started = time.monotonic()
        with self.open_link(project, port=port, log=log) as link:
            text = link.read_until(self.report_pattern(project.steps), timeout).decode(errors="replace")
        log(f"report received after {time.monotonic() - started:.1f} s")
        text = self.report_text(text, project.steps)
        if not project.models:
            return decode_report(text, project.info)
        results = {m.name: decode_report(model_report(text, m.name), m) for m in project.model_infos}
        first = results[project.model]
        return RunResult(first.outputs, first.ticks, first.hz, first.stack_bytes, text, models=results)

    def report_pattern(self, steps: int) -> re.Pattern:
        """Read the link until this matches: the report, or a sequence's ``steps`` reports and
        MC-STEPS-END (or an abort)."""
        return _REPORT_DONE if steps == 1 else SEQUENCE_DONE

    def report_text(self, text: str, steps: int) -> str:
        """The part of what the firmware printed that holds its report (``steps`` of them)."""
        return text


def compile_for(model: str | Path | ModelLibrary, board: Board) -> ModelLibrary:
    """The model library for the board's CPU (a .tflite is compiled; a library is taken as it is)."""
    if isinstance(model, ModelLibrary):
        return model
    return compile_model(model, features=board.cpu.features)


def run_on_board(
    model: str | Path | ModelLibrary,
    board: str | Board,
    project_dir: str | Path,
    *,
    template: str = "baremetal",
    mode: str = STANDALONE,
    executor: str = "aot",
    input=None,
    log: Log = print,
    timeout: float = 300.0,
    port: str | None = None,
    input_steps=None,
) -> tuple[Project, BuildResult | None, RunResult]:
    """create + build + flash, the whole flow on one board: (project, BuildResult, RunResult).

    The Python API's edge: ``board`` may be a name; everything below takes the Board. ``input_steps``:
    a sequence of input sets run in order, keeping the model's state (RunResult.step_outputs)."""
    board = resolve_board(board)
    target = get_target(template)
    steps = dict(input_steps=input_steps) if input_steps is not None else {}
    project = target.create(model, board, project_dir, executor=executor, mode=mode, input=input, **steps)
    built = target.build(project, log=log)
    return project, built, target.flash(project, timeout=timeout, log=log, port=port)


def create_options(target: Target, zephyr_base: str | Path | None = None) -> dict:
    """create()'s keywords for a command's --zephyr-base: given to the targets that take it (the
    Zephyr ones record it in the project, so build and flash use that workspace)."""
    return {"zephyr_base": zephyr_base} if zephyr_base and "zephyr_base" in target.options else {}


def start_on_board(
    model: str | Path | ModelLibrary,
    board: Board,
    project_dir: str | Path,
    *,
    template: str = "baremetal",
    port: str | None = None,
    log: Log = quiet,
    zephyr_base: str | Path | None = None,
    **session_options,
) -> tuple[Project, BuildResult | None, Session]:
    """create + build + start host-driven firmware: (project, BuildResult, open RPC Session);
    ``zephyr_base``: the workspace a Zephyr project records (create_options)."""
    target = target_for(board, template)
    target.check_board(board)
    library = compile_for(model, board)
    project = target.create(
        library, board, project_dir, mode=HOST_DRIVEN, log=log, **create_options(target, zephyr_base)
    )
    built = target.build(project, log=log)
    return project, built, target.start(project, port=port, log=log, **session_options)


# ---- The table of targets ----

_TARGETS: dict[str, Target] = {}
_discovered = False


def register(cls: type[Target]) -> type[Target]:
    """Class decorator: make a Target subclass known under its ``name``."""
    _TARGETS[cls.name] = cls()
    return cls


def _registry() -> dict[str, Target]:
    """Every target: the modules of microcompiler/targets register themselves when imported."""
    global _discovered
    if not _discovered:
        package = Path(__file__).resolve().parent
        for module in sorted(m.name for m in pkgutil.iter_modules([str(package)])):
            importlib.import_module(f"{__package__}.{module}")
        _discovered = True
    return _TARGETS


def get_target(name: str) -> Target:
    targets = _registry()
    if name not in targets:
        raise MicrocompilerError(f"unknown project template '{name}'; known templates: {', '.join(templates())}")
    return targets[name]


def templates() -> list[str]:
    """The firmware project templates create-project writes (the host is a target, not a template)."""
    return sorted(name for name, target in _registry().items() if target.firmware_project)


def target_for(board: Board, template: str = "baremetal") -> Target:
    """The target that runs models on ``board``: this computer's for ``host``, else ``template``'s."""
    return get_target("host") if board.is_host else get_target(template)
