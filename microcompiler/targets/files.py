"""The files of a project: the input compiled in, the runtime copy, and the output directory.

A project directory is new, empty or a previous project; it is written in a staging directory and
swapped in by microcompiler/outdir.py, so a failed create never loses the user's files.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from microcompiler import resources
from microcompiler.codegen.c_arrays import c_array, c_initializer
from microcompiler.codegen.model_info import ModelInfo
from microcompiler.errors import MicrocompilerError
from microcompiler.host import input_prefix
from microcompiler.inputs import check_input, load_inputs, random_inputs
from microcompiler.ir import c_type
from microcompiler.outdir import check_output_dir, check_path_is_safe, listed_files, read_manifest, replace_output_dir

PROJECT_FILE = "microcompiler-project.json"
BUILD_DIR = "build"  # written by 'microcompiler build' (CMake or west), replaced with the project


# ---- Inputs ----


def resolve_inputs(inputs: Any, info: ModelInfo) -> list[np.ndarray]:
    """The arrays for ``inputs``: None (a fixed seeded random input), .npy paths, or arrays."""
    if inputs is None:
        return random_inputs(info.inputs)
    if isinstance(inputs, (str, Path)):
        inputs = [inputs]
    if all(isinstance(x, (str, Path)) for x in inputs):
        return load_inputs([str(x) for x in inputs], info.inputs)
    if len(inputs) != len(info.inputs):
        raise MicrocompilerError(f"the model has {len(info.inputs)} input(s) but {len(inputs)} were given")
    return [check_input(np.asarray(arr), meta, f"input for '{meta.name}'") for arr, meta in zip(inputs, info.inputs)]


def resolve_input_steps(input: Any, input_steps: Any, info: ModelInfo) -> list[list[np.ndarray]]:
    """The input sets of a project: ``input_steps`` (one set per inference, in order) or the one set
    ``input`` resolves to."""
    if input_steps is None:
        return [resolve_inputs(input, info)]
    if input is not None:
        raise MicrocompilerError("pass either one input set or a sequence of them, not both")
    if not input_steps:
        raise MicrocompilerError("the sequence of input sets is empty; pass at least one")
    return [resolve_inputs(step, info) for step in input_steps]


def save_inputs(stage: Path, steps: list[list[np.ndarray]], info: ModelInfo, folder: str = "inputs") -> list[dict]:
    """Write <folder>/input<k>.npy (with a leading axis over the steps of a sequence); returns what the
    templates need to compile each input in (the C array ``g_<model>_<c_name>`` and its ``definition``;
    ``elements``: per step), as host.runner_model takes them."""
    prefix = input_prefix(info.name)
    (stage / folder).mkdir(parents=True)
    values = []
    for k, meta in enumerate(info.inputs):
        per_step = [step[k] for step in steps]
        arr = per_step[0] if len(steps) == 1 else np.stack(per_step)
        np.save(stage / folder / f"input{k}.npy", arr)
        values.append(
            {
                **meta.to_json(),
                "array": f"{prefix}{meta.c_name}",
                "elements": max(1, per_step[0].size),
                "initializer": c_initializer(arr),
                "definition": c_array(f"{prefix}{meta.c_name}", c_type(meta.dtype), arr),
            }
        )
    return values


# ---- The output directory ----

# Top-level names a project written before microcompiler-project.json listed its files can hold.
_LEGACY_PROJECT_ENTRIES = (
    "microcompiler-project.json",
    "board.toml",
    "CMakeLists.txt",
    "arm-none-eabi.cmake",
    "linker.ld",
    "src/main.c",
    "inputs",
    "model",
    "crt",
    "host_driven.json",
    "prj.conf",
    "legacy_zephyr.conf",
    "boards",
)


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


def check_project_dir(out_dir: str | Path) -> Path:
    """Fail early (before compiling) on a directory the project cannot go to; returns it."""
    out = check_output_dir(out_dir, "project directory")
    check_path_is_safe(Path(os.path.realpath(out_dir)), "the project directory")
    return out


def write_project_dir(out_dir: str | Path, fill: Callable[[Path], None], info: dict) -> Path:
    """Write a project with ``fill(staging_dir)`` and put it at out_dir, never losing the user's files.

    out_dir must be new, empty or a previous project (only the files that project's create-project
    and build wrote are replaced: see microcompiler.outdir). The path must suit CMake and the shell.
    """
    out_dir = check_project_dir(out_dir)

    def fill_and_list(stage: Path) -> None:
        fill(stage)
        (stage / PROJECT_FILE).write_text(json.dumps(info, indent=2) + "\n")
        files = listed_files(stage)
        (stage / PROJECT_FILE).write_text(json.dumps({**info, "files": files}, indent=2) + "\n")

    return replace_output_dir(out_dir, fill_and_list, previous_project_files, "microcompiler project")


def copy_runtime(project_dir: Path, family: str) -> None:
    """crt's headers and portable sources, and one platform family, into DIR/crt. The kernel headers
    (``kernel_*.h``) are not among them: each model library carries the ones its code uses."""
    crt = resources.crt_dir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(
        crt / "include",
        project_dir / "crt" / "include",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "kernel_*.h"),
    )
    shutil.copytree(crt / "src", project_dir / "crt" / "src", ignore=ignore)
    shutil.copytree(crt / "platform" / family, project_dir / "crt" / "platform" / family, ignore=ignore)
