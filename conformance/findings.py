"""What checks conclude, per requirement, and how conclusions become verdicts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# What one check concluded about one requirement.
PASSED, FAILED, UNTESTABLE, HARNESS_ERROR = "passed", "failed", "not_testable", "harness_error"


@dataclass
class Finding:
    requirement: str
    outcome: str
    message: str
    check: str
    evidence: list[dict[str, Any]] = field(default_factory=list)


# The verdict of one requirement over the whole run.
PASS = "PASS"  # every check of it passed
FAIL = "FAIL"  # a MUST, or a declared capability, failed: the run fails
WARN = "WARN"  # a SHOULD failed: reported, the run passes
XFAIL = "XFAIL"  # failed, and the target's baseline lists it: the run passes
STALE = "STALE"  # the baseline lists it, but it no longer fails as listed: the run fails
NOT_TESTABLE = "NOT TESTABLE"  # the target could not be made to exercise it: red, never green
NOT_APPLICABLE = "N/A"  # an undeclared capability (or a MAY without one)
EXCLUDED = "EXCLUDED"  # the registry says why no check exists
ERROR = "ERROR"  # the suite's own fault (harness error): the run fails

FAILING_VERDICTS = {FAIL, STALE, NOT_TESTABLE, ERROR}


@dataclass
class Verdict:
    requirement: dict[str, Any]  # the registry record
    verdict: str
    findings: list[Finding]
    note: str = ""  # e.g. the baseline's reason

    @property
    def id(self) -> str:
        return self.requirement["id"]


def combine(findings: list[Finding]) -> str:
    outcomes = {f.outcome for f in findings}
    for outcome in (FAILED, HARNESS_ERROR, UNTESTABLE):
        if outcome in outcomes:
            return outcome
    return PASSED if outcomes else UNTESTABLE


def judge(
    record: dict[str, Any],
    findings: list[Finding],
    *,
    capabilities: set[str],
    known_failures: dict[str, str],
    accepted_not_testable: dict[str, str],
) -> Verdict:
    rid, level = record["id"], record["level"]
    if "excluded" in record:
        return Verdict(record, EXCLUDED, [], record["excluded"])
    capability = record.get("capability")
    if capability and capability not in capabilities:
        return Verdict(record, NOT_APPLICABLE, [], f"capability `{capability}` not declared")
    if level == "MAY" and not capability:
        return Verdict(record, NOT_APPLICABLE, [], "MAY without a capability: nothing to require")
    outcome = combine(findings)
    if rid in known_failures:
        if outcome == FAILED:
            return Verdict(record, XFAIL, findings, known_failures[rid])
        return Verdict(
            record,
            STALE,
            findings,
            f"baseline lists it as failing ({known_failures[rid]}), but it is {outcome.replace('_', ' ')}",
        )
    if rid in accepted_not_testable:
        if outcome == UNTESTABLE:
            return Verdict(record, NOT_TESTABLE, findings, accepted_not_testable[rid])
        return Verdict(
            record,
            STALE,
            findings,
            f"baseline says not testable ({accepted_not_testable[rid]}), but it is {outcome.replace('_', ' ')}",
        )
    if outcome == PASSED:
        return Verdict(record, PASS, findings)
    if outcome == HARNESS_ERROR:
        return Verdict(record, ERROR, findings)
    if outcome == UNTESTABLE:
        return Verdict(record, NOT_TESTABLE, findings)
    return Verdict(record, WARN if level == "SHOULD" else FAIL, findings)


def run_passes(verdicts: list[Verdict], accepted_not_testable: dict[str, str]) -> bool:
    for verdict in verdicts:
        if verdict.verdict == NOT_TESTABLE and verdict.id in accepted_not_testable:
            continue
        if verdict.verdict in FAILING_VERDICTS:
            return False
    return True
