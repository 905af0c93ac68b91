"""The layout of conformance/checks/: one module per requirement area, every check in the module its area names,
no module too long to read, and shared scenario helpers only in the check API (turns.py: one scripted turn on any
endpoint; blame.py: whose failure a turn that missed its script is) and in support modules that at least two areas
use."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import gns3_copilot_spec as spec
from conformance.checks import AREAS, PARTS, area_of, load_all

CHECKS_DIR = Path(__file__).resolve().parents[2] / "conformance" / "checks"
MAX_LINES = 450
API = {"__init__", "context", "recorder", "turns", "blame"}
SUPPORT = {"support", "support_stats", "support_channels", "support_requests"}
NOT_AREAS = API | SUPPORT


def test_every_section_of_the_registry_has_an_area():
    sections = {r["section"] for r in spec.load_requirements()["requirements"]}
    assert sorted(sections - set(AREAS)) == [], "sections of spec/requirements.yaml without an area in AREAS"
    assert sorted(set(AREAS) - sections) == [], "areas named after no section of spec/requirements.yaml"


@pytest.mark.parametrize("check_id", sorted(load_all()))
def test_every_check_lives_in_the_module_its_area_names(check_id):
    check = load_all()[check_id]
    module = inspect.unwrap(check.function).__module__
    modules = {check.area} | {part for part, area in PARTS.items() if area == check.area}
    assert module in {f"conformance.checks.{m}" for m in modules}, f"{check_id} is defined in {module}"
    assert check.area in AREAS.values(), f"{check_id}: {check.area!r} is not an area of conformance.checks.AREAS"
    areas = {area_of(requirement) for requirement in check.requirements}
    assert check.area in areas, f"{check_id} judges only requirements of the areas {sorted(areas)}"


def test_every_module_is_an_area_or_the_support_module():
    modules = {path.stem for path in CHECKS_DIR.glob("*.py")}
    assert sorted(modules - set(AREAS.values()) - set(PARTS) - NOT_AREAS) == []
    assert set(PARTS.values()) <= set(AREAS.values()), "a part of an area that does not exist"


@pytest.mark.parametrize("path", sorted(CHECKS_DIR.glob("*.py")), ids=lambda p: p.name)
def test_no_check_module_is_over_the_limit(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.name} has {lines} lines; split its helpers or its area"


def test_area_modules_do_not_import_each_other():
    """What two areas share belongs in a support module, written once; a part of an area (PARTS) may use its own
    area's module, the rest of the same area."""
    for path in CHECKS_DIR.glob("*.py"):
        if path.stem not in NOT_AREAS:
            own = {PARTS[path.stem]} if path.stem in PARTS else set()
            assert _checks_imports(path) <= (NOT_AREAS - {"__init__"}) | own, f"{path.name} imports another area"


def _checks_imports(path: Path) -> set[str]:
    """The modules of conformance/checks/ that `path` imports (`from .support import`, `from conformance.checks.support
    import`, `from conformance.checks import support`)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        module = node.module or ""
        if node.level == 1 and module:
            found.add(module.split(".")[0])
        elif node.level == 0 and module.startswith("conformance.checks."):
            found.add(module.split(".")[2])
        elif (node.level == 0 and module == "conformance.checks") or (node.level == 1 and not module):
            found |= {alias.name for alias in node.names if (CHECKS_DIR / f"{alias.name}.py").exists()}
    return found


@pytest.mark.parametrize("support", sorted(SUPPORT))
def test_a_support_module_serves_at_least_two_areas(support):
    """A module split off one area for its size alone is that area's, not support: it says nothing shared."""
    users = sorted(p.stem for p in CHECKS_DIR.glob("*.py") if p.stem not in NOT_AREAS and support in _checks_imports(p))
    assert len(users) >= 2, f"{support}.py is used by the areas {users}: fold it into its area"


def test_every_support_module_is_listed():
    """A module named support_* that the test does not know would escape the rule above."""
    assert sorted(p.stem for p in CHECKS_DIR.glob("support*.py")) == sorted(SUPPORT)
