"""From the checks' findings to the run's result: which checks can judge the target (`applicable`), every
requirement's verdict over the whole run (FLAKY where a re-run check judged otherwise the second time, N/A where
no check can observe what the requirement is about), and the result of a run the suite could not do."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import gns3_copilot_spec as spec
from conformance.checks import CheckSpec
from conformance.harness.cleanup import CleanupReport
from conformance.harness.environment import DEFAULT_SEED
from conformance.harness.execution import CheckRun
from conformance.harness.findings import (
    Finding,
    RequirementVerdict,
    Verdict,
    combine,
    harness_failure,
    judge,
    not_applicable,
    run_passes,
)
from conformance.harness.target import Target


@dataclass
class RunResult:
    target: Target
    base_url: str
    verdicts: list[RequirementVerdict]
    checks: list[CheckRun]
    wall_time: float
    started_at: str
    harness_error: str | None = None
    passed: bool = False
    secrets: dict[str, str] = field(default_factory=dict)  # what the SECRET checks looked for (redacted)
    seed: int = DEFAULT_SEED
    only: list[str] = field(default_factory=list)  # the --only selectors of the run
    cleanup: CleanupReport | None = None  # what was removed from the target, or kept (--keep), or left
    # What a standalone reproduction needs: the fake LLM's port, and each user role's name and how its token is got.
    replay: dict[str, Any] = field(default_factory=dict)
    profile: str = "contract"  # which rules were judged: "contract" (both voices) or "protocol" (the protocols' only)

    @property
    def transient(self) -> dict[str, list[str]]:
        """Check id -> the transient server errors it met (each such check was re-run once)."""
        return {run.id: run.transient for run in self.checks if run.transient}

    @property
    def judged_alone(self) -> dict[str, str]:
        """Check id -> what its first attempt failed (a timed rule) or could not make happen (a race), for each check
        judged again with the server alone."""
        return {run.id: run.failed_under_load for run in self.checks if run.failed_under_load is not None}


def applicable(
    chosen: list[CheckSpec], records: list[dict[str, Any]], capabilities: set[str]
) -> tuple[list[CheckSpec], dict[str, str]]:
    """The checks to run: those that judge at least one requirement applying to the target (a check of rules that
    are all N/A would only cost time) and that can observe it (CheckSpec.needs); and the checks left out for what
    the target does not serve, with why."""
    by_id = {record["id"]: record for record in records}
    kept, unable = [], {}
    for spec_ in chosen:
        if not any(not_applicable(by_id[r], capabilities) is None for r in spec_.requirements):
            continue
        missing = [need for need in spec_.needs if need not in capabilities]
        if missing:
            unable[spec_.id] = f"{spec_.id} needs {', '.join(missing)}, which the target does not declare"
            continue
        kept.append(spec_)
    return kept, unable


def _unobservable(record: dict[str, Any], unable: dict[str, str], ran: set[str]) -> str | None:
    """Why a requirement is N/A although it applies: every check of it needs what the target does not serve."""
    checks = record.get("checks", [])
    if checks and not ran & set(checks) and all(c in unable for c in checks):
        return "; ".join(unable[c] for c in checks) + " (its text is about what the target does not serve)"
    return None


def _findings_and_flaky(check_runs: list[CheckRun]) -> tuple[dict[str, list[Finding]], dict[str, str]]:
    """Every finding by requirement (first attempts), and the requirements whose outcome over the whole run
    differs when a re-run check's second attempt replaces its first: those are FLAKY, with why."""
    first: dict[str, list[Finding]] = {}
    second: dict[str, list[Finding]] = {}
    for run_ in check_runs:
        for finding in run_.all_findings:
            first.setdefault(finding.requirement, []).append(finding)
        for finding in (run_.rerun or run_).all_findings:
            second.setdefault(finding.requirement, []).append(finding)
    flaky = {}
    for requirement in sorted(set(first) | set(second)):
        before, after = combine(first.get(requirement, [])), combine(second.get(requirement, []))
        if before != after:
            met = [f"{r.id}: {r.transient[0]}" for r in check_runs if r.rerun is not None]
            flaky[requirement] = (
                f"the server had transient errors ({'; '.join(met)[:600]}); judged {before.value} on the first "
                f"attempt and {after.value} on a re-run: this verdict is unreliable"
            )
            first[requirement] = first.get(requirement, []) + [
                f
                for r in check_runs
                if r.rerun is not None
                for f in r.rerun.all_findings
                if f.requirement == requirement
            ]
    return first, flaky


def judged_run(
    target: Target,
    base_url: str,
    check_runs: list[CheckRun],
    unable: dict[str, str],
    selected: bool,
    wall_time: float,
    started_at: str,
) -> RunResult:
    """The result of the checks' runs: a verdict for every requirement of the registry (one left out by `selected`,
    the --only of the run, is NOT SELECTED in the reports), and whether the run passes against the baseline."""
    records = spec.load_requirements()["requirements"]
    findings, flaky = _findings_and_flaky(check_runs)
    judged_ids = {r for run_ in check_runs for r in run_.requirements}
    verdicts = []
    ran = {run_.id for run_ in check_runs}
    for record in records:
        unobservable = None if not_applicable(record, target.capabilities) else _unobservable(record, unable, ran)
        if unobservable is not None and "excluded" not in record:
            verdicts.append(RequirementVerdict(record, Verdict.NOT_APPLICABLE, [], unobservable))
            continue
        if selected and record["id"] not in judged_ids and "excluded" not in record:
            continue
        verdicts.append(
            judge(
                record,
                findings.get(record["id"], []),
                capabilities=target.capabilities,
                known_failures=target.baseline.known_failures,
                accepted_not_testable=target.baseline.not_testable,
                flaky=flaky,
            )
        )
    result = RunResult(target, base_url, verdicts, list(check_runs), wall_time, started_at)
    result.passed = run_passes(verdicts, target.baseline.not_testable, baseline=target.baseline.source is not None)
    return result


def failed_run(target: Target, message: str, details: str, started: float, started_at: str) -> RunResult:
    """The result of a run the suite could not do: every requirement ERROR (N/A and EXCLUDED stay what they are)."""
    verdicts = harness_failure(spec.load_requirements()["requirements"], message, target.capabilities)
    return RunResult(target, "", verdicts, [], time.monotonic() - started, started_at, details)
