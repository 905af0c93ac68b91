"""The checks, one module per requirement area of spec/requirements.yaml (its section), named in AREAS.

Each check is `@check("area.name")` in the module `conformance/checks/<area>.py`; the requirements it judges come
from the registry (each requirement names its checks), so the registry, not the check, says what a check verifies.
Scenario helpers shared by several areas live in `support.py`, written once.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import cache

import spec

CheckFunction = Callable[..., Awaitable[None]]

# Section of spec/requirements.yaml -> the area: the module of its checks and the first part of their ids.
AREAS: dict[str, str] = {
    "Path prefix": "prefix",
    "Framing": "framing",
    "Events": "events",
    "Stream grammar": "grammar",
    "Tool calls": "tool_calls",
    "Content": "content",
    "Statistics": "stats",
    "Titles": "titles",
    "Listing, pinning and time": "listing",
    "History": "history",
    "Sessions": "sessions",
    "Isolation": "isolation",
    "Authentication, projects and preconditions": "preconditions",
    "Errors": "errors",
    "Input": "inputs",
    "In-stream errors": "stream_errors",
    "Heartbeat": "heartbeat",
    "Concurrency": "concurrency",
    "Abort": "abort",
    "Database": "database",
    "Migrations": "migrations",
    "Secrets": "secrets_at_rest",
    "Testability": "testability",
    "The fake LLM": "fake_llm",  # rules of the harness: excluded, no module
}


@dataclass(frozen=True)
class CheckSpec:
    id: str
    function: CheckFunction
    requirements: tuple[str, ...]
    slow: bool = False  # waits on purpose (heartbeats, slow scripts): started first
    # The requirements it judges by a duration the contract fixes (abort within 5 s, heartbeat gaps): their
    # failure while other checks loaded the server is the suite's doing as much as the server's, so the check is
    # judged again with the server to itself.
    timed: tuple[str, ...] = ()

    @property
    def area(self) -> str:
        return self.id.split(".", 1)[0]


REGISTRY: dict[str, CheckSpec] = {}


@cache
def requirements_of_checks() -> dict[str, tuple[str, ...]]:
    mapping: dict[str, list[str]] = {}
    for record in spec.load_requirements()["requirements"]:
        for check_id in record.get("checks", []):
            mapping.setdefault(check_id, []).append(record["id"])
    return {check_id: tuple(ids) for check_id, ids in mapping.items()}


def area_of(requirement_id: str) -> str:
    """The area (check module) of a requirement, from its section."""
    record = next(r for r in spec.load_requirements()["requirements"] if r["id"] == requirement_id)
    return AREAS[record["section"]]


def check(
    check_id: str, *, slow: bool = False, timed: tuple[str, ...] = ()
) -> Callable[[CheckFunction], CheckFunction]:
    def register(function: CheckFunction) -> CheckFunction:
        requirements = requirements_of_checks().get(check_id)
        if requirements is None:
            raise LookupError(f"check {check_id!r} is named by no requirement of spec/requirements.yaml")
        if check_id in REGISTRY:
            raise LookupError(f"check {check_id!r} is defined twice")
        if not set(timed) <= set(requirements):
            raise LookupError(f"check {check_id!r}: timed requirements {timed} are not among those it judges")
        REGISTRY[check_id] = CheckSpec(check_id, function, requirements, slow, timed)
        return function

    return register


def load_all() -> dict[str, CheckSpec]:
    """Import every area module; each registers its checks."""
    for area in sorted(set(AREAS.values())):
        if importlib.util.find_spec(f"{__name__}.{area}") is not None:
            importlib.import_module(f"{__name__}.{area}")
    return REGISTRY


def select(only: Iterable[str] | None) -> list[CheckSpec]:
    """The checks a run with `only` (check id prefixes) runs; every check without `only`."""
    prefixes = list(only or [])
    return [c for c in load_all().values() if not prefixes or any(c.id.startswith(p) for p in prefixes)]
