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
