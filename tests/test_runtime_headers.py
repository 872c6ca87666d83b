"""Only the runtime headers a model uses are copied into its library (codegen/runtime_headers.py), and
every kernel header stands on its own: it includes what it uses at its top, before any definition,
and compiles alone as C99 with -Wall -Wextra -Werror -pedantic."""

from __future__ import annotations

import re
import subprocess

import pytest

from microcompiler.boards import load_board
from microcompiler.codegen.runtime_headers import (
    KERNEL_HEADERS,
    TEMPLATES,
    _closure,
    defined_names,
    header_text,
    includes,
    without_comments,
)
from microcompiler.compiler import compile_model

USE = re.compile(r"\b(?:mc|MC)_\w+")


@pytest.mark.parametrize("header", KERNEL_HEADERS)
def test_kernel_header_compiles_alone(tmp_path, header):
    src = tmp_path / "alone.c"
    src.write_text(f'#include "microcompiler/{header}"\nint main(void) {{ return 0; }}\n')
    from microcompiler import resources

    proc = subprocess.run(
        [
            "cc",
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-fsyntax-only",
            "-I",
            str(resources.crt_file("include")),
            str(src),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("header", KERNEL_HEADERS)
def test_kernel_header_includes_what_it_uses_at_its_top(header):
    text = header_text(header)
    first_definition = re.search(r"^(static|typedef|enum|#\s*define (?!MICROCOMPILER_))", text, re.M).start()
    for m in re.finditer(r'^#\s*include\s+"microcompiler/(\w+\.h)"', text, re.M):
        assert m.start() < first_definition or m.group(1) in TEMPLATES, f"{header} includes {m.group(1)} mid-file"
    others = {h: defined_names(h) for h in KERNEL_HEADERS if h != header}
    reachable = set(_closure([header]))
    for name in set(USE.findall(without_comments(text))) - defined_names(header):
        owners = [h for h, names in others.items() if name in names]
        assert not owners or reachable & set(owners), f"{header} uses {name} of {owners} without including it"


def test_math_header_is_a_leaf():
    assert includes("kernel_math.h") == ()


@pytest.mark.parametrize(
    "board, present, absent",
    [
        (
            None,
            {"kernel_math.h", "kernel_simd.h"},
            {"kernel_fft.h", "kernel_signal.h", "kernel_mve.h", "kernel_float.h", "kernel_planes.h", "kernel_s16.h"},
        ),
        (
            "mps2_an386",
            {"kernel_simd.h", "kernel_planes.h", "kernel_lanes.h"},
            {"kernel_fft.h", "kernel_mve.h", "kernel_s16.h"},
        ),
        ("mps3_an547", {"kernel_mve.h"}, {"kernel_fft.h", "kernel_planes.h", "kernel_lanes.h", "kernel_float.h"}),
    ],
)
def test_kws_library_carries_only_the_headers_it_uses(shared_models, board, present, absent):
    features = load_board(board).cpu.features if board else frozenset()
    lib = compile_model(shared_models / "mlperf_tiny/kws_ref_model.tflite", features=features)
    copied = {rel.rsplit("/", 1)[1] for rel in lib.files if rel.startswith("include/microcompiler/")}
    ops_c = lib.files["src/kws_ref_model_ops.c"]
    included = set(re.findall(r'#include "microcompiler/(\w+\.h)"', ops_c))
    assert present <= included and not (absent & copied), (included, copied)
    assert included | {"status.h", "graph_executor.h"} <= copied
    for header in copied:  # everything a copied header includes is copied too
        assert set(includes(header)) <= copied
