"""The shape of the package: floors that only look down, no import circles, and no template
dispatch outside microcompiler/targets/ (docs/architecture.md draws the floors).

Every import counts: at module level, inside a function (a lazy import is still a dependency, it
only fails later) and under ``if TYPE_CHECKING:`` (an annotation is a dependency too). A package's
``__init__`` importing its own submodules (to re-export them) is how packages work, not a circle,
so those edges are left out; ``from package import submodule`` depends on the submodule only.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "microcompiler"

# The floors, lowest first: a unit (a top-level module or package of microcompiler; "microcompiler"
# is the package's own __init__) imports only from its own floor or the floors below.
FLOORS: dict[str, tuple[str, ...]] = {
    # what every floor uses: errors, progress lines, shipped files, child processes, output directories
    "core": ("version", "errors", "progress", "resources", "cleanup", "outdir", "user_files", "ccache"),
    # a .tflite file to a model library: the IR, importer, kernels, passes, C generation, the pipeline
    "compile": ("ir", "templating", "inputs", "frontend", "ops", "passes", "codegen", "compiler"),
    # boards and what runs on them: transports, firmware reports, host programs, RPC client, projects
    "device": ("zephyr", "boards", "timing", "transport", "standalone", "host", "mlperf", "rpc", "targets"),
    # firmware projects made, kept and reopened: create_project, estimate_footprint
    "projects": ("project",),
    # work made of compiling and running: tuning, validation against the oracle, analysis, reports
    "workflows": ("tuning", "validation", "analysis", "report", "mlperf_runner"),
    # the documented Python API: microcompiler.connect / open_model, and compile, analyze, bench,
    # validate and compare returning plain data (microcompiler.api, docs/api.md)
    "api": ("microcompiler", "api"),
    # the command line
    "cli": ("cli", "commands"),
}
FLOOR_OF = {unit: level for level, units in enumerate(FLOORS.values()) for unit in units}
FLOOR_NAMES = list(FLOORS)


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    modules = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def imported_names(path: Path, module: str) -> set[str]:
    """Every dotted name ``module`` imports, wherever the import statement stands.

    ``import a.b`` gives a.b; ``from a import b`` gives a.b (a submodule, or a name that resolves
    to module a); ``from a import *`` gives a."""
    is_package = path.name == "__init__.py"
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                base = package[: len(package) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            names.update(source if alias.name == "*" else f"{source}.{alias.name}" for alias in node.names)
    return names


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the modules it imports (a.b.function -> a.b; a.b.C.method -> a.b)."""
    modules = module_files(package)
    graph = {}
    for module, path in modules.items():
        edges = set()
        for name in imported_names(path, module):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if not name or name == module:
                continue
            if path.name == "__init__.py" and name.startswith(module + "."):
                continue  # a package re-exporting its own submodules
            edges.add(name)
        graph[module] = edges
    return graph


def unit(module: str) -> str:
    """The top-level module or package a module belongs to ("microcompiler" for the root __init__)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    units: dict[str, set[str]] = {}
    for module, imports in graph.items():
        units.setdefault(unit(module), set()).update(unit(m) for m in imports if unit(m) != unit(module))
    return units


def upward_edges(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} ({FLOOR_NAMES[FLOOR_OF[unit(module)]]}) imports {target} ({FLOOR_NAMES[FLOOR_OF[unit(target)]]})"
        for module, imports in graph.items()
        for target in imports
        if FLOOR_OF.get(unit(target), -1) > FLOOR_OF.get(unit(module), len(FLOORS))
    )


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_every_module_is_on_a_floor():
    lost = sorted({unit(m) for m in module_files()} - set(FLOOR_OF))
    assert not lost, f"put {lost} on a floor (FLOORS in tests/test_architecture.py, docs/architecture.md)"


def test_the_floors_only_look_down():
    found = upward_edges(import_graph())
    assert not found, "imports from a higher floor (move the shared part down, or hand it in from above): " + "; ".join(
        found
    )


def test_no_import_circles_between_packages():
    found = cycles(unit_graph(import_graph()))
    assert not found, f"import circles between packages (one of them must stop looking at the other): {found}"


def test_no_import_circles_between_modules():
    found = cycles(import_graph())
    assert not found, f"import circles (move the shared part down a module, or hand the object in): {found}"


def test_the_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_graph_counts_lazy_and_type_checking_imports(tmp_path):
    package = tmp_path / "microcompiler"
    (package / "sub").mkdir(parents=True)
    for name in ("__init__.py", "errors.py", "boards.py", "sub/__init__.py", "sub/sibling.py"):
        (package / name).write_text("")
    (package / "sub" / "m.py").write_text(
        "from typing import TYPE_CHECKING\nfrom . import sibling\nfrom microcompiler import errors\n"
        "if TYPE_CHECKING:\n    from microcompiler.sub.sibling import Session\n"
        "def f():\n    import microcompiler.boards\n"
    )
    graph = import_graph(package)
    assert graph["microcompiler.sub.m"] == {
        "microcompiler.sub.sibling",
        "microcompiler.errors",
        "microcompiler.boards",
    }  # not the root __init__


def test_an_upward_import_is_found(tmp_path):
    graph = {
        "microcompiler.compiler": {"microcompiler.tuning.log", "microcompiler.ir"},
        "microcompiler.tuning.log": {"microcompiler.ops.base"},
    }
    assert upward_edges(graph) == ["microcompiler.compiler (compile) imports microcompiler.tuning.log (workflows)"]
    assert cycles(
        unit_graph(
            {
                "microcompiler.ops.add_n": {"microcompiler.codegen.graph_description"},
                "microcompiler.codegen.graph_description": {"microcompiler.ops.base"},
            }
        )
    ) == [["codegen", "ops"]]


def template_comparisons(path: Path) -> list[str]:
    """Every ``... template == ...`` / ``!=`` in a file: a dispatch on the project template."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Compare) or not any(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops):
            continue
        for operand in (node.left, *node.comparators):
            name = operand.attr if isinstance(operand, ast.Attribute) else getattr(operand, "id", "")
            if "template" in name.lower():
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_template_dispatch_outside_the_targets():
    targets = PACKAGE / "targets"
    found = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if targets not in path.parents
        for hit in template_comparisons(path)
    ]
    assert not found, "ask the target (microcompiler/targets) instead of comparing template names: " + "; ".join(found)


@pytest.mark.parametrize(
    "code", ["if project.template == 'zephyr': pass", "x = 'zephyr' != args.template", "ok = template == T"]
)
def test_the_template_check_sees_a_dispatch(tmp_path, code):
    source = tmp_path / "m.py"
    source.write_text(code + "\n")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert len(template_comparisons(source)) == 1
    finally:
        ROOT = saved


def test_every_target_has_the_same_interface():
    from microcompiler.targets.base import Target, _registry

    targets = _registry()
    assert {"baremetal", "zephyr", "host"} <= set(targets)
    for name, target in targets.items():
        assert isinstance(target, Target) and target.name == name
        for method in ("create", "build", "flash", "start", "open_link", "elf"):
            assert callable(getattr(target, method)), f"target {name} has no {method}"


def test_a_new_project_template_is_one_new_module_in_targets(tmp_path):
    """docs/porting.md: a template is one module in microcompiler/targets/ (plus its file templates);
    no other file changes. A copy of the package with one module added lists the template, and
    create-project offers it."""
    copy = tmp_path / "microcompiler"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "targets" / "demo_make.py").write_text(
        "from microcompiler.targets.base import register\n"
        "from microcompiler.targets.baremetal import BareMetal\n\n\n"
        "@register\nclass DemoMake(BareMetal):\n    name = 'demo_make'\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    listing = subprocess.run(
        [sys.executable, "-c", "from microcompiler.targets import templates; print(templates())"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listing.returncode == 0, listing.stderr
    assert "demo_make" in listing.stdout and "baremetal" in listing.stdout
    helptext = subprocess.run(
        [sys.executable, "-m", "microcompiler.cli", "create-project", "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert helptext.returncode == 0 and "demo_make" in helptext.stdout, helptext.stdout + helptext.stderr
