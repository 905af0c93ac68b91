"""No import circle anywhere in the project: every import counts, at the top of a module, inside a function (a
deferred import hides a circle, it does not remove it) and under TYPE_CHECKING (a type-only circle still ties two
modules that should each stand alone). A circle is reported with the modules that form it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("spec", "generated", "fake_llm", "reference_server", "conformance", "peers", "tools", "bench", "tests")
# The import name of each folder installed under another name (pyproject.toml, [tool.setuptools] package-dir).
INSTALLED_AS = {"gns3_copilot_spec": "spec", "gns3_copilot_generated": "generated"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")}


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        name = node.module or ""
    else:
        parts = module.split(".") if is_package else module.split(".")[:-1]
        parts = parts[: len(parts) - node.level + 1]
        name = ".".join(parts + ([node.module] if node.module else []))
    head, _, rest = name.partition(".")
    return ".".join(filter(None, [INSTALLED_AS.get(head, head), rest]))


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules `module` imports: `from p import m` names the module p.m when there is one, else p."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                head, _, rest = alias.name.partition(".")
                name = ".".join(filter(None, [INSTALLED_AS.get(head, head), rest]))
                if name in modules:
                    found.add(name)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module, path.name == "__init__.py")
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    found.add(f"{base}.{alias.name}")
                elif base in modules:
                    found.add(base)
    found.discard(module)
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_deferred_and_type_only_imports_count(tmp_path):
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import x\n"
    source += "def f():\n    from . import c\n"
    path = ROOT / "conformance" / "a.py"  # a name only: the source is parsed, never imported
    modules = {"conformance.a": path, "conformance.b": path, "conformance.c": path, "conformance": path}
    tree_path = tmp_path / "a.py"
    tree_path.write_text(source)
    assert imports_of("conformance.a", tree_path, modules) == {"conformance.b", "conformance.c"}


def test_no_import_circle_in_the_project():
    modules = project_modules()
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    found = circles(graph)
    assert found == [], "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)
