"""The Python API (docs/api.md): compile, analyze, bench, validate and compare returning plain data a
notebook can tabulate, and an RPC session to a device (docs/rpc.md).

    import microcompiler
    with microcompiler.connect("out/hello_rpc") as session:     # a host-driven project directory
        ex = session.executor()
        ex.set_input(0, x); ex.run(); y = ex.get_output(0)

``connect`` takes a host-driven project directory (host, bare-metal or Zephyr), or a transport, or a
serial port together with the model plan; ``open_model`` compiles a model, builds host-driven
firmware for a board, starts it and connects. Both sit above the device floor (rpc, targets): the
RPC client knows nothing of projects, the targets start firmware and hand back a session.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path

import numpy as np

from microcompiler.analysis import analyze_model
from microcompiler.analysis.analyze import analyze_library
from microcompiler.analysis.bench import bench_report, check_timed_runs
from microcompiler.analysis.compare import Side, side_from_report
from microcompiler.analysis.compare import compare as compare_sides
from microcompiler.boards import HOST, Board, resolve_board
from microcompiler.compiler import compile_model, write_atomically
from microcompiler.errors import MicrocompilerError
from microcompiler.frontend.tflite import load_tflite
from microcompiler.inputs import check_input, random_inputs
from microcompiler.rpc.client import Session
from microcompiler.rpc.plan import ModelPlan
from microcompiler.targets import HOST_DRIVEN, MODES, STANDALONE, open_project
from microcompiler.targets.base import start_on_board
from microcompiler.targets.footprint import ram_for_models
from microcompiler.transport.base import Transport
from microcompiler.transport.serial import SerialTransport
from microcompiler.tuning.log import TuningLog
from microcompiler.user_files import MAX_MODEL_BYTES, read_user_file
from microcompiler.validation import DeviceOptions, Sample
from microcompiler.validation import validate as run_validation
from microcompiler.validation.dataset import DEFAULT_PIXEL_RANGE, MAX_SAMPLES, add_label_metrics, samples_and_labels
from microcompiler.validation.onnx_reference import onnx_model


def connect(
    target=None,
    *,
    port: str | None = None,
    board: str | None = None,
    plan=None,
    model: str | None = None,
    timeout: float = 5.0,
    **session_options,
) -> Session:
    """Open an RPC session.

    target: a host-driven project directory (made by ``microcompiler run --mode host-driven``,
    ``create_host_project`` or ``create_project(mode="host-driven")``), or a Transport.
    port: a serial port path of a real board already running host-driven firmware (with plan=).
    model: in a project with several models (docs/multiple_models.md), the one to drive, by name
    (default: the first); the session checks the firmware holds it.
    """
    if isinstance(target, Transport):
        return Session(target, timeout=timeout, plan=_plan(plan), **session_options)
    if port is not None:
        return Session(SerialTransport(port), timeout=timeout, plan=_plan(plan, target), **session_options)
    if target is None:
        raise MicrocompilerError("connect() needs a project directory, a transport, or port=")
    project = open_project(target)
    if board is not None and not project.board.is_host and board != project.board.name:
        raise MicrocompilerError(f"{project.dir} was made for board {project.board.name}, not {board}")
    if model is not None and plan is None:
        project.model_info(model)  # a one-line error when the project holds no such model
        plan = project.dir / "models" / model if project.models else project.dir
    return project.target.start(project, load=False, timeout=timeout, plan=_plan(plan, project.dir), **session_options)


def _plan(plan, directory=None):
    if isinstance(plan, ModelPlan):
        return plan
    if plan is not None:
        return ModelPlan.load(plan)
    if directory is not None and (Path(directory) / "host_driven.json").is_file():
        return ModelPlan.load(directory)
    return None


def _quiet(_: str) -> None:
    pass


def open_model(
    model,
    board: str | Board = HOST,
    project_dir: str | Path | None = None,
    port: str | None = None,
    log: Callable[[str], None] = _quiet,
    template: str = "baremetal",
    **session_options,
) -> Session:
    """Compile ``model`` (a .tflite path or a ModelLibrary), build host-driven firmware for ``board``,
    start it (a host process, QEMU for emulated boards, ``west flash`` for Zephyr on hardware) and
    return an open session.

    With ``port``, nothing is started: the session talks to a board on that serial port that
    already runs host-driven firmware of this model (flash DIR/build/firmware.elf onto it first).
    Without ``project_dir`` the project lives in a temporary directory removed when the session closes.
    """
    board = resolve_board(board)  # an unknown board fails before anything is made
    temp = None
    if project_dir is None:
        temp = tempfile.mkdtemp(prefix="microcompiler-rpc-")
        project_dir = Path(temp) / "project"
    try:
        _, _, session = start_on_board(
            model, board, project_dir, template=template, port=port, log=log, **session_options
        )
    except BaseException:
        if temp:
            shutil.rmtree(temp, ignore_errors=True)
        raise
    if temp:
        # removed by close(), else when the session is collected or the interpreter exits
        session.cleanup.append(weakref.finalize(session, shutil.rmtree, temp, ignore_errors=True))
    return session


# ---- Plain-data entry points for notebooks (docs/api.md): each returns dicts and lists a table can take ----


def _board_or_none(board: str | Board | None) -> Board | None:
    resolved = resolve_board(board) if board is not None else None
    return None if resolved is None or resolved.is_host else resolved


def _tuning(tuning: str | Path | None, board: Board | None):
    if tuning is None:
        return None
    if board is None:
        raise MicrocompilerError("a tuning log needs a board: it holds timings per CPU")
    return TuningLog.load(tuning).for_cpu(board.cpu)


def compile(
    model: str | Path,
    board: str | Board | None = None,
    output: str | Path | None = None,
    *,
    tuning: str | Path | None = None,
    patches: str | None = None,
    ram_limit: int | None = None,
) -> dict:
    """Compile ``model`` for ``board``'s CPU (portable C without one); write the library to ``output``
    if given (``compile -o``'s rules: never over files compile did not write). Returns metadata.json's
    content (operators, arena, weights, memory peak, ...)."""
    target = _board_or_none(board)
    available = ram_for_models(target) if target is not None else None
    library = compile_model(
        model,
        features=target.cpu.features if target else frozenset(),
        tuning=_tuning(tuning, target),
        patches=patches,
        ram_limit=ram_limit,
        ram_available=available,
    )
    if output is not None:
        write_atomically(library, output)
    return library.metadata


def analyze(
    model: str | Path,
    board: str | Board | None = None,
    *,
    tuning: str | Path | None = None,
    patches: str | None = None,
    ram_limit: int | None = None,
) -> dict:
    """What ``microcompiler analyze --json`` prints: per-layer estimates, totals, fit, memory plan."""
    target = _board_or_none(board)
    return analyze_model(model, target, ram_limit=ram_limit, tuning=_tuning(tuning, target), patches=patches)


def bench(
    model: str | Path,
    board: str | Board = HOST,
    *,
    number: int = 10,
    repeat: int = 3,
    inputs: list | None = None,
    tuning: str | Path | None = None,
    template: str = "baremetal",
) -> dict:
    """What ``microcompiler bench --json`` prints: the whole inference and each operator timed on the
    device (host-driven firmware built and started for ``board``, stopped afterwards)."""
    check_timed_runs(number, repeat, spell=lambda name: f"{name}=")
    target = resolve_board(board)
    library = compile_model(
        model, features=target.cpu.features, tuning=_tuning(tuning, None if target.is_host else target)
    )
    meta = library.info
    inputs = _inputs(inputs, meta.inputs) if inputs is not None else random_inputs(meta.inputs)
    with open_model(library, target, template=template) as session, session.executor() as ex:
        ex(*inputs)  # warm up, and leave real data in every tensor
        whole = ex.time_inference(number, repeat)
        operators = ex.profile(number, 1)
    analysis = analyze_library(library, None if target.is_host else target)
    return bench_report(meta, target, whole, operators, analysis, number, repeat)


def _inputs(given, inputs_meta) -> list:
    """bench's inputs=: one array per model input, each checked as ``run --input`` checks a file."""
    if not isinstance(given, (list, tuple)) or len(given) != len(inputs_meta):
        count = len(given) if isinstance(given, (list, tuple)) else type(given).__name__
        raise MicrocompilerError(
            f"inputs= gives {count} array(s) but the model has {len(inputs_meta)} input(s); pass a list with "
            "one numpy array per input"
        )
    return [check_input(np.asarray(x), meta, f"inputs[{k}]") for k, (x, meta) in enumerate(zip(given, inputs_meta))]


def _check_validate(modes, inputs, dataset, pixel_range) -> tuple[str, ...]:
    """validate's arguments, checked as the command checks its options (one line each)."""
    if isinstance(modes, str) or not isinstance(modes, (list, tuple)) or not modes:
        raise MicrocompilerError(
            f"modes={modes!r}: give a tuple of one or both of {', '.join(MODES)}, e.g. modes=('standalone',)"
        )
    unknown = [m for m in modes if m not in MODES]
    if unknown or len(set(modes)) != len(modes):
        raise MicrocompilerError(
            f"modes={tuple(modes)!r}: {'unknown mode ' + repr(unknown[0]) if unknown else 'a mode given twice'}; "
            f"give one or both of {', '.join(MODES)}"
        )
    if dataset is None and (isinstance(inputs, bool) or not isinstance(inputs, int) or not 1 <= inputs <= MAX_SAMPLES):
        raise MicrocompilerError(f"inputs={inputs!r}: give between 1 and {MAX_SAMPLES:,} seeded inputs, e.g. inputs=10")
    try:
        low, high = (float(v) for v in pixel_range)
    except (TypeError, ValueError):
        low = high = math.nan
    if not (math.isfinite(low) and math.isfinite(high)) or low == high:
        raise MicrocompilerError(f"pixel_range={pixel_range!r}: give two different finite numbers, e.g. (0, 1)")
    return tuple(modes)


def validate(
    model: str | Path,
    board: str | Board = HOST,
    *,
    inputs: int = 10,
    dataset: str | Path | None = None,
    labels: str | Path | None = None,
    reference: str | Path | None = None,
    modes: tuple[str, ...] = (STANDALONE, HOST_DRIVEN),
    template: str = "baremetal",
    pixel_range: tuple[float, float] = DEFAULT_PIXEL_RANGE,
) -> dict:
    """What ``microcompiler validate --json`` prints: every output against TFLite Micro (and the float
    ``reference`` model), with accuracy against ``labels`` when the dataset or a labels file gives them.
    ``dataset``: an .npz archive, a .csv file or a directory of per-sample files (``validate.md``)."""
    modes = _check_validate(modes, inputs, dataset, pixel_range)
    target = resolve_board(board)
    model_bytes = read_user_file(model, "model file", MAX_MODEL_BYTES)
    float_bytes = read_user_file(reference, "reference model", MAX_MODEL_BYTES) if reference is not None else None
    library = compile_model(model, features=target.cpu.features)
    meta = library.info.inputs
    samples, found_labels = samples_and_labels(
        meta,
        dataset=dataset,
        labels=labels,
        otherwise=lambda: [Sample(random_inputs(meta, k), f"seed {k}") for k in range(inputs)],
        pixel_range=pixel_range,
        outputs_meta=library.info.outputs,
    )
    collected: dict = {}
    report = run_validation(
        library,
        target,
        samples,
        model_bytes,
        load_tflite(model),
        modes=modes,
        float_bytes=float_bytes,
        options=DeviceOptions(template=template),
        collect=collected,
        onnx_path=onnx_model(model, model_bytes),
    )
    return add_label_metrics(report, collected, found_labels)


def compare(
    a: str | Path | dict, b: str | Path | dict, board: str | Board | None = None, board_b: str | Board | None = None
) -> dict:
    """What ``microcompiler compare --json`` prints. A side is a .tflite path (analyzed for ``board``,
    B for ``board_b`` if given) or a report dict from :func:`analyze` or :func:`bench`."""

    def side(x, which: str, on) -> Side:
        if isinstance(x, dict):
            return side_from_report(x, which)
        return side_from_report(analyze(x, on), f"{which} {Path(x).name}")

    return compare_sides(side(a, "A", board), side(b, "B", board_b if board_b is not None else board))
