"""This computer as a target (``--board host``): the model built with the system C compiler.

Standalone, the project directory is a HostProgram's work directory (the model library, main.c
from project_templates/host, the executable) plus ``inputs/input<k>.npy``; running it feeds the
input on stdin and decodes the report. Host-driven, it is the host RPC server
(microcompiler.rpc.host_project), reached as a child process over its stdin and stdout.
Both are built when created; there is no firmware, so ``build`` measures nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from microcompiler.boards import Board
from microcompiler.codegen import ModelLibrary
from microcompiler.errors import MicrocompilerError
from microcompiler.host import HostProgram
from microcompiler.outdir import OutputDirError, check_output_dir
from microcompiler.rpc.host_project import SERVER_EXE, create_host_project, is_host_project
from microcompiler.targets.base import (
    HOST_DRIVEN,
    STANDALONE,
    Log,
    Project,
    RunResult,
    Target,
    compile_for,
    quiet,
    register,
)
from microcompiler.targets.files import resolve_input_steps

if TYPE_CHECKING:
    from microcompiler.transport.base import Transport


@register
class Host(Target):
    name = "host"
    firmware_project = False

    def check_run(self, *, mode: str, keep: str | Path | None, port: str | None) -> None:
        if port:
            raise MicrocompilerError("--port is for boards; --board host runs the RPC server as a local process")
        if keep and mode == STANDALONE:
            raise MicrocompilerError(
                "--keep writes a firmware project, for boards (or --mode host-driven); "
                "--board host builds in a temporary directory: use 'microcompiler compile' "
                "to keep the model library"
            )

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
        library = compile_for(model, board)
        meta = library.info
        steps = resolve_input_steps(input, input_steps, meta)
        if mode == HOST_DRIVEN:
            out = create_host_project(library, out_dir, log=log)
        else:
            out = check_output_dir(out_dir, "project directory")
            if out.is_dir() and any(out.iterdir()):
                raise OutputDirError(f"{out} is not empty; a host run needs a new or empty directory")
            out.mkdir(parents=True, exist_ok=True)
            program = HostProgram(library, out, executor=executor)
            (out / "inputs").mkdir()
            for k in range(len(meta.inputs)):
                per_step = [step[k] for step in steps]
                np.save(out / "inputs" / f"input{k}.npy", per_step[0] if len(steps) == 1 else np.stack(per_step))
        return Project(
            Path(out),
            board,
            self.name,
            executor,
            meta.name,
            library.metadata,
            0,
            mode,
            len(steps),
            program=program if mode == STANDALONE else None,
        )

    def elf(self, project: Project) -> Path:
        return project.dir / (SERVER_EXE if project.mode == HOST_DRIVEN else HostProgram.EXE)

    def build(self, project: Project, log: Log = print) -> None:
        """Nothing to do: create compiled the program (and there is no firmware to measure)."""
        self.require_elf(project)
        return None

    def flash(
        self, project: Project, *, timeout: float = 300.0, log: Log = print, port: str | None = None
    ) -> RunResult:
        if port is not None:
            raise MicrocompilerError("--port is for boards; --board host runs the model as a local process")
        if project.mode == HOST_DRIVEN:
            return super().flash(project, timeout=timeout, log=log)
        program = project.program or HostProgram.built(project.info, project.dir, executor=project.executor)
        results = program.run(project.saved_input_steps(), timeout=timeout)
        return RunResult(
            results[-1].outputs,
            results[-1].ticks,
            results[-1].hz,
            None,
            "",
            [r.outputs for r in results],
            [r.ticks for r in results],
        )

    def open_link(self, project: Project, *, port: str | None = None, log: Log = quiet) -> Transport:
        from microcompiler.transport.subprocess import SubprocessTransport

        if port is not None:
            raise MicrocompilerError("--port is for boards; --board host runs the RPC server as a local process")
        if not is_host_project(project.dir):
            raise MicrocompilerError(f"{project.dir} is not a host RPC project (no {SERVER_EXE})")
        log(f"starting the host RPC server for {project.model}")
        return SubprocessTransport([str(project.dir.resolve() / SERVER_EXE)])

    def device_name(self, project: Project, port: str | None) -> str:
        return "host RPC server"


def open_host_project(directory: str | Path, board: Board) -> Project | None:
    """The host RPC project in ``directory`` (made by create_host_project), or None if it is none."""
    directory = Path(directory)
    if not is_host_project(directory):
        return None
    from microcompiler.rpc.plan import ModelPlan

    plan = ModelPlan.load(directory)
    return Project(directory, board, Host.name, "graph", plan.info.name, plan.metadata, 0, HOST_DRIVEN)
