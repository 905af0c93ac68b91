"""The architecture, as imports: the suite judges the reference server as a stranger (neither imports the other);
both stand on spec/, generated/ and fake_llm/, which import neither; spec/ imports nothing of the project."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROJECT = {"spec", "generated", "fake_llm", "reference_server", "conformance", "tests", "bench", "tools"}
# package -> the project packages it may import
ALLOWED = {
    "spec": set(),
    "generated": set(),
    "fake_llm": {"spec"},
    "reference_server": {"spec", "generated", "fake_llm"},
    "conformance": {"spec", "generated", "fake_llm"},
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


@pytest.mark.parametrize(("package", "allowed"), sorted(ALLOWED.items()))
def test_each_package_imports_only_what_it_stands_on(package: str, allowed: set[str]):
    offenders = sorted(
        f"{where} imports {name}" for name, where in imported_packages(package) if name in PROJECT - allowed - {package}
    )
    assert offenders == [], f"{package} may import only {sorted(allowed) or 'nothing of the project'}"
