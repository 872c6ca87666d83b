"""Several models in one firmware (docs/multiple_models.md).

``create-project --model A --model B`` writes one project that holds every model's library::

    DIR/models/<name>/              each model library (microcompiler compile), its metadata.json
    DIR/models/<name>/host_driven.json   host-driven mode: the plan the host walks for that model
    DIR/inputs/<name>/input<k>.npy  the input compiled in for each model
    DIR/src/main.c                  as for one model: standalone, every model's runner (project_templates/
                                    models/runners.c.j2) and the template's main(), which runs each
                                    once into one report; host-driven, one RPC server for every
                                    model, picked by name (project_templates/models/rpc_server.c.j2)

Every C symbol of a library starts with its model's name (``<name>_run``, ``<name>_<layer>``,
``<name>_registry``, ...; arenas, scratch and weights are static), so distinct names that are no
prefix of one another never clash. ``share_arena`` gives every model the one arena
``mc_shared_arena`` defined in src/main.c, as large as the largest model's, instead of one each:
allowed only when the models never run at the same time (see :func:`check_can_share_arena`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from microcompiler.boards import Board, write_board_file
from microcompiler.codegen import ModelLibrary
from microcompiler.codegen.model_info import ModelInfo
from microcompiler.compiler import SHARED_ARENA, check_model_name, compile_model
from microcompiler.errors import MicrocompilerError
from microcompiler.host import runner_model
from microcompiler.inputs import random_inputs
from microcompiler.targets.base import HOST_DRIVEN, Log, Project, Target, check_executor, get_target, quiet, templates
from microcompiler.targets.files import check_project_dir, save_inputs, write_project_dir

# The RPC server searches at most MC_RPC_MAX_REGISTRIES (4) registries: one per model plus the
# registry of the models' <name>_run functions.
MAX_HOST_DRIVEN_MODELS = 3


class ModelNameError(MicrocompilerError):
    """Two models of one firmware whose names (the C prefix of their symbols) would clash."""


def check_model_names(names: list[str], sources: list[str]) -> None:
    """Distinct C prefixes: no two equal (ignoring case: macros are upper case) and none a prefix of
    another followed by '_' (model ``kws``'s layer ``net_conv`` and model ``kws_net``'s layer ``conv``
    would both be ``kws_net_conv``)."""
    for name in names:
        check_model_name(name)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            if i >= j:
                continue
            if a.lower() == b.lower():
                raise ModelNameError(
                    f"models {sources[i]} and {sources[j]} are both named '{a}'; give each its "
                    "own C name with --name (once per --model, in the same order)"
                )
            short, long_ = (a, b) if len(a) < len(b) else (b, a)
            if long_.lower().startswith(short.lower() + "_"):
                raise ModelNameError(
                    f"model name '{short}' is a prefix of '{long_}', so their C symbols could "
                    "clash; rename one with --name (once per --model, in the same order)"
                )


def holds_state(library: ModelLibrary) -> bool:
    """Does the model keep state from one inference to the next (variable tensors, state_bytes)?"""
    return library.info.keeps_state or any(getattr(t, "is_variable", False) for t in library.graph.tensors)


def check_can_share_arena(mode: str, concurrent: bool) -> None:
    """Refuse a shared arena when the models could overlap, before anything is compiled."""
    if concurrent:
        raise MicrocompilerError(
            "--share-arena needs models that never run at the same time, but --concurrent "
            "says they may; drop one of the two options"
        )
    if mode == HOST_DRIVEN:
        raise MicrocompilerError(
            "--share-arena is for standalone firmware: in host-driven mode the host decides "
            "when each model runs, so they could overlap; drop --share-arena"
        )


def check_no_state(libraries: list[ModelLibrary]) -> None:
    for library in libraries:
        if holds_state(library):
            raise MicrocompilerError(
                f"model {library.info.name} keeps state between inferences, which "
                "another model would overwrite in a shared arena; drop --share-arena"
            )


def combined_info(libraries: list[ModelLibrary], share_arena: bool) -> ModelInfo:
    """One model info for the fit check: every model's weights, code and I/O; the arenas add up, or
    the largest alone when shared."""
    infos = [lib.info for lib in libraries]
    arenas = [m.arena_bytes for m in infos]
    return ModelInfo(
        name=" + ".join(m.name for m in infos),
        inputs=[t for m in infos for t in m.inputs],
        outputs=[t for m in infos for t in m.outputs],
        arena_bytes=max(arenas) if share_arena else sum(arenas),
        params_bytes=sum(m.params_bytes for m in infos),
        scratch_bytes=sum(m.scratch_bytes for m in infos),
        state_bytes=0,  # a shared arena holds no model with state (check_no_state)
        total_macs=sum(m.total_macs for m in infos),
        fingerprint="",
        operators=[op for m in infos for op in m.operators],
    )


def compile_models(models: list, names: list[str] | None, board: Board, share_arena: bool) -> list[ModelLibrary]:
    """Each model compiled for the board with its C name (given, or from its file name)."""
    if names and len(names) != len(models):
        raise MicrocompilerError(
            f"{len(models)} models but {len(names)} --name options; give one --name per "
            "--model, in the same order, or none"
        )
    if names:
        check_model_names(names, [str(m) for m in models])
    arena = SHARED_ARENA if share_arena else None
    libraries = [
        model
        if isinstance(model, ModelLibrary)
        else compile_model(model, features=board.cpu.features, name=names[k] if names else None, shared_arena=arena)
        for k, model in enumerate(models)
    ]
    check_model_names([lib.info.name for lib in libraries], [str(m) for m in models])
    return libraries


def create_models_project(
    target: Target,
    models: list,
    board: Board,
    out_dir: str | Path,
    *,
    names: list[str] | None = None,
    executor: str = "aot",
    mode: str = "standalone",
    stack_bytes: int | None = None,
    share_arena: bool = False,
    concurrent: bool = False,
    log: Log = quiet,
) -> Project:
    """Write one firmware project that runs every model (.tflite paths or compiled libraries)."""
    if len(models) < 2:
        raise MicrocompilerError("give at least two models (--model A --model B) for a firmware with several models")
    if not target.several_models:
        several = ", ".join(t for t in templates() if get_target(t).several_models)
        raise MicrocompilerError(f"--template {target.name} runs one model; for several use --template {several}")
    target.check_board(board)
    if share_arena:
        check_can_share_arena(mode, concurrent)
    if mode == HOST_DRIVEN and len(models) > MAX_HOST_DRIVEN_MODELS:
        raise MicrocompilerError(
            f"host-driven firmware serves at most {MAX_HOST_DRIVEN_MODELS} models (the RPC "
            f"server's registries); give at most {MAX_HOST_DRIVEN_MODELS} --model options"
        )
    check_project_dir(out_dir)  # fail before the compile
    libraries = compile_models(models, names, board, share_arena)
    if share_arena:
        check_no_state(libraries)
        if any(lib.info.detail("shared_arena") != SHARED_ARENA for lib in libraries):
            raise MicrocompilerError(
                f"--share-arena needs every library compiled with the shared arena "
                f"'{SHARED_ARENA}'; pass .tflite files and let create-project compile them"
            )
    combined = combined_info(libraries, share_arena)
    infos = [lib.info for lib in libraries]
    stack = stack_bytes or max(target.default_stack_bytes(m, mode, board) for m in infos)
    check_executor(infos, executor, mode)
    target.check_fits(combined, board, executor, mode, stack)
    info = {
        "model": infos[0].name,
        "models": [m.name for m in infos],
        "board": board.name,
        "template": target.name,
        "executor": executor,
        "stack_bytes": stack,
        "mode": mode,
        "share_arena": share_arena,
        **target.project_info(board),
    }

    def fill(stage: Path) -> None:
        models_values = []
        for lib, meta in zip(libraries, infos):
            name = meta.name
            lib.write(stage / "models" / name)
            inputs = save_inputs(stage, [random_inputs(meta.inputs)], meta, folder=f"inputs/{name}")
            models_values.append(runner_model(meta, inputs))
            if mode == HOST_DRIVEN:
                from microcompiler.rpc.plan import ModelPlan

                ModelPlan.from_library(lib).save(stage / "models" / name)
        if mode == HOST_DRIVEN:  # the default plan: the first model's
            shutil.copyfile(stage / "models" / infos[0].name / "host_driven.json", stage / "host_driven.json")
        write_board_file(board, stage / "board.toml")
        (stage / "src").mkdir()
        values = dict(
            name=infos[0].name,
            NAME=infos[0].name.upper(),
            board=board,
            executor=executor,
            mode=mode,
            models=models_values,
            share_arena=share_arena,
            shared_arena=SHARED_ARENA,
            include_dirs=[f"models/{m.name}/include" for m in infos],
            input_origin="seeded random",
            steps=1,
        )
        if mode == HOST_DRIVEN:
            from microcompiler.rpc.host_project import DEFAULT_POOL_HEADROOM

            values["pool_headroom"] = DEFAULT_POOL_HEADROOM
        target.fill(stage, values, stack)

    return Project.load(write_project_dir(out_dir, fill, info))
