"""The checks. Each is `@check("area.name")`; the requirements it judges come from spec/requirements.yaml
(each requirement names its checks), so the registry, not the check, says what a check verifies."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache

import spec

CheckFunction = Callable[..., Awaitable[None]]


@dataclass(frozen=True)
class CheckSpec:
    id: str
    function: CheckFunction
    requirements: tuple[str, ...]
    slow: bool = False  # waits on purpose (heartbeats, slow scripts): started first


REGISTRY: dict[str, CheckSpec] = {}


@cache
def requirements_of_checks() -> dict[str, tuple[str, ...]]:
    mapping: dict[str, list[str]] = {}
    for record in spec.load_requirements()["requirements"]:
        for check_id in record.get("checks", []):
            mapping.setdefault(check_id, []).append(record["id"])
    return {check_id: tuple(ids) for check_id, ids in mapping.items()}


def check(check_id: str, *, slow: bool = False) -> Callable[[CheckFunction], CheckFunction]:
    def register(function: CheckFunction) -> CheckFunction:
        requirements = requirements_of_checks().get(check_id)
        if requirements is None:
            raise LookupError(f"check {check_id!r} is named by no requirement of spec/requirements.yaml")
        if check_id in REGISTRY:
            raise LookupError(f"check {check_id!r} is defined twice")
        REGISTRY[check_id] = CheckSpec(check_id, function, requirements, slow)
        return function

    return register


def load_all() -> dict[str, CheckSpec]:
    """Import every module of this package; each registers its checks."""
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    return REGISTRY
