"""The suite judges the reference server as a stranger: neither package imports the other."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {"conformance": "reference_server", "reference_server": "conformance", "generated": "reference_server"}


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


@pytest.mark.parametrize(("package", "forbidden"), sorted(FORBIDDEN.items()))
def test_no_forbidden_imports(package: str, forbidden: str):
    offenders = [where for name, where in imported_packages(package) if name == forbidden]
    assert offenders == [], f"{package} must not import {forbidden}: {offenders}"
