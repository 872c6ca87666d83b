"""The compiler pipeline: import -> passes -> code generation -> files on disk."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from microcompiler.codegen import ModelLibrary, generate_library
from microcompiler.codegen.naming import layer_names
from microcompiler.errors import BoardError, MicrocompilerError, ModelFormatError, UnsupportedModelError
from microcompiler.frontend.tflite import load_tflite
from microcompiler.ir import Graph, Operator
from microcompiler.ops.base import kernel_for, operator_context
from microcompiler.ops.features import has_dsp
from microcompiler.ops.quant import INT_RANGES
from microcompiler.outdir import listed_files, read_manifest, replace_output_dir
from microcompiler.passes import PIPELINE, budget_pipeline, pipeline, plan_for_budget

MAX_ARENA_BYTES = 2**31 - 1  # arena offsets are C ints and 32-bit sizes in the graph description
SHARED_ARENA = "mc_shared_arena"  # the arena models share when they never run at the same time
MAX_NAME_LENGTH = 64  # the C name prefix; file names and macros are built from it
GENERATOR = "microcompiler"  # metadata.json's "generator": marks a directory as a model library we wrote
C_KEYWORDS = frozenset(
    """auto break case char const continue default do double else enum extern float for goto
    if inline int long register restrict return short signed sizeof static struct switch typedef union unsigned
    void volatile while _Bool _Complex _Imaginary""".split()
)
# The generated <name>.h and <name>.c sit next to the user's and the runtime's sources: a name that is a
# C99/C11, POSIX, glibc, newlib, picolibc or CMSIS header would hide that header (#include <math.h> finds the
# model's math.h; glibc's own headers include <features.h> and <endian.h>).
SYSTEM_HEADERS = frozenset(
    """assert complex ctype errno fenv float inttypes iso646 limits locale math setjmp
    signal stdalign stdarg stdatomic stdbool stddef stdint stdio stdlib stdnoreturn string strings tgmath threads
    time uchar wchar wctype unistd fcntl pthread sched alloca malloc memory dirent poll termios syslog sys
    reent newlib stdint_h main models features endian byteswap ieeefp picolibc xlocale libintl langinfo
    nl_types iconv getopt libgen regex search spawn utime elf link dlfcn grp pwd netdb paths err error
    sysexits ftw glob fnmatch wordexp aio mqueue semaphore utmpx monetary obstack execinfo alloca_h
    printf values envz argz cmsis_compiler cmsis_gcc arm_acle arm_math arm_mve core_cm4""".split()
)
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@runtime_checkable
class KnobSource(Protocol):
    """Per-operator knobs looked up for a planned graph: a tuning log applied to one CPU
    (``TuningLog.load(path).for_cpu(board.cpu)``, microcompiler/tuning/log.py) is one. The compiler
    asks it once the passes have run; it does not know where the knobs come from."""

    def knobs(self, graph: Graph) -> dict: ...


class InvalidNameError(MicrocompilerError):
    """A --name that is not usable as the C prefix of the model's functions, macros and files."""


def check_model_name(name: str) -> str:
    """Refuse a name that is not a C identifier we can build functions, macros and file names from."""
    shown = name if len(name) <= 40 else name[:37] + "..."
    if not _C_IDENTIFIER.match(name):
        raise InvalidNameError(
            f"--name {shown!r} is not a C identifier; use letters, digits and underscores, "
            "starting with a letter (for example: kws_model)"
        )
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidNameError(f"--name {shown!r} is {len(name)} characters long; use at most {MAX_NAME_LENGTH}")
    if _reserved(name):
        raise InvalidNameError(
            f"--name {shown!r} is reserved (a C keyword, a system header's name, a leading "
            "underscore, or the runtime's mc_ prefix); choose another name"
        )
    return name


def _reserved(name: str) -> bool:
    return (
        name in C_KEYWORDS
        or name.lower() in SYSTEM_HEADERS
        or name.startswith("_")
        or name.lower() == "mc"
        or name.lower().startswith("mc_")
    )


def safe_model_name(name: str) -> str:
    """A valid C name for a name derived from a file name: shortened, and moved off reserved words."""
    name = re.sub(r"[^0-9A-Za-z_]", "_", name).strip("_") or "model"
    if name[0].isdigit() or _reserved(name):
        name = "m_" + name
    return check_model_name(name[:MAX_NAME_LENGTH].rstrip("_"))


def check_operator(op: Operator, graph: Graph) -> None:
    """Let the operator's kernel reject what it cannot run.

    Kernels index tensors and shapes freely; on a damaged model that can fail in plain Python ways,
    which we report as an inconsistent operator rather than as a crash.
    """
    try:
        with operator_context(op):
            kernel_for(op).check(op, graph)
    except (IndexError, KeyError, ValueError, TypeError, AttributeError, ZeroDivisionError, OverflowError) as exc:
        raise UnsupportedModelError(
            f"operator {op.index} ({op.kind}) has inconsistent tensors or options ({type(exc).__name__}: "
            f"{exc}); re-export the model with the TFLite converter"
        ) from None


def check_quantization(graph: Graph, where: str = "") -> None:
    """Zero points must fit their tensor's type (TFLite's rule; kernels build int8 tables from them)."""
    for index, t in enumerate(graph.tensors):
        if t.quant is None or t.dtype not in INT_RANGES:
            continue
        lo, hi = INT_RANGES[t.dtype]
        outside = [int(z) for z in t.quant.zero_point if not lo <= int(z) <= hi]
        if outside:
            raise ModelFormatError(
                f"tensor {index} ('{t.name}'){where} has zero point {outside[0]}, outside {t.dtype}'s "
                f"range [{lo}, {hi}]; the model file is damaged"
            )


def check_graphs(graph: Graph) -> None:
    """Every check of the main graph, on each subgraph too (WHILE bodies and conditions, IF branches,
    CALL_ONCE's): zero points, then each operator's kernel checks, before any work."""
    for g in graph.all_graphs():
        where = "" if g is graph else f" of subgraph '{g.name}'"
        check_quantization(g, where)
        for op in g.operators:
            try:
                check_operator(op, g)
            except MicrocompilerError as exc:
                if g is graph:
                    raise
                raise type(exc)(f"subgraph '{g.name}': {exc}") from None


def run_passes(graph: Graph, passes: Sequence[Callable[[Graph], Graph]] | None = None) -> Graph:
    check_graphs(graph)  # reject unsupported configurations before any work
    for p in PIPELINE if passes is None else passes:
        graph = p(graph)
    return graph


KERNEL_CHOICES = ("fast", "reference")


def parse_patches(value: str | tuple[int, int] | list[int] | None) -> tuple[int, int] | None:
    """The patch grid knob: None/"auto" (chosen), "off" (1x1), "RxC" or (rows, cols)."""
    if value is None or value == "auto":
        return None
    if value == "off":
        return (1, 1)
    try:
        rows, cols = (int(v) for v in (value.lower().split("x") if isinstance(value, str) else value))
    except (ValueError, TypeError, AttributeError):
        rows = cols = 0
    if rows < 1 or cols < 1:
        raise MicrocompilerError(f"patch grid {value!r} is not valid; use ROWSxCOLS (for example 2x2), auto or off")
    return rows, cols


def compile_model(
    model_path: str | Path,
    features: frozenset[str] = frozenset(),
    name: str | None = None,
    tuning: dict | KnobSource | None = None,
    kernels: str = "fast",
    shared_arena: str | None = None,
    patches: str | tuple[int, int] | None = None,
    ram_limit: int | None = None,
    ram_available: int | None = None,
) -> ModelLibrary:
    """Compile a .tflite file into an in-memory model library (nothing is written).

    ``features``: the target CPU's features (``Board.cpu.features``), which pick the fast kernels.
    ``kernels="reference"`` emits every operator's reference loop nest instead (to read or diff
    against the fast version of a layer). ``tuning``: knob overrides ({"CONV_2D": {"weights": "s16"}},
    keyed by "*", operator kind or operator index), or a tuning log for the target's CPU
    (``TuningLog.load(path).for_cpu(board.cpu)``, docs/tuning.md), applied per operator signature.
    ``shared_arena``: the C name of an arena the firmware defines and shares between models
    (docs/multiple_models.md); default: the library's own. ``patches``: the grid of the patch pass
    (docs/memory.md), "RxC" or (rows, cols), "off"; default (None or "auto"): chosen when it lowers the
    RAM peak; also read from ``tuning={"patches": ...}``. ``ram_limit``: the most bytes of arena +
    scratch the model may use; the fastest plan that fits is chosen (passes/ram_budget.py, docs/memory.md)
    or a one-line BoardError names the smallest plan's peak. ``ram_available``: the board's RAM left after
    the runtime and the stack (``targets.footprint.ram_for_models``); without ``ram_limit``, the budget is
    that minus the model's inputs, outputs and state, and the default plan is kept whenever it fits."""
    if kernels not in KERNEL_CHOICES:
        raise MicrocompilerError(f"unknown kernel choice '{kernels}'; use one of {', '.join(KERNEL_CHOICES)}")
    if name is not None:
        check_model_name(name)  # before reading the model: the name is the cheaper thing to get wrong
    graph = load_tflite(model_path)
    graph.name = name if name is not None else safe_model_name(graph.name)
    if patches is None and isinstance(tuning, dict):
        patches = tuning.get("patches")
    if kernels == "reference":
        features = frozenset()
    loaded = graph

    def build(tails: bool) -> ModelLibrary:
        graph = run_passes(
            loaded,
            _passes(loaded, parse_patches(patches), features, ram_limit, ram_available, kernels == "reference", tails),
        )
        if graph.arena_bytes > MAX_ARENA_BYTES:
            raise UnsupportedModelError(
                f"the model's activations need an arena of {graph.arena_bytes:,} bytes, more than any "
                f"microcontroller has (microcompiler's limit: {MAX_ARENA_BYTES:,}); reduce the input size or the "
                "layers' widths"
            )
        knobs = tuning.knobs(graph) if isinstance(tuning, KnobSource) else tuning
        if kernels == "reference":
            knobs = {"*": {"variant": "reference"}}
        library = generate_library(graph, features, knobs, shared_arena)
        _check_budget(library, graph, ram_limit)
        return library

    library = build(True)
    if not tails_hold(library):  # a knob chose a kernel that writes before it has read: plan without them
        library = build(False)
    return library


def tails_hold(library: ModelLibrary) -> bool:
    """Every operator whose output holds its input in its tail (memory_plan.tail_pairs) emits the
    im2col kernel, which reads each group of pixels before it writes theirs."""
    from microcompiler.ops.fast.conv_2d_im2col import IM2COL
    from microcompiler.passes.memory_plan import tail_pairs

    outputs = set(tail_pairs(library.graph).values())
    return all(f.plan.variant == IM2COL for f in library.functions if set(f.op.outputs) & outputs)


def check_ram_limit(value: int | None) -> int | None:
    if value is not None and (not isinstance(value, int) or value < 1):
        raise MicrocompilerError(
            f"RAM limit {value!r} is not valid; give a whole number of bytes, e.g. --ram-limit 32768"
        )
    return value


def _passes(
    graph: Graph,
    grid: tuple[int, int] | None,
    features: frozenset[str],
    ram_limit: int | None,
    ram_available: int | None,
    reference: bool = False,
    tails: bool = True,
) -> list:
    """The pipeline: with a RAM budget (and the patch grid not forced), the RAM-budget planner
    chooses the plan (passes/ram_budget.py); else the default passes. ``tails``: the patch pass's tail
    shares (patches.tail_shares)."""
    check_ram_limit(ram_limit)
    if grid is not None or (ram_limit is None and ram_available is None):
        return pipeline(grid, wide=has_dsp(features), features=features if tails else None)
    if ram_limit is not None:
        limit, source, keep = ram_limit, "--ram-limit", False
    else:
        assert ram_available is not None
        own = sum(graph.tensors[t].nbytes for t in graph.inputs + graph.outputs) + sum(
            t.nbytes for t in graph.tensors if t.persistent
        )
        limit, source, keep = max(0, ram_available - own), "the board's free RAM", True
    return budget_pipeline(
        functools.partial(
            plan_for_budget,
            limit=limit,
            features=features,
            keep_default=keep,
            limit_source=source,
            layer_name=_layer_name,
            reference=reference,
            tails=tails,
        )
    )


def _layer_name(graph: Graph, op: Operator) -> str:
    return layer_names(graph)[op.index]


def _check_budget(library: ModelLibrary, graph: Graph, ram_limit: int | None) -> None:
    """The generated code's arena + scratch against the limit (the planner estimates the scratch
    from the kernels' plans; a forced patch grid is not planned for the limit at all)."""
    limit = graph.ram_plan.get("limit", ram_limit)
    info = library.info
    used = info.arena_bytes + info.scratch_bytes
    if limit is not None and used > limit:
        raise BoardError(
            f"the model needs {used:,} B of arena + scratch ({info.arena_bytes:,} + "
            f"{info.scratch_bytes:,}), over the RAM limit of {limit:,} B, its peak at layer "
            f"{info.memory_peak.layer_name if info.memory_peak else None}; raise the limit, or leave --patches to the planner"
        )


def write_atomically(library: ModelLibrary, out_dir: str | Path, extra: Callable[[Path], None] | None = None) -> Path:
    """Write the library to out_dir: complete or not at all, replacing only what a previous compile wrote.

    ``out_dir`` must be new, empty, or a model library written before (its metadata.json lists the
    files it wrote, see :mod:`microcompiler.outdir`); anything else is refused with a one-line error.
    ``extra(stage)``, if given, adds files beside the library (listed with its own).
    """

    def fill(stage: Path) -> None:
        library.write(stage)
        if extra is not None:
            extra(stage)
        meta_path = stage / "metadata.json"
        meta = json.loads(meta_path.read_text())
        meta["generator"] = GENERATOR
        meta["files"] = listed_files(stage)
        meta_path.write_text(json.dumps(meta, indent=2) + "\n")

    return replace_output_dir(out_dir, fill, previous_library_files, "model library")


def previous_library_files(directory: Path) -> set[str] | None:
    """The files a previous ``compile`` wrote in ``directory`` (from metadata.json), or None if it did not."""
    try:
        meta = json.loads((directory / "metadata.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict):
        return None
    if meta.get("generator") == GENERATOR:
        return read_manifest(meta.get("files"), directory)
    name = meta.get("name")
    if not (isinstance(name, str) and _C_IDENTIFIER.match(name) and "operators" in meta and "arena_bytes" in meta):
        return None
    # A library written before metadata.json listed its files: its files have fixed names.
    patterns = [
        "metadata.json",
        f"include/{name}.h",
        f"include/{name}_graph.h",
        f"src/{name}_*.c",
        "include/microcompiler/*.h",
    ]
    return {p.relative_to(directory).as_posix() for pattern in patterns for p in directory.glob(pattern)}
