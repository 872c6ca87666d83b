"""The host-driven project for ``--board host``: the RPC server built for this computer.

Layout of the project directory::

    DIR/model/              the model library
    DIR/rpc_main.c          from project_templates/host/rpc_main.c.j2
    DIR/crt_objects/        crt's sources compiled one at a time (through ccache when it can be used)
    DIR/rpc_server          the executable: speaks RPC on stdin/stdout
    DIR/host_driven.json    the model plan the host walks (microcompiler.rpc.plan)
"""

from __future__ import annotations

from pathlib import Path

from microcompiler import cleanup, resources
from microcompiler.errors import ToolchainError
from microcompiler.host import (
    COMPILE_TIMEOUT,
    SANITIZE_CFLAGS,
    STRICT_CFLAGS,
    build_crt_objects,
    compiler,
    crt_sources,
    render_template,
    runner_model,
)
from microcompiler.outdir import OutputDirError, check_output_dir
from microcompiler.rpc.plan import ModelPlan

RPC_CRT_SOURCES = ["src/rpc_framing.c", "src/rpc_server.c"]
SERVER_EXE = "rpc_server"
# Device memory beyond what the model's tensors need, for the user's own buffers.
DEFAULT_POOL_HEADROOM = 4096


def rpc_template_values(library, pool_headroom: int = DEFAULT_POOL_HEADROOM) -> dict:
    """What the host-driven mains (project_templates/models/rpc_server.c.j2) need besides the board."""
    info = library.info
    return dict(name=info.name, NAME=info.name.upper(), models=[runner_model(info)], pool_headroom=pool_headroom)


def create_host_project(
    library,
    out_dir: str | Path,
    sanitize: bool = False,
    opt: str = "-O2",
    pool_headroom: int = DEFAULT_POOL_HEADROOM,
    log=lambda _: None,
) -> Path:
    """Write and build the host RPC server for a compiled model library; returns the directory."""
    out = check_output_dir(out_dir, "project directory")  # a file, a path under a file, no permission
    if out.is_dir() and any(out.iterdir()) and not is_host_project(out):
        raise OutputDirError(
            f"{out} is not empty and is not a host RPC project; microcompiler will not "
            "overwrite files it did not write: choose a new or empty directory"
        )
    out.mkdir(parents=True, exist_ok=True)
    lib_dir = out / "model"
    library.write(lib_dir)
    main = out / "rpc_main.c"
    main.write_text(
        render_template(
            resources.templates_dir() / "host", "rpc_main.c.j2", **rpc_template_values(library, pool_headroom)
        )
    )
    ModelPlan.from_library(library).save(out)
    crt = resources.crt_dir()
    runtime = [*crt_sources(), *(str(crt / s) for s in RPC_CRT_SOURCES)]
    # the runtime one source at a time (through ccache when it can be used), the model with main()
    objects = build_crt_objects(out / "crt_objects", sanitize, opt, SANITIZE_CFLAGS[0], sources=runtime)
    sources = [str(main), *map(str, sorted((lib_dir / "src").glob("*.c"))), *map(str, objects)]
    flags = STRICT_CFLAGS + (SANITIZE_CFLAGS if sanitize else [opt])
    cmd = [
        *compiler(),
        *flags,
        f"-I{lib_dir / 'include'}",
        f"-I{crt / 'include'}",
        *sources,
        "-o",
        str(out / SERVER_EXE),
        "-lm",
    ]
    log(f"building the host RPC server for {library.info.name} ({cmd[0]})")
    proc = cleanup.run_bounded(cmd, COMPILE_TIMEOUT, "the host C compiler", text=True)
    if proc.returncode != 0:
        raise ToolchainError(
            "the host C compiler failed on the RPC server (a microcompiler bug, please report "
            f"it):\n{proc.stderr.strip()[:4000]}"
        )
    return out


def is_host_project(directory: str | Path) -> bool:
    d = Path(directory)
    return (d / SERVER_EXE).is_file() and (d / "host_driven.json").is_file()
