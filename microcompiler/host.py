"""Build a compiled model for this computer and run it (``--board host``).

The host project is the model library, crt's portable sources and POSIX platform hooks, and the
``project_templates/host`` main; it is compiled with the system C compiler in strict C99 mode.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import jinja2
import numpy as np

from microcompiler import resources
from microcompiler.codegen import ModelLibrary
from microcompiler.errors import ToolchainError
from microcompiler.ir import c_type, np_dtype
from microcompiler.standalone import StandaloneResult, parse_reports

STRICT_CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
SANITIZE_CFLAGS = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                   "-fno-omit-frame-pointer"]
CRT_PORTABLE_SOURCES = ["src/status.c", "src/report.c", "src/graph_executor.c"]


def render_template(template_dir: Path, template: str, **values) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(template_dir), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    return env.get_template(template).render(c_type=c_type, itemsize=lambda d: np.dtype(np_dtype(d)).itemsize,
                                         **values)


def compiler() -> list[str]:
    cc = shlex.split(os.environ.get("CC", "cc"))
    if shutil.which(cc[0]) is None:
        raise ToolchainError(f"no C compiler '{cc[0]}' on PATH; install one (Debian: apt-get install gcc) "
                             "or set CC")
    return cc


class HostProgram:
    """A model library built into a host executable that runs inputs fed on stdin."""

    EXE = "model_host"  # the executable, in work_dir

    def __init__(self, library: ModelLibrary, work_dir: Path, sanitize: bool = False, opt: str = "-O2",
                 executor: str = "aot"):
        self.library = library
        self.executor = executor
        self.meta = library.metadata
        self.work_dir = Path(work_dir)
        self.exe = self.work_dir / self.EXE
        self._build(sanitize, opt)

    @classmethod
    def built(cls, meta: dict, work_dir: str | Path, executor: str = "aot") -> "HostProgram":
        """The program an earlier HostProgram built in work_dir, to run again without recompiling."""
        program = cls.__new__(cls)
        program.library, program.executor, program.meta = None, executor, meta
        program.work_dir = Path(work_dir)
        program.exe = program.work_dir / cls.EXE
        return program

    def _build(self, sanitize: bool, opt: str) -> None:
        lib_dir = self.work_dir / "model"
        self.library.write(lib_dir)
        main = self.work_dir / "main.c"
        main.write_text(render_template(resources.templates_dir() / "host", "main.c.j2",
                                        executor=self.executor, NAME=self.meta["name"].upper(), **self.meta))
        crt = resources.crt_dir()
        sources = [str(main), *map(str, sorted((lib_dir / "src").glob("*.c"))),
                   *(str(crt / s) for s in CRT_PORTABLE_SOURCES), str(crt / "platform/posix/platform.c")]
        flags = STRICT_CFLAGS + (SANITIZE_CFLAGS if sanitize else [opt])
        cmd = [*compiler(), *flags, f"-I{lib_dir / 'include'}", f"-I{crt / 'include'}", *sources,
               "-o", str(self.exe), "-lm"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ToolchainError("the host C compiler failed on the generated code (a microcompiler bug, "
                                 f"please report it):\n{proc.stderr.strip()[:4000]}")

    def run(self, inputs: list[list[np.ndarray]], timeout: float = 600) -> list[StandaloneResult]:
        """Run the model once per input set; returns one result per set."""
        blob = bytearray()
        for input_set in inputs:
            for arr, meta in zip(input_set, self.meta["inputs"]):
                blob += np.ascontiguousarray(arr, dtype=np_dtype(meta["dtype"])).tobytes()
        proc = subprocess.run([str(self.exe)], input=bytes(blob), capture_output=True, timeout=timeout)
        if proc.returncode != 0:
            raise ToolchainError(f"the host model program failed (exit {proc.returncode}): "
                                 f"{proc.stderr.decode(errors='replace').strip()[:4000]}")
        results = parse_reports(proc.stdout.decode(), self.meta["outputs"])
        if len(results) != len(inputs):
            raise ToolchainError(f"the host model program reported {len(results)} runs for {len(inputs)} inputs")
        return results
