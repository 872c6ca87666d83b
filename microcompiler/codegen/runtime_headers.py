"""The runtime headers a model library uses, and only those.

A header is used when the generated C names one of the helpers it defines (every runtime helper is
named ``mc_*`` or ``MC_*``); with it come the headers it includes. The operator source includes the
used ones in dependency order, and the library carries their copies under include/microcompiler/.
Every header includes what it needs at its top and nothing else (tests/test_runtime_headers.py).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from microcompiler import resources

HEADER_DIR = "include/microcompiler"
# the headers of the executors (<name>_aot.c, <name>_graph.c), copied with every library
EXECUTOR_HEADERS = ("status.h", "graph_executor.h")
KERNEL_HEADERS = (
    "kernel_math.h",
    "kernel_ort.h",
    "kernel_fixedpoint.h",
    "kernel_simd.h",
    "kernel_planes.h",
    "kernel_lanes.h",
    "kernel_fc_lanes.h",
    "kernel_portable.h",
    "kernel_portable_runs.h",
    "kernel_portable_fc.h",
    "kernel_s16.h",
    "kernel_mve_ort.h",
    "kernel_mve.h",
    "kernel_mve_dw.h",
    "kernel_mve_matmul.h",
    "kernel_mve_tables.h",
    "kernel_mve_lstm.h",
    "kernel_float.h",
    "kernel_elementwise.h",
    "kernel_activation.h",
    "kernel_signal.h",
    "kernel_fft.h",
    "kernel_fft32.h",
    "kernel_libm.h",
)

_NAME = r"((?:mc|MC)_\w+)"
_DEFINITIONS = [
    re.compile(p, re.M)
    for p in (
        r"#\s*define\s+" + _NAME,  # macros
        r"^static\b[^;=\n]*?\b" + _NAME + r"\s*[(\[]",  # static inline functions, static const tables
        r"^}\s*" + _NAME + r"\s*;",  # typedef struct {...} name;
        r"^typedef\b[^;{\n]*?\b" + _NAME + r"\s*;",  # typedef T name;
        r"\benum\s*{[^}]*",  # enum { MC_A = 1, MC_B = 2 } (names taken below)
    )
]
_INCLUDE = re.compile(r'^#\s*include\s+"microcompiler/(\w+\.h)"', re.M)
_USE = re.compile(r"\b(?:mc|MC)_\w+")
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
# a code template, not a header: included once per instantiation by kernel_fft.h and kernel_fft32.h
TEMPLATES = ("kernel_fft_stages.h",)


def without_comments(text: str) -> str:
    return _COMMENT.sub(" ", text)


@functools.cache
def header_text(header: str) -> str:
    return resources.crt_file(f"{HEADER_DIR}/{header}").read_text()


_SUFFIX = re.compile(r"#\s*define\s+MC_FFT_SUFFIX\s+(\w+)")
# a function of kernel_fft_stages.h: MC_FFT(name) = mc_fft<suffix>_name, MC_FFT_NAME(prefix, MC_FFT_SUFFIX, _name)
_TEMPLATE_FUNCTION = re.compile(
    r"^static\b[^;=\n]*?\b(?:MC_FFT\((\w+)\)|MC_FFT_NAME\((\w+), MC_FFT_SUFFIX, (_\w+)\))\s*\(", re.M
)


@functools.cache
def defined_names(header: str) -> frozenset[str]:
    """The ``mc_*``/``MC_*`` names a header defines, with those of the code templates it
    instantiates (kernel_fft_stages.h once per MC_FFT_SUFFIX it defines)."""
    text = header_text(header)
    names: set[str] = set()
    for pattern in _DEFINITIONS:
        for m in pattern.finditer(text):
            names.update(m.groups() if m.groups() else re.findall(r"\b((?:mc|MC)_\w+)\s*=", m.group(0)))
    for suffix in _SUFFIX.findall(text):
        for m in _TEMPLATE_FUNCTION.finditer(header_text(TEMPLATES[0])):
            names.add(f"mc_fft{suffix}_{m.group(1)}" if m.group(1) else f"{m.group(2)}{suffix}{m.group(3)}")
    return frozenset(names)


@functools.cache
def includes(header: str) -> tuple[str, ...]:
    """The runtime headers ``header`` includes."""
    return tuple(dict.fromkeys(_INCLUDE.findall(header_text(header))))


def _closure(headers: list[str]) -> list[str]:
    """headers and everything they include, each after the headers it includes."""
    order: list[str] = []

    def visit(h: str, path: tuple[str, ...]) -> None:
        if h in order or h in path:
            return
        for dep in includes(h):
            visit(dep, path + (h,))
        order.append(h)

    for h in headers:
        visit(h, ())
    return order


def used_headers(sources: list[str], planned: Iterable[str] = ()) -> list[str]:
    """The kernel headers that define helpers ``sources`` (generated C) name, and the ``planned``
    ones (what the kernel plans say they use, ops/plan.py): what it includes."""
    used = {m.group(0) for text in sources for m in _USE.finditer(without_comments(text))}
    wanted = set(planned)
    unknown = wanted - set(KERNEL_HEADERS)
    if unknown:
        raise ValueError(f"kernel plans name unknown runtime headers {sorted(unknown)}")
    return [h for h in KERNEL_HEADERS if h in wanted or defined_names(h) & used]


def library_headers(sources: list[str], planned: Iterable[str] = ()) -> list[str]:
    """Every runtime header a library needs: the executors' and those of the kernels its C uses,
    with the headers they include, each after those it includes."""
    return _closure(list(EXECUTOR_HEADERS) + used_headers(sources, planned))
