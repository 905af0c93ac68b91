"""Running the checks: each one alone (`run_check`: its findings, what stopped it, the transient server errors it
met), all of them concurrently (`run_checks`), then once more every check that met transient errors and did not
pass, and again with the server to itself every check whose duration rule or race did not pass under the run's load.
"""

from __future__ import annotations

import asyncio
import re
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from conformance.checks import CheckSpec
from conformance.checks.context import CheckContext
from conformance.errors import Blocked, BlockedBy, HarnessError, NotTestable
from conformance.harness.environment import Environment
from conformance.harness.findings import Finding, Outcome
from conformance.harness.provisioning import own_project, undeclared_scenarios
from conformance.harness.transient import transient_errors


@dataclass
class CheckRun:
    id: str
    requirements: tuple[str, ...]
    duration: float
    findings: list[Finding]
    observed: list[Finding] = field(default_factory=list)  # what its answers broke (CONTRACT-001, EVENT-001...)
    transient: list[str] = field(default_factory=list)  # the server's own errors it met (conformance.harness.transient)
    rerun: CheckRun | None = None  # the second attempt, when transient errors made the suite run it again
    # For a check run again alone: what its first attempt, under the run's load, failed or could not make happen
    # (CheckSpec.timed, CheckSpec.raced).
    failed_under_load: str | None = None
    # The rule whose failure stopped the check before its scenario (BlockedBy): that rule's own check judges it.
    blocked_by: str | None = None
    # Why the check stopped at a scenario whose tool the target does not declare (its leftover findings' message):
    # what it could not judge then is N/A with this reason, not NOT TESTABLE (conformance.harness.engine).
    undeclared: str | None = None

    @property
    def all_findings(self) -> list[Finding]:
        return self.findings + self.observed


# How CheckContext.message names a scenario the suite does not play ("scenario 'cs-tool' needs a tool ...").
_SCENARIO = re.compile(r"scenario '([A-Za-z0-9_-]+)'")


def _undeclared_tool(stopped: NotTestable, env: Environment) -> str | None:
    """Why a check stopped, when it stopped at a scenario the suite does not play for want of its tool."""
    named = _SCENARIO.search(str(stopped))
    if named is None or named.group(1) in env.scripts:
        return None
    role = undeclared_scenarios(env.target).get(named.group(1))
    if role is None:
        return None
    return f"the scenario {named.group(1)} needs declarations.tools.{role}, which the target does not declare"


async def run_check(spec_: CheckSpec, env: Environment) -> CheckRun:
    started = time.monotonic()
    try:
        env = await own_project(env, spec_.id)
    except (HarnessError, httpx.HTTPError) as exc:
        message = f"harness error: could not make the check's own project: {exc}"
        findings = [Finding(r, Outcome.HARNESS_ERROR, message, spec_.id, []) for r in spec_.requirements]
        return CheckRun(spec_.id, spec_.requirements, time.monotonic() - started, findings)
    ctx = CheckContext(env, spec_.id, list(spec_.requirements))
    leftover_outcome, leftover_message = Outcome.HARNESS_ERROR, "the check ended without judging this requirement"
    # Whether the check's requirements judged so far were judged whole: yes when it ran to its end, and when a
    # failed step of its own stopped it (that requirement FAILs and the check is red whatever else it judged).
    judged_whole = True
    blocked_by = undeclared = None
    try:
        await spec_.function(ctx)
    except Blocked as blocked:
        ctx.findings.stopped(blocked)
        leftover_outcome = Outcome.NOT_TESTABLE
        leftover_message = f"not reached: the check stopped when {blocked.requirement} failed ({blocked.message})"
    except BlockedBy as blocked:
        judged_whole, blocked_by = False, blocked.requirement
        leftover_outcome = Outcome.NOT_TESTABLE
        leftover_message = f"blocked by {blocked.requirement}: {blocked.message}"
    except NotTestable as exc:
        judged_whole, undeclared = False, _undeclared_tool(exc, env)
        leftover_outcome, leftover_message = Outcome.NOT_TESTABLE, undeclared or str(exc)
    except Exception as exc:  # the suite's own fault (HarnessError), or a target too broken to go on
        judged_whole = False
        leftover_message = f"harness error: {type(exc).__name__}: {exc}\n" + "".join(
            traceback.format_exception(exc)[-3:]
        )
    judged = ctx.findings.judged()
    evidence = [e.as_evidence() for e in ctx.client.exchanges[-2:]]
    findings = ctx.findings.recorded + [
        Finding(requirement, leftover_outcome, leftover_message, spec_.id, evidence)
        for requirement in spec_.requirements
        if requirement not in judged
    ]
    if not judged_whole:
        # The check stopped before its end (a scenario that could not happen, a suite error): what it judged so far
        # covers only some of the states it was written for, which is no PASS.
        findings += [
            Finding(requirement, leftover_outcome, f"judged only in part: {leftover_message}", spec_.id, evidence)
            for requirement in spec_.requirements
            if requirement in judged
        ]
    transient = transient_errors(ctx.client.exchanges, env.scripts)
    duration = time.monotonic() - started
    return CheckRun(
        spec_.id,
        spec_.requirements,
        duration,
        findings,
        ctx.client.observed,
        transient,
        blocked_by=blocked_by,
        undeclared=undeclared,
    )


async def _rerun_transient(
    check_runs: list[CheckRun], specs: dict[str, CheckSpec], env: Environment, semaphore: asyncio.Semaphore
) -> None:
    """Run once more every check that met transient server errors and did not pass everything."""

    async def again(first: CheckRun) -> None:
        async with semaphore:
            first.rerun = await run_check(specs[first.id], env)

    suspect = [r for r in check_runs if r.transient and any(f.outcome != Outcome.PASSED for f in r.all_findings)]
    await asyncio.gather(*(again(r) for r in suspect))


# Attempts of a check judged alone: the run's own load is gone then, but not the machine's (other programs, a
# test command's other workers); a server that meets its bound passes one of them, one that does not fails them all.
ALONE_ATTEMPTS = 3
# A failure the target's baseline lists is known: one attempt alone confirms it (or finds it gone: STALE). The
# attempts that protect a server from a false FAIL are spent on the failures nobody listed.
ALONE_ATTEMPTS_LISTED = 1


def _alone_attempts(failed: list[Finding], env: Environment, most: int) -> int:
    listed = env.target.baseline.known_failures
    return min(ALONE_ATTEMPTS_LISTED, most) if all(f.requirement in listed for f in failed) else most


async def _judge_alone(
    check_runs: list[CheckRun], specs: dict[str, CheckSpec], env: Environment, most: int = ALONE_ATTEMPTS
) -> None:
    """Run again, one at a time with nothing else running, every check whose duration rules did not pass, or whose
    race did not happen (CheckSpec.timed, .raced), unless it met transient errors (those are judged FLAKY or not by
    their re-run), or was blocked by a rule of another check (which judges that rule; alone, its scenario would be
    blocked again): up to `most` times (ALONE_ATTEMPTS by default), until an attempt leaves nothing to judge again.
    The check is judged on its last attempt."""
    for index, first in enumerate(check_runs):
        spec_ = specs[first.id]
        if first.rerun is not None or first.blocked_by is not None:
            continue
        failed = [f for f in first.all_findings if spec_.judged_alone_after(f)]
        if not failed:
            continue
        for _ in range(_alone_attempts(failed, env, most)):
            alone = await run_check(spec_, env)
            if not any(spec_.judged_alone_after(f) for f in alone.all_findings):
                break
        alone.failed_under_load = failed[0].message
        check_runs[index] = alone


async def run_checks(
    chosen: list[CheckSpec],
    env: Environment,
    jobs: int,
    on_check_done: Callable[[CheckRun, int, int], None] | None = None,
    alone_attempts: int = ALONE_ATTEMPTS,
) -> list[CheckRun]:
    """Every chosen check, `jobs` at a time (`on_check_done(run, done, total)` told of each as it ends); then the
    re-runs of checks that met transient errors, and the checks judged alone (at most `alone_attempts` times each).
    One CheckRun per check, in order."""
    semaphore = asyncio.Semaphore(jobs)
    done: list[CheckRun] = []

    async def one(check_spec: CheckSpec) -> CheckRun:
        async with semaphore:
            result = await run_check(check_spec, env)
        done.append(result)
        if on_check_done:
            on_check_done(result, len(done), len(chosen))
        return result

    check_runs = list(await asyncio.gather(*(one(s) for s in chosen)))
    await _rerun_transient(check_runs, {s.id: s for s in chosen}, env, semaphore)
    await _judge_alone(check_runs, {s.id: s for s in chosen}, env, alone_attempts)
    return check_runs
