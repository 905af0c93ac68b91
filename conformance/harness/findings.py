"""What checks conclude, per requirement, and how conclusions become verdicts."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Outcome(StrEnum):
    """What one check concluded about one requirement (the values are those of conformance.json)."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_TESTABLE = "not_testable"  # the scenario could not be made to happen
    HARNESS_ERROR = "harness_error"  # the suite's own fault


class Verdict(StrEnum):
    """The verdict of one requirement over the whole run (the values are those of every report)."""

    PASS = "PASS"  # every check of it passed
    FAIL = "FAIL"  # a MUST, or a declared capability, failed: the run fails
    WARN = "WARN"  # a SHOULD failed: reported, the run passes
    XFAIL = "XFAIL"  # failed, and the target's baseline lists it: the run passes
    STALE = "STALE"  # the baseline lists it, but it no longer fails as listed: the run fails
    NOT_TESTABLE = "NOT TESTABLE"  # the target could not be made to exercise it: red, never green
    NOT_APPLICABLE = "N/A"  # an undeclared capability (or a MAY without one)
    EXCLUDED = "EXCLUDED"  # the registry says why no check exists
    ERROR = "ERROR"  # the suite's own fault (harness error): the run fails
    NOT_SELECTED = "NOT SELECTED"  # reports only: the requirement's checks were not selected (`--only`)
    FLAKY = "FLAKY"  # the server had transient errors and the re-run judged it otherwise: unreliable, listed


FAILING_VERDICTS = frozenset({Verdict.FAIL, Verdict.STALE, Verdict.NOT_TESTABLE, Verdict.ERROR})
# FLAKY fails a run judged on its own; a run compared with a baseline lists it without failing (issue 11).
FAILING_WITHOUT_BASELINE = FAILING_VERDICTS | {Verdict.FLAKY}


@dataclass
class Finding:
    requirement: str
    outcome: Outcome
    message: str
    check: str
    evidence: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class RequirementVerdict:
    requirement: dict[str, Any]  # the registry record
    verdict: Verdict
    findings: list[Finding]
    note: str = ""  # e.g. the baseline's reason

    @property
    def id(self) -> str:
        return self.requirement["id"]


def combine(findings: list[Finding]) -> Outcome:
    outcomes = {f.outcome for f in findings}
    for outcome in (Outcome.FAILED, Outcome.HARNESS_ERROR, Outcome.NOT_TESTABLE):
        if outcome in outcomes:
            return outcome
    return Outcome.PASSED if outcomes else Outcome.NOT_TESTABLE


def _spoken(outcome: Outcome) -> str:
    return outcome.value.replace("_", " ")


# Sections of spec/requirements.yaml whose rules are those of a channel (each rule there names its capability), and
# the sections of the rules every channel shares; every other section is the GNS3 chat API's (`channel_gns3`).
# A channel's rules: the contract's mapping and the protocol's own rules (source: protocol).
CHANNEL_SECTIONS = frozenset(
    {
        "OpenAI channel",
        "UI message stream channel",
        "AG-UI channel",
        "OpenAI protocol",
        "UI message stream protocol",
        "AG-UI protocol",
    }
)
SHARED_CHANNEL_SECTIONS = frozenset({"Channels", "Across channels"})
CHANNEL_CAPABILITIES = frozenset({"channel_openai", "channel_ui", "channel_ag_ui"})
# Derived by Target.capabilities from `declarations.database.engine: postgresql`: the rules of capability `db_access`
# (DB-*, MIGRATION-*, SECRET-*) are about the per-project SQLite file, which such a target does not have.
CHAT_DATA_IN_POSTGRESQL = "chat_data_in_postgresql"
NOT_THE_SQLITE_FILE = (
    "the target keeps its chat data in PostgreSQL (declarations.database.engine); this rule is about the per-project "
    "SQLite file"
)


# Derived by Target.capabilities from channels.openai.endpoints (all three by default): the Responses and the model
# list rules of an OpenAI channel that does not serve that endpoint are N/A (Chat Completions is the channel itself).
OPENAI_ENDPOINT_CAPABILITIES = {"responses": "openai_responses", "models": "openai_models"}


def not_applicable(record: dict[str, Any], capabilities: set[str]) -> str | None:
    """Why a requirement does not apply to a target with `capabilities` (Target.capabilities), or None."""
    capability = record.get("capability")
    endpoint = {cap: name for name, cap in OPENAI_ENDPOINT_CAPABILITIES.items()}.get(capability)
    if endpoint and capability not in capabilities:
        if "channel_openai" not in capabilities:
            return "capability `channel_openai` not declared"
        return f"the target's channels.openai.endpoints does not list {endpoint}"
    if capability == "db_access" and CHAT_DATA_IN_POSTGRESQL in capabilities:
        return NOT_THE_SQLITE_FILE
    if capability and capability not in capabilities:
        return f"capability `{capability}` not declared"
    section = record["section"]
    if section in SHARED_CHANNEL_SECTIONS:
        if not capabilities & CHANNEL_CAPABILITIES:
            return "the target declares no channel besides the GNS3 chat API (channels)"
    elif section not in CHANNEL_SECTIONS and "channel_gns3" not in capabilities:
        return "the target does not serve the GNS3 chat API (channels: no gns3)"
    if record["level"] == "MAY" and not capability:
        return "MAY without a capability: nothing to require"
    return None


def judge(
    record: dict[str, Any],
    findings: list[Finding],
    *,
    capabilities: set[str],
    known_failures: dict[str, str],
    accepted_not_testable: dict[str, str],
    flaky: dict[str, str] | None = None,
) -> RequirementVerdict:
    """`flaky`: requirement id -> why its checks were judged otherwise on a re-run after transient server errors."""
    rid, level = record["id"], record["level"]
    if "excluded" in record:
        return RequirementVerdict(record, Verdict.EXCLUDED, [], record["excluded"])
    reason = not_applicable(record, capabilities)
    if reason is not None:
        return RequirementVerdict(record, Verdict.NOT_APPLICABLE, [], reason)
    if flaky and rid in flaky:
        return RequirementVerdict(record, Verdict.FLAKY, findings, flaky[rid])
    outcome = combine(findings)
    if rid in known_failures:
        if outcome == Outcome.FAILED:
            return RequirementVerdict(record, Verdict.XFAIL, findings, known_failures[rid])
        note = f"baseline lists it as failing ({known_failures[rid]}), but it is {_spoken(outcome)}"
        return RequirementVerdict(record, Verdict.STALE, findings, note)
    if rid in accepted_not_testable:
        if outcome == Outcome.NOT_TESTABLE:
            return RequirementVerdict(record, Verdict.NOT_TESTABLE, findings, accepted_not_testable[rid])
        note = f"baseline says not testable ({accepted_not_testable[rid]}), but it is {_spoken(outcome)}"
        return RequirementVerdict(record, Verdict.STALE, findings, note)
    by_outcome = {
        Outcome.PASSED: Verdict.PASS,
        Outcome.HARNESS_ERROR: Verdict.ERROR,
        Outcome.NOT_TESTABLE: Verdict.NOT_TESTABLE,
        Outcome.FAILED: Verdict.WARN if level == "SHOULD" else Verdict.FAIL,
    }
    return RequirementVerdict(record, by_outcome[outcome], findings)


def harness_failure(records: list[dict[str, Any]], message: str, capabilities: set[str]) -> list[RequirementVerdict]:
    """Every requirement of `records` judged ERROR with `message`: the verdicts of a run the suite could not do."""
    return [
        judge(
            record,
            [Finding(record["id"], Outcome.HARNESS_ERROR, message, "setup")],
            capabilities=capabilities,
            known_failures={},
            accepted_not_testable={},
        )
        for record in records
    ]


def fails_the_run(verdict: Verdict, requirement_id: str, accepted_not_testable: dict[str, str], baseline: bool) -> bool:
    if verdict == Verdict.NOT_TESTABLE and requirement_id in accepted_not_testable:
        return False
    return verdict in (FAILING_VERDICTS if baseline else FAILING_WITHOUT_BASELINE)


def run_passes(
    verdicts: list[RequirementVerdict], accepted_not_testable: dict[str, str], *, baseline: bool = False
) -> bool:
    """No verdict fails the run. `baseline`: the target has a baseline file, which lists FLAKY without failing."""
    return not any(fails_the_run(v.verdict, v.id, accepted_not_testable, baseline) for v in verdicts)
