"""The architecture, as imports: the suite judges the reference server as a stranger (neither imports the other);
both stand on spec/, generated/ and fake_llm/, which import neither; spec/ imports nothing of the project."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROJECT = {"spec", "generated", "fake_llm", "reference_server", "conformance", "tests", "bench", "tools", "peers"}
# The import name of each folder installed under another name (pyproject.toml, [tool.setuptools] package-dir).
FOLDER_OF = {"gns3_copilot_spec": "spec", "gns3_copilot_generated": "generated"}
# package -> the project packages it may import
ALLOWED = {
    "spec": set(),
    "generated": set(),
    "fake_llm": {"spec"},
    "reference_server": {"spec", "generated", "fake_llm"},
    "conformance": {"spec", "generated", "fake_llm"},
    # the peers serve the reference server's agent and run the suite against third-party servers
    "peers": {"spec", "generated", "fake_llm", "reference_server", "conformance"},
}


def imported_packages(package: str) -> set[tuple[str, str]]:
    found = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            found |= {(name.split(".")[0], str(path.relative_to(ROOT))) for name in names}
    return found


def imported_folders(package: str) -> set[tuple[str, str]]:
    """As imported_packages, with the installed import names turned back into the folders they come from."""
    return {(FOLDER_OF.get(name, name), where) for name, where in imported_packages(package)}


@pytest.mark.parametrize(("package", "allowed"), sorted(ALLOWED.items()))
def test_each_package_imports_only_what_it_stands_on(package: str, allowed: set[str]):
    offenders = sorted(
        f"{where} imports {name}" for name, where in imported_folders(package) if name in PROJECT - allowed - {package}
    )
    assert offenders == [], f"{package} may import only {sorted(allowed) or 'nothing of the project'}"


@pytest.mark.parametrize("package", sorted(PROJECT))
def test_the_contract_is_imported_by_its_installed_name(package: str):
    """`import spec` works in the repository only by accident (its root is on sys.path) and fails installed."""
    offenders = sorted(
        f"{where} imports {name}" for name, where in imported_packages(package) if name in FOLDER_OF.values()
    )
    assert offenders == [], "import gns3_copilot_spec / gns3_copilot_generated instead"


# --- the layers inside the suite (conformance/README: "where things are") -----------------------------------------
# Front-ends: thin, over conformance.harness.run_and_report; nothing below them imports them.
FRONT_ENDS = (
    "conformance.cli",
    "conformance.pytest_plugin",
    "conformance.explain",
    "conformance.gns3",
    "conformance.test_requirements",
    "conformance.__main__",
)
# What does I/O: requests, processes, the run. A pure rule (conformance.rules) never imports it at run time.
IO_MODULES = (
    "conformance.harness",
    "conformance.transport.http",
    "conformance.channels.client",
    "conformance.channels.gns3_stream",
    "conformance.channels.real_clients",
    "conformance.channels.node",
    "conformance.checks",
    "conformance.reports",
)
LAYER_MAY_NOT_IMPORT = {
    "rules": IO_MODULES + FRONT_ENDS,
    "transport": ("conformance.checks", "conformance.reports") + FRONT_ENDS,
    "checks": FRONT_ENDS,
    "harness": FRONT_ENDS,
    "reports": FRONT_ENDS,
    "channels": FRONT_ENDS,
}


def runtime_imports(path: Path) -> set[tuple[str, int]]:
    """The absolute modules `path` imports when it runs (imports under `if TYPE_CHECKING:` are type hints only)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    hinted = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        for inner in ast.walk(node)
    }
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(tree):
        if id(node) in hinted:
            continue
        if isinstance(node, ast.Import):
            found |= {(alias.name, node.lineno) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found |= {(f"{base}.{alias.name}", node.lineno) for alias in node.names} | {(base, node.lineno)}
    return found


@pytest.mark.parametrize(("layer", "forbidden"), sorted(LAYER_MAY_NOT_IMPORT.items()))
def test_each_layer_of_the_suite_imports_only_what_is_below_it(layer: str, forbidden: tuple[str, ...]):
    offenders = sorted(
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in (ROOT / "conformance" / layer).rglob("*.py")
        for name, line in runtime_imports(path)
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    )
    assert offenders == [], f"conformance/{layer}/ may not import {forbidden}"


def test_the_layering_test_sees_a_forbidden_import(tmp_path):
    source = (
        "from typing import TYPE_CHECKING\nfrom ..harness import engine\nif TYPE_CHECKING:\n    from ..cli import x\n"
    )
    path = ROOT / "conformance" / "rules" / "probe.py"
    try:
        path.write_text(source)
        names = {name for name, _ in runtime_imports(path)}
    finally:
        path.unlink()
    assert "conformance.harness.engine" in names and "conformance.cli.x" not in names
