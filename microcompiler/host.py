"""Build a compiled model for this computer and run it (``--board host``).

The host project is the model library, crt's portable sources and POSIX platform hooks, and the
``project_templates/host`` main; it is compiled with the system C compiler in strict C99 mode.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import threading
import time
from pathlib import Path

import numpy as np

from microcompiler import cleanup, resources
from microcompiler.ccache import ccache_environment, launcher
from microcompiler.codegen import ModelLibrary
from microcompiler.codegen.graph_description import check_graph_executor
from microcompiler.codegen.model_info import ModelInfo, TensorInfo
from microcompiler.errors import DeviceError, ToolchainError
from microcompiler.ir import np_dtype
from microcompiler.standalone import StandaloneResult, parse_reports
from microcompiler.templating import render_file
from microcompiler.transport.base import check_timeout

STRICT_CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
SANITIZE_CFLAGS = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
CRT_PORTABLE_SOURCES = ["src/status.c", "src/report.c", "src/graph_executor.c"]
COMPILE_TIMEOUT = 900.0  # seconds for the host C compiler on one model


def render_template(template_dir: Path, template: str, **values) -> str:
    """A project template's file (the package's one jinja environment, microcompiler/templating.py)."""
    return render_file(template_dir, template, **values)


def _tensor_values(tensor: TensorInfo, prefix: str) -> dict:
    """A tensor as the templates name it: its C array ``<prefix><c_name>`` and its elements (at least one)."""
    return {
        **tensor.to_json(),
        "array": f"{prefix}{tensor.c_name}",
        "elements": max(1, tensor.bytes // np.dtype(np_dtype(tensor.dtype)).itemsize),
    }


def runner_model(info: ModelInfo, inputs: list[dict] | None = None) -> dict:
    """One model as project_templates/models/runners.c.j2 takes it (the one C runner's table): its
    name, its output buffers ``g_<model>_<tensor>``, and its inputs: ``inputs`` compiled in (each
    with its C ``definition``, targets/files.save_inputs), else buffers main() fills."""
    prefix = input_prefix(info.name)
    if inputs is None:
        inputs = [{**_tensor_values(t, prefix), "definition": None} for t in info.inputs]
    outputs = [_tensor_values(t, prefix) for t in info.outputs]
    return dict(name=info.name, NAME=info.name.upper(), inputs=inputs, outputs=outputs)


def input_prefix(model: str) -> str:
    """The prefix of the C arrays that hold a model's inputs and outputs in main.c."""
    return f"g_{model}_"


def compiler() -> list[str]:
    cc = shlex.split(os.environ.get("CC", "cc"))
    if shutil.which(cc[0]) is None:
        raise ToolchainError(f"no C compiler '{cc[0]}' on PATH; install one (Debian: apt-get install gcc) or set CC")
    return cc


def crt_sources() -> list[str]:
    """crt's portable sources and the POSIX platform hooks: every host program's runtime."""
    crt = resources.crt_dir()
    return [*(str(crt / s) for s in CRT_PORTABLE_SOURCES), str(crt / "platform/posix/platform.c")]


def build_crt_objects(
    work_dir: Path,
    sanitize: bool = False,
    opt: str = "-O2",
    sanitize_opt: str = "-O1",
    sources: list[str] | None = None,
) -> list[Path]:
    """crt_sources() (or ``sources``) compiled into object files in ``work_dir``, one source at a
    time and through ccache when it is installed (microcompiler/ccache.py: another process that
    builds the runtime with the same flags takes it from the cache): for programs that build many
    models with the same flags (``HostProgram(..., crt_objects=...)``; scripts/fuzz_models.py) and
    the host RPC server."""
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    crt = resources.crt_dir()
    objects = []
    for k, source in enumerate(crt_sources() if sources is None else sources):
        obj = work_dir / f"{k}_{Path(source).stem}.o"
        _compile(sanitize, opt, [f"-I{crt / 'include'}", "-c", source, "-o", str(obj)], sanitize_opt, cached=True)
        objects.append(obj)
    return objects


# crt's objects per (compiler, flags), compiled once in this process: a process that builds many host
# programs (validate's two modes, the API, the tests) compiles the runtime once. In a temporary
# directory of cleanup's, removed at exit and on a signal.
_crt_objects: dict[tuple, list[Path]] = {}
_crt_lock = threading.Lock()


def shared_crt_objects(sanitize: bool, opt: str, sanitize_opt: str) -> list[Path]:
    """build_crt_objects() for these flags, compiled at the first call of this process."""
    key = (tuple(compiler()), sanitize, sanitize_opt if sanitize else opt)
    with _crt_lock:
        objects = _crt_objects.get(key)
        if objects is None or not all(o.is_file() for o in objects):
            objects = build_crt_objects(cleanup.temp_dir("microcompiler-crt-"), sanitize, opt, sanitize_opt)
            _crt_objects[key] = objects
        return objects


def _compile(sanitize: bool, opt: str, arguments: list[str], sanitize_opt: str = "-O1", cached: bool = False) -> None:
    """The host C compiler on ``arguments``: at ``opt``, or with the sanitizers at ``sanitize_opt``
    (-O1 as the tests build; -O0 compiles about 4x faster, for the fuzzer's many small programs).
    ``cached``: one source of crt's to an object file, through ccache when it can be used."""
    flags = STRICT_CFLAGS + ([sanitize_opt, *SANITIZE_CFLAGS[1:]] if sanitize else [opt])
    prefix = launcher() if cached else []
    env = ccache_environment(resources.crt_dir()) if prefix else None
    proc = cleanup.run_bounded(
        [*prefix, *compiler(), *flags, *arguments], COMPILE_TIMEOUT, "the host C compiler", text=True, env=env
    )
    if proc.returncode != 0:
        raise ToolchainError(
            "the host C compiler failed on the generated code (a microcompiler bug, "
            f"please report it):\n{proc.stderr.strip()[:4000]}"
        )


class HostProgram:
    """A model library built into a host executable that runs inputs fed on stdin."""

    EXE = "model_host"  # the executable, in work_dir

    def __init__(
        self,
        library: ModelLibrary,
        work_dir: Path,
        sanitize: bool = False,
        opt: str = "-O2",
        executor: str = "aot",
        crt_objects: list[Path] | None = None,
        sanitize_opt: str = "-O1",
    ):
        self.library = library
        self.executor = executor
        self.info = library.info  # the metadata, typed (codegen/model_info.py)
        if executor == "graph":
            check_graph_executor(self.info)
        self.work_dir = Path(work_dir)
        self.exe = self.work_dir / self.EXE
        self._build(sanitize, opt, crt_objects, sanitize_opt)

    @classmethod
    def built(cls, info: ModelInfo, work_dir: str | Path, executor: str = "aot") -> HostProgram:
        """The program an earlier HostProgram built in work_dir, to run again without recompiling."""
        program = cls.__new__(cls)
        program.library, program.executor, program.info = None, executor, info
        program.work_dir = Path(work_dir)
        program.exe = program.work_dir / cls.EXE
        return program

    def _build(self, sanitize: bool, opt: str, crt_objects: list[Path] | None, sanitize_opt: str) -> None:
        lib_dir = self.work_dir / "model"
        self.library.write(lib_dir)
        main = self.work_dir / "main.c"
        main.write_text(
            render_template(
                resources.templates_dir() / "host",
                "main.c.j2",
                name=self.info.name,
                executor=self.executor,
                models=[runner_model(self.info)],
                steps=1,  # main() reads each input set into the model's input buffers
                share_arena=False,
            )
        )
        crt = resources.crt_dir()
        sources = [
            str(main),
            *map(str, sorted((lib_dir / "src").glob("*.c"))),
            *map(str, crt_objects if crt_objects is not None else shared_crt_objects(sanitize, opt, sanitize_opt)),
        ]
        includes = [f"-I{lib_dir / 'include'}", f"-I{crt / 'include'}"]
        _compile(sanitize, opt, [*includes, *sources, "-o", str(self.exe), "-lm"], sanitize_opt)

    def run(self, inputs: list[list[np.ndarray]], timeout: float = 600, reset_every: int = 0) -> list[StandaloneResult]:
        """Run the model once per input set, in order, in one process (the model's state carries over
        from one set to the next; with ``reset_every`` N, ``<model>_reset()`` runs after every N
        sets); returns one result per set.

        The program runs in its own process group with its input and output in files: after
        ``timeout`` seconds, or once it has printed far more than its reports need, it is stopped
        and DeviceError says why (never a wait without end, never unbounded memory)."""
        timeout = check_timeout(timeout)
        blob = bytearray()
        for input_set in inputs:
            for arr, tensor in zip(input_set, self.info.inputs):
                blob += np.ascontiguousarray(arr, dtype=np_dtype(tensor.dtype)).tobytes()
        in_path, out_path, err_path = (self.work_dir / f"run.{s}" for s in ("in", "out", "err"))
        in_path.write_bytes(bytes(blob))
        report_bytes = sum(2 * o.bytes + 64 for o in self.info.outputs) + 256
        output_limit = (1 << 20) + 2 * len(inputs) * report_bytes
        with open(in_path, "rb") as stdin, open(out_path, "wb") as stdout, open(err_path, "wb") as stderr:
            argv = [str(self.exe)] + ([str(int(reset_every))] if reset_every else [])
            proc = cleanup.spawn(argv, stdin=stdin, stdout=stdout, stderr=stderr)
        try:
            deadline = time.monotonic() + timeout
            while proc.poll() is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DeviceError(
                        f"the host model program did not finish within {timeout:g} s; stopped it "
                        "(raise --timeout if the model is just slow)"
                    )
                if out_path.stat().st_size > output_limit:
                    raise DeviceError(
                        f"the host model program printed more than {output_limit:,} bytes for "
                        f"{len(inputs)} run(s) without finishing; stopped it"
                    )
                try:
                    proc.wait(timeout=min(left, 0.05))
                except subprocess.TimeoutExpired:
                    pass
        finally:
            cleanup.stop(proc, grace=2.0)
        stderr_text = err_path.read_bytes()[-4000:].decode(errors="replace").strip()
        if proc.returncode != 0:
            raise ToolchainError(f"the host model program failed (exit {proc.returncode}): {stderr_text}")
        results = parse_reports(out_path.read_bytes().decode(errors="replace"), self.info.outputs)
        if len(results) != len(inputs):
            raise ToolchainError(f"the host model program reported {len(results)} runs for {len(inputs)} inputs")
        return results
