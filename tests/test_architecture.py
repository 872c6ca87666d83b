"""The shape of the package: no import circles, and no template dispatch outside microcompiler/targets/.

Read from the source (ast), so they hold for imports inside functions too: a circle hidden in a
function is still a circle, it only fails later. Imports under ``if TYPE_CHECKING:`` are for
annotations and do not count. A package's ``__init__`` importing its own submodules (to re-export
them) is how packages work, not a circle, so those edges are left out.
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


def module_files() -> dict[str, Path]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def imported_names(path: Path, module: str) -> set[str]:
    """Every dotted name ``module`` imports (``from a import b`` gives a and a.b), TYPE_CHECKING aside."""
    is_package = path.name == "__init__.py"
    names: set[str] = set()

    class Visitor(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            if "TYPE_CHECKING" in ast.unparse(node.test):
                for child in node.orelse:
                    self.visit(child)
                return
            self.generic_visit(node)

        def visit_Import(self, node: ast.Import) -> None:
            names.update(alias.name for alias in node.names)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                base = package[:len(package) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            names.add(source)
            names.update(f"{source}.{alias.name}" for alias in node.names)

    Visitor().visit(ast.parse(path.read_text(), str(path)))
    return names


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    graph = {}
    for module, path in modules.items():
        edges = set()
        for name in imported_names(path, module):
            while name and name not in modules:  # a.b.function -> a.b
                name = name.rpartition(".")[0]
            if not name or name == module:
                continue
            if modules[module].name == "__init__.py" and name.startswith(module + "."):
                continue  # a package re-exporting its own submodules
            edges.add(name)
        graph[module] = edges
    return graph


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


def test_no_import_circles():
    found = cycles(import_graph())
    assert not found, "import circles (move the shared part down a layer, or an annotation-only import " \
                      f"under TYPE_CHECKING): {found}"


def test_the_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_graph_reads_relative_imports_and_skips_type_checking(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("from typing import TYPE_CHECKING\nfrom . import sibling\nfrom .pkg.mod import name\n"
                      "if TYPE_CHECKING:\n    from microcompiler.rpc.client import Session\n"
                      "def f():\n    import microcompiler.boards\n")
    names = imported_names(source, "microcompiler.sub.m")
    assert {"microcompiler.sub.sibling", "microcompiler.sub.pkg.mod.name", "microcompiler.boards"} <= names
    assert "microcompiler.rpc.client" not in names


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
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) if targets not in path.parents
             for hit in template_comparisons(path)]
    assert not found, "ask the target (microcompiler/targets) instead of comparing template names: " \
                      + "; ".join(found)


@pytest.mark.parametrize("code", ["if project.template == 'zephyr': pass", "x = 'zephyr' != args.template",
                                  "ok = template == T"])
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
        "@register\nclass DemoMake(BareMetal):\n    name = 'demo_make'\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    listing = subprocess.run([sys.executable, "-c", "from microcompiler.targets import templates; print(templates())"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert listing.returncode == 0, listing.stderr
    assert "demo_make" in listing.stdout and "baremetal" in listing.stdout
    helptext = subprocess.run([sys.executable, "-m", "microcompiler.cli", "create-project", "--help"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert helptext.returncode == 0 and "demo_make" in helptext.stdout, helptext.stdout + helptext.stderr
