"""The one way to run the suite, shared by every front-end (conformance.harness.run_and_report): prepare the target
(conformance.harness.provisioning), run the checks concurrently (conformance.harness.execution), judge every requirement
(conformance.harness.verdicts), clean up (conformance.harness.cleanup). `run` (async) and `run_suite` (its blocking
form) never let
an exception out: a run the suite could not do is a RunResult whose requirements are ERROR, with the reason."""

from __future__ import annotations

import asyncio
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import httpx

import gns3_copilot_spec as spec
from conformance.channels import node
from conformance.checks import CheckSpec, profile_note, select
from conformance.errors import ClientsMissing, HarnessError, TargetError
from conformance.harness.cleanup import finish
from conformance.harness.environment import DEFAULT_SEED
from conformance.harness.execution import ALONE_ATTEMPTS, CheckRun, run_checks
from conformance.harness.findings import Outcome, RequirementVerdict, Verdict, not_applicable, run_passes
from conformance.harness.provisioning import prepare
from conformance.harness.target import Target
from conformance.harness.verdicts import RunResult, applicable, failed_run, judged_run
from conformance.transport.http import tls_context


def run_suite(
    target: Target,
    *,
    jobs: int = 8,
    only: list[str] | None = None,
    seed: int = DEFAULT_SEED,
    keep: bool = False,
    on_check_done: Callable[[CheckRun, int, int], None] | None = None,
    profile: str | None = None,
    alone_attempts: int = ALONE_ATTEMPTS,
) -> RunResult:
    """`run`, from code that is not async (the front-ends, a user's script)."""
    return asyncio.run(
        run(
            target,
            jobs=jobs,
            only=only,
            seed=seed,
            keep=keep,
            on_check_done=on_check_done,
            profile=profile,
            alone_attempts=alone_attempts,
        )
    )


async def run(
    target: Target,
    *,
    jobs: int = 8,
    only: list[str] | None = None,
    seed: int = DEFAULT_SEED,
    keep: bool = False,
    on_check_done: Callable[[CheckRun, int, int], None] | None = None,
    workdir: Path | None = None,
    profile: str | None = None,
    alone_attempts: int = ALONE_ATTEMPTS,
) -> RunResult:
    """Run the checks selected by `only` (requirement ids, areas, check ids: conformance.checks.select; all by
    default) and `profile` (`protocol`: the protocols' own rules only; `contract`: those and the contract's; the
    target's default_profile when None) against the target and judge every requirement; `seed` draws the
    generated requests; what the run made on the target is removed at the end unless `keep`. A harness error or a
    suite bug gives a result whose requirements are ERROR; only a target file that preflight proves wrong raises
    (TargetMisdeclared, a TargetError), and a selector that names nothing, or an unknown profile, raises
    SelectionError, and selected checks that need the protocols' real clients where they cannot run raise
    ClientsMissing. The result's `profile` is the profile the run judged. A timed check that failed under the run's
    load, or whose race did not happen, is judged again alone up to `alone_attempts` times (a server that meets its
    bound passes one of them): fewer make a failing run quicker where nothing else loads the machine."""
    started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    started = time.monotonic()
    profile = profile or target.default_profile
    chosen = select(only, profile)  # SelectionError: the caller's usage error, before anything starts
    require_real_clients(chosen, target)  # ClientsMissing: likewise
    try:
        result = await _run(
            target, jobs, chosen, bool(only), seed, keep, on_check_done, workdir, alone_attempts, started, started_at
        )
    except TargetError:  # the target file is wrong (preflight): a usage error for the caller, not a verdict
        raise
    except HarnessError as exc:  # the fake LLM or the target did not start, provisioning failed
        result = failed_run(target, str(exc), str(exc), started, started_at)
    except Exception as exc:  # a suite bug, or a target broken in a way the engine does not catch
        message = f"harness error: {type(exc).__name__}: {exc}"
        details = message + "\n" + "".join(traceback.format_exception(exc)[-4:])
        result = failed_run(target, message, details, started, started_at)
    result.seed, result.only = seed, list(only or [])
    return profiled(result, profile)


def require_real_clients(chosen: list[CheckSpec], target: Target) -> None:
    """Raise ClientsMissing when a chosen check reads answers with a real client that cannot run here: one ERROR per
    requirement would say less than the one command that installs them."""
    if not node.needs_real_clients({check.area for check in chosen}, set(target.channels)):
        return
    try:
        node.node_modules()
        node.node_executable()
    except node.RealClientUnavailable as exc:
        raise ClientsMissing(f"the selected checks read answers with the protocols' real clients: {exc}") from exc


def _undeclared_reason(verdict: RequirementVerdict, undeclared: dict[str, str]) -> str | None:
    """The reason a NOT TESTABLE requirement is N/A: everything that kept it from being judged is a scenario whose
    tool the target does not declare (CheckRun.undeclared); None otherwise."""
    left = [f for f in verdict.findings if f.outcome != Outcome.PASSED]
    reasons = {undeclared.get(f.check) for f in left}
    if not left or None in reasons or any(f.outcome != Outcome.NOT_TESTABLE for f in left):
        return None
    if any(not f.message.endswith(undeclared[f.check]) for f in left):  # stopped there, not for another reason
        return None
    return "; ".join(sorted(reasons))


def profiled(result: RunResult, profile: str) -> RunResult:
    """The result as the profile judges it: a requirement the profile leaves out is NOT SELECTED with that reason
    (unless it is N/A or EXCLUDED for the target anyway); a requirement only a scenario of an undeclared tool could
    judge is N/A with the reason; whether the run passes, again; and `result.profile`."""
    by_id = {verdict.id: verdict for verdict in result.verdicts}
    undeclared = {run_.id: run_.undeclared for run_ in result.checks if run_.undeclared}
    verdicts = []
    for record in spec.load_requirements()["requirements"]:
        verdict, note = by_id.get(record["id"]), profile_note(record, profile)
        if note is not None and (verdict is not None or not not_applicable(record, result.target.capabilities)):
            if verdict is None or verdict.verdict not in (Verdict.NOT_APPLICABLE, Verdict.EXCLUDED):
                verdict = RequirementVerdict(record, Verdict.NOT_SELECTED, [], note)
        elif verdict is not None and verdict.verdict == Verdict.NOT_TESTABLE:
            if (reason := _undeclared_reason(verdict, undeclared)) is not None:
                verdict = RequirementVerdict(record, Verdict.NOT_APPLICABLE, verdict.findings, reason)
        if verdict is not None:
            verdicts.append(verdict)
    result.verdicts = verdicts
    if result.harness_error is None:
        baseline = result.target.baseline
        result.passed = run_passes(verdicts, baseline.not_testable, baseline=baseline.source is not None)
    result.profile = profile  # read by the reports (conformance.harness.run_and_report puts it in their data)
    return result


async def _run(
    target: Target,
    jobs: int,
    chosen: list[CheckSpec],
    selected: bool,
    seed: int,
    keep: bool,
    on_check_done: Callable[[CheckRun, int, int], None] | None,
    workdir: Path | None,
    alone_attempts: int,
    started: float,
    started_at: str,
) -> RunResult:
    chosen, unable = applicable(chosen, spec.load_requirements()["requirements"], target.capabilities)
    chosen = sorted(chosen, key=lambda s: not s.slow)  # long waits first, so they overlap everything else
    with tempfile.TemporaryDirectory(prefix="copilot-conformance-") as tmp:
        # No kept-alive connections: a server that drops one after an error (a 500, say) would otherwise fail the
        # next, unrelated request sent on it with a ReadError, and blame the wrong check.
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=0)
        async with httpx.AsyncClient(
            timeout=httpx.Timeout(60), limits=limits, trust_env=False, verify=tls_context()
        ) as client:
            slow_tool = any(spec.slow_tool for spec in chosen)  # else preflight need not measure the slow tool
            prepared = await prepare(target, workdir or Path(tmp), client, seed, slow_tool, keep)  # see run()
            try:
                check_runs = await run_checks(chosen, prepared.env, jobs, on_check_done, alone_attempts)
                cleanup = await finish(prepared.env, keep)
            finally:
                grace = target.data.get("start", {}).get("stop_grace_seconds", 10)
                for process in reversed(prepared.processes):
                    await asyncio.to_thread(process.stop, grace)
    wall_time = time.monotonic() - started
    result = judged_run(target, prepared.env.base_url, check_runs, unable, selected, wall_time, started_at)
    result.cleanup, result.replay, result.secrets = cleanup, prepared.replay(), prepared.secrets()
    return result
