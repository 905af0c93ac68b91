"""The checks, one module per requirement area of spec/requirements.yaml (its section), named in AREAS.

Each check is `@check("area.name")` in the module `conformance/checks/<area>.py`; the requirements it judges come
from the registry (each requirement names its checks), so the registry, not the check, says what a check verifies.
Scenario helpers shared by several areas live in `support.py`, written once.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import cache

import gns3_copilot_spec as spec
from conformance.harness.findings import Outcome

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
    "Project access": "access",
    "Controller": "controller_api",
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
    # The channels' rules: judged for the channels a target declares (target file `channels`).
    "Channels": "channels",
    "Across channels": "across_channels",
    "OpenAI channel": "channel_openai",
    "UI message stream channel": "channel_ui",
    "AG-UI channel": "channel_ag_ui",
    # The protocols' own rules (source: protocol), judged by the same checks as their channel's.
    "OpenAI protocol": "channel_openai",
    "UI message stream protocol": "channel_ui",
    "AG-UI protocol": "channel_ag_ui",
}


# Modules of checks besides the areas' own, and the area their checks belong to (their ids' first part): a
# table-driven check whose table spans the rules of several areas (conformance/rules/session_states.py).
PARTS: dict[str, str] = {
    "access_creation": "access",  # creating projects, ACCESS-005 (access.py holds the other access rules)
    "access_entries": "access",  # the entries beyond a grant on the project, on the chat, controller and channels
    "access_paths": "access",  # the paths of access entries, ACCESS-006
    "boundaries": "inputs",  # every bound of openapi.yaml's requests (conformance/rules/boundaries.py)
    "channel_bounds": "channels",  # the bounds of the channels' requests (spec/channels/request-bounds.json)
    "channel_disconnects": "channels",  # CHANNEL-009's disconnects, streamed or not
    "channel_openai_states": "channel_openai",
    "session_states": "sessions",
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
    # The requirements it can judge only when a race goes one way (two requests at the same moment): NOT TESTABLE
    # under the run's load may be the load's doing, so the check is then also judged again with the server alone.
    raced: tuple[str, ...] = ()
    # What the target must serve for the check to observe anything (`channel_gns3`: it reads sessions, history or
    # statistics through the GNS3 chat API). Without it the check does not run; a requirement left with no check
    # that can run on the target is N/A (its text is about what the target does not have).
    needs: tuple[str, ...] = ()
    # It plays the declared slow tool, or waits on its time: preflight measures that tool (a turn of some seconds)
    # only for a run that selects such a check.
    slow_tool: bool = False

    def judged_alone_after(self, finding) -> bool:
        """Whether this finding of a run under load makes the check worth judging again alone."""
        if finding.requirement in self.timed:
            return finding.outcome != Outcome.PASSED
        return finding.requirement in self.raced and finding.outcome == Outcome.NOT_TESTABLE

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
    check_id: str,
    *,
    slow: bool = False,
    timed: tuple[str, ...] = (),
    raced: tuple[str, ...] = (),
    needs: tuple[str, ...] = (),
    slow_tool: bool = False,
) -> Callable[[CheckFunction], CheckFunction]:
    def register(function: CheckFunction) -> CheckFunction:
        requirements = requirements_of_checks().get(check_id)
        if requirements is None:
            raise LookupError(f"check {check_id!r} is named by no requirement of spec/requirements.yaml")
        if check_id in REGISTRY:
            raise LookupError(f"check {check_id!r} is defined twice")
        if not set(timed) | set(raced) <= set(requirements):
            raise LookupError(f"check {check_id!r}: timed or raced requirements are not among those it judges")
        REGISTRY[check_id] = CheckSpec(check_id, function, requirements, slow, timed, raced, needs, slow_tool)
        return function

    return register


def load_all() -> dict[str, CheckSpec]:
    """Import every area module; each registers its checks."""
    for area in sorted(set(AREAS.values()) | set(PARTS)):
        if importlib.util.find_spec(f"{__name__}.{area}") is not None:
            importlib.import_module(f"{__name__}.{area}")
    return REGISTRY


class SelectionError(ValueError):
    """An `--only` selector that names no requirement, area or check, or an unknown profile."""


# What a run judges (--profile): `protocol`, only the rules the protocols themselves make (`source: protocol` in
# spec/requirements.yaml); `contract`, those and the contract's own. The target's default: Target.default_profile.
PROFILES = ("protocol", "contract")


def in_profile(record: dict, profile: str) -> bool:
    """Whether the profile judges this requirement."""
    return profile == "contract" or record.get("source") == "protocol"


def profile_note(record: dict, profile: str) -> str | None:
    """Why the profile leaves this requirement out (its NOT SELECTED note), or None when it judges it."""
    if in_profile(record, profile):
        return None
    return (
        f"not selected by the profile {profile}: a rule of the contract (source: {record.get('source')}), not of the "
        "protocol (--profile contract judges it)"
    )


def _check_profile(profile: str) -> None:
    if profile not in PROFILES:
        raise SelectionError(f"--profile {profile}: no such profile (the profiles: {', '.join(PROFILES)})")


def _selected_by(selector: str, checks: dict[str, CheckSpec]) -> list[str]:
    """The ids of the checks one selector names: a requirement id (the checks that judge it), an area, a check id,
    or a group of check ids up to a dot (`framing.`)."""
    records = {r["id"].upper(): r for r in spec.load_requirements()["requirements"]}
    record = records.get(selector.upper())
    if record is not None:
        if "excluded" in record:
            raise SelectionError(
                f"{record['id']} is excluded from the suite ({record['excluded']}): no check judges it"
            )
        return [c for c in record.get("checks", []) if c in checks]
    if selector in AREAS.values():
        named = [c for c, s in checks.items() if s.area == selector]
        if not named:
            raise SelectionError(f"the area {selector} has no checks: its requirements are excluded from the suite")
        return named
    # A check id, or a group of them on a dot boundary (`titles.` and `titles` alike: never `stat` for `stats.`).
    return [c for c in checks if c == selector or c.startswith(selector.rstrip(".") + ".")]


def select(only: Iterable[str] | None, profile: str = "contract") -> list[CheckSpec]:
    """The checks a run with `only` and `profile` runs, in registry order: every check of the profile (one that
    judges at least one of its requirements) without `only`. Each selector is a requirement id, an area, a check id
    or a group of check ids up to a dot; several may share one value, separated by commas. A selector that names
    nothing, or nothing the profile judges, raises SelectionError with the closest names."""
    _check_profile(profile)
    records = {r["id"]: r for r in spec.load_requirements()["requirements"]}
    checks = {
        check_id: spec_
        for check_id, spec_ in load_all().items()
        if any(in_profile(records[r], profile) for r in spec_.requirements)
    }
    selectors = [part.strip() for value in (only or []) for part in value.split(",") if part.strip()]
    if not selectors:
        return list(checks.values())
    everything = load_all()
    wanted: set[str] = set()
    for selector in selectors:
        named = _selected_by(selector, everything)
        record = records.get(selector.upper())
        if (record is not None and not in_profile(record, profile)) or (named and not set(named) & set(checks)):
            raise SelectionError(
                f"--only {selector}: it names only rules of the contract, which --profile {profile} does not judge "
                "(--profile contract judges them)"
            )
        named = [c for c in named if c in checks]
        if not named:
            known = (
                [r["id"] for r in spec.load_requirements()["requirements"]] + sorted(set(AREAS.values())) + list(checks)
            )
            close = difflib.get_close_matches(selector, known, n=4, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise SelectionError(f"--only {selector}: no requirement id, area or check id of that name{hint}")
        wanted.update(named)
    return [c for c in checks.values() if c.id in wanted]
