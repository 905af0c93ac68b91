"""The one way to run the suite, shared by the CLI, the pytest plugin and the GNS3 runner: prepare the target,
run the checks concurrently, judge every requirement. `run` (async) and `run_suite` (its blocking form) never let
an exception out: a run the suite could not do is a RunResult whose requirements are ERROR, with the reason."""

from __future__ import annotations

import asyncio
import secrets
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx

import gns3_copilot_spec as spec

from .checks import CheckSpec, select
from .cleanup import CleanupReport, Ledger, Leftover, clean_up
from .context import DEFAULT_SEED, CheckContext, Environment, User
from .controller import Controller, UserMaker
from .errors import Blocked, BlockedBy, HarnessError, NotTestable, TargetError
from .findings import (
    Finding,
    Outcome,
    RequirementVerdict,
    Verdict,
    combine,
    harness_failure,
    judge,
    not_applicable,
    run_passes,
)
from .preflight import preflight
from .processes import REPO_ROOT, Process, free_port, start_fake_llm, start_target
from .scenarios import write_scripts
from .target import START_PLACEHOLDERS, Target
from .transient import transient_errors


@dataclass
class CheckRun:
    id: str
    requirements: tuple[str, ...]
    duration: float
    findings: list[Finding]
    observed: list[Finding] = field(default_factory=list)  # what its answers broke (CONTRACT-001, EVENT-001...)
    transient: list[str] = field(default_factory=list)  # the server's own errors it met (conformance.transient)
    rerun: CheckRun | None = None  # the second attempt, when transient errors made the suite run it again
    # For a check run again alone: what its first attempt, under the run's load, failed or could not make happen
    # (CheckSpec.timed, CheckSpec.raced).
    failed_under_load: str | None = None
    # The rule whose failure stopped the check before its scenario (BlockedBy): that rule's own check judges it.
    blocked_by: str | None = None

    @property
    def all_findings(self) -> list[Finding]:
        return self.findings + self.observed


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

    @property
    def transient(self) -> dict[str, list[str]]:
        """Check id -> the transient server errors it met (each such check was re-run once)."""
        return {run.id: run.transient for run in self.checks if run.transient}

    @property
    def judged_alone(self) -> dict[str, str]:
        """Check id -> what its first attempt failed (a timed rule) or could not make happen (a race), for each check
        judged again with the server alone."""
        return {run.id: run.failed_under_load for run in self.checks if run.failed_under_load is not None}


@dataclass
class Prepared:
    env: Environment
    processes: list[Process]
    tokens: list[str]


def _fill(value: str, mapping: dict[str, str]) -> str:
    """The suite's placeholders filled in; a launcher's ({database_url}) stays as written (target.py checks both)."""
    for key, replacement in mapping.items():
        value = value.replace("{" + key + "}", replacement)
    return value


async def prepare(target: Target, workdir: Path, client: httpx.AsyncClient, seed: int = DEFAULT_SEED) -> Prepared:
    processes: list[Process] = []
    try:
        scripts = write_scripts(workdir / "scripts", target.tools, target.heartbeat_interval)
        fake, fake_url = start_fake_llm(workdir / "scripts", target.section("fake_llm", {}).get("port", 0))
        processes.append(fake)
        if "start" in target.data:
            start = target.data["start"]
            port = free_port()
            mapping = {
                "python": sys.executable,
                "port": str(port),
                "workdir": str(workdir),
                "fake_llm_url": fake_url,
                "repo": str(REPO_ROOT),
            }
            assert tuple(mapping) == START_PLACEHOLDERS  # what parse_target lets through
            base_url = f"http://127.0.0.1:{port}"
            command = [_fill(part, mapping) for part in start["command"]]
            env = {k: _fill(v, mapping) for k, v in (start.get("env") or {}).items()}
            processes.append(
                await asyncio.to_thread(
                    start_target,
                    command,
                    env=env,
                    base_url=base_url,
                    ready_path=start.get("ready_path", "/v3/version"),
                    timeout=start.get("timeout_seconds", 60),
                    workdir=workdir,
                )
            )
        else:
            base_url = target.data["base_url"].rstrip("/")
        prepared = await _provision(target, workdir, client, base_url, fake_url, scripts, processes)
        prepared.env.seed = seed
        await preflight(prepared.env)
        return prepared
    except BaseException:
        for process in reversed(processes):
            process.stop(5)
        raise


async def _provision(target, workdir, client, base_url, fake_url, scripts, processes) -> Prepared:
    auth = target.section("auth", {"mode": "tokens"})
    suffix = secrets.token_hex(3)
    users: dict[str, User] = {}
    controller = maker = None
    ledger = Ledger()
    llm = target.section("llm", {"mode": "preconfigured"})
    if llm["mode"] == "controller" and auth["mode"] != "controller":
        raise HarnessError("llm.mode controller needs auth.mode controller (the admin configures the users)")
    if auth["mode"] == "controller":
        admin = auth["admin"]
        token = await Controller.login(client, base_url, admin["username"], admin["password"])
        controller = Controller(client, base_url, token, ledger)
        password = auth.get("user_password", "conformance-pass-1")
        llm_config = llm["config"] if llm["mode"] == "controller" else None
        maker = UserMaker(controller, client, base_url, suffix, password, llm_config, fake_url)
        for name in ("main", "other", "no_llm"):
            users[name] = await maker.make(name, with_llm=name != "no_llm")
    elif auth["mode"] == "tokens":
        for name, token in auth["tokens"].items():
            users[name] = User(name, token)
    else:  # none: one anonymous user; what needs a second one or a refused token is NOT TESTABLE
        users["main"] = User("main", None)
    access = target.data.get("access_control")
    if access is not None:
        if controller is None:
            raise HarnessError("access_control needs auth.mode controller (the admin grants the suite's users access)")
        role_id = await controller.role_id(access.get("role", "User"))
        for user in users.values():  # every project, as the suite makes a project per check
            await controller.grant(user.user_id, "/projects", role_id)
        users["stranger"] = await maker.make("stranger")  # no entry: no access to any project it did not create
    projects = target.section("projects", {"mode": "none"})
    project_id = closed = None  # a target without the GNS3 chat API may have no projects
    if projects["mode"] == "controller":
        if controller is None:
            raise HarnessError("projects.mode controller needs auth.mode controller")
        project_id = await controller.create_project(f"conformance-{suffix}")
        closed = await controller.create_project(f"conformance-closed-{suffix}")
        await controller.close_project(closed)
    elif projects["mode"] == "fixed":
        project_id, closed = projects["opened"], projects["closed"]
    env = Environment(
        target=target,
        base_url=base_url,
        fake_llm_url=fake_url,
        scripts=scripts,
        users=users,
        project_id=project_id,
        closed_project_id=closed,
        controller=controller,
        workdir=workdir,
        client=client,
        api_keys=maker.api_keys if maker else [],
        ledger=ledger,
    )
    return Prepared(env, processes, maker.tokens if maker else [u.token for u in users.values() if u.token])


async def _own_project(env: Environment, check_id: str) -> Environment:
    """The check's environment with an opened project of its own, where the suite makes projects (projects.mode
    controller): no other check's sessions are then in its listings, so one broken session cannot spread to other
    checks, whatever their order. (A project, not a user: making a user costs the server a password hash.)"""
    if env.controller is None or env.target.section("projects", {"mode": "fixed"})["mode"] != "controller":
        return env  # the target file names fixed projects: every check shares them
    project_id = await env.controller.create_project(f"conformance-{check_id}-{secrets.token_hex(3)}")
    return replace(env, project_id=project_id)


async def run_check(spec_: CheckSpec, env: Environment) -> CheckRun:
    started = time.monotonic()
    try:
        env = await _own_project(env, spec_.id)
    except (HarnessError, httpx.HTTPError) as exc:
        message = f"harness error: could not make the check's own project: {exc}"
        findings = [Finding(r, Outcome.HARNESS_ERROR, message, spec_.id, []) for r in spec_.requirements]
        return CheckRun(spec_.id, spec_.requirements, time.monotonic() - started, findings)
    ctx = CheckContext(env, spec_.id, list(spec_.requirements))
    leftover_outcome, leftover_message = Outcome.HARNESS_ERROR, "the check ended without judging this requirement"
    # Whether the check's requirements judged so far were judged whole: yes when it ran to its end, and when a
    # failed step of its own stopped it (that requirement FAILs and the check is red whatever else it judged).
    judged_whole = True
    blocked_by = None
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
        judged_whole = False
        leftover_outcome, leftover_message = Outcome.NOT_TESTABLE, str(exc)
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
        spec_.id, spec_.requirements, duration, findings, ctx.client.observed, transient, blocked_by=blocked_by
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


async def _judge_alone(check_runs: list[CheckRun], specs: dict[str, CheckSpec], env: Environment) -> None:
    """Run again, one at a time with nothing else running, every check whose duration rules did not pass, or whose
    race did not happen (CheckSpec.timed, .raced), unless it met transient errors (those are judged FLAKY or not by
    their re-run), or was blocked by a rule of another check (which judges that rule; alone, its scenario would be
    blocked again): up to ALONE_ATTEMPTS times, until an attempt leaves nothing to judge again. The check is judged
    on its last attempt."""
    for index, first in enumerate(check_runs):
        spec_ = specs[first.id]
        if first.rerun is not None or first.blocked_by is not None:
            continue
        failed = [f.message for f in first.all_findings if spec_.judged_alone_after(f)]
        if not failed:
            continue
        for _ in range(ALONE_ATTEMPTS):
            alone = await run_check(spec_, env)
            if not any(spec_.judged_alone_after(f) for f in alone.all_findings):
                break
        alone.failed_under_load = failed[0]
        check_runs[index] = alone


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


def _failed_run(target: Target, message: str, details: str, started: float, started_at: str) -> RunResult:
    """The result of a run the suite could not do: every requirement ERROR (N/A and EXCLUDED stay what they are)."""
    verdicts = harness_failure(spec.load_requirements()["requirements"], message, target.capabilities)
    return RunResult(target, "", verdicts, [], time.monotonic() - started, started_at, details)


def run_suite(
    target: Target,
    *,
    jobs: int = 8,
    only: list[str] | None = None,
    seed: int = DEFAULT_SEED,
    keep: bool = False,
    on_check_done: Callable[[CheckRun, int, int], None] | None = None,
) -> RunResult:
    """`run`, from code that is not async (the CLI, the pytest plugin, the GNS3 runner, a user's script)."""
    return asyncio.run(run(target, jobs=jobs, only=only, seed=seed, keep=keep, on_check_done=on_check_done))


async def run(
    target: Target,
    *,
    jobs: int = 8,
    only: list[str] | None = None,
    seed: int = DEFAULT_SEED,
    keep: bool = False,
    on_check_done: Callable[[CheckRun, int, int], None] | None = None,
    workdir: Path | None = None,
) -> RunResult:
    """Run the checks selected by `only` (requirement ids, areas, check ids: conformance.checks.select; all by
    default) against the target and judge every requirement; `seed` draws the generated requests; what the run
    made on the target is removed at the end unless `keep`. A harness error or a suite bug gives a result whose
    requirements are ERROR; only a target file that preflight proves wrong raises (TargetMisdeclared, a
    TargetError), and a selector that names nothing raises SelectionError."""
    started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    started = time.monotonic()
    chosen = select(only)  # SelectionError: the caller's usage error, before anything starts
    try:
        result = await _run(target, jobs, chosen, bool(only), seed, keep, on_check_done, workdir, started, started_at)
    except TargetError:  # the target file is wrong (preflight): a usage error for the caller, not a verdict
        raise
    except HarnessError as exc:  # the fake LLM or the target did not start, provisioning failed
        result = _failed_run(target, str(exc), str(exc), started, started_at)
    except Exception as exc:  # a suite bug, or a target broken in a way the engine does not catch
        message = f"harness error: {type(exc).__name__}: {exc}"
        details = message + "\n" + "".join(traceback.format_exception(exc)[-4:])
        result = _failed_run(target, message, details, started, started_at)
    result.seed, result.only = seed, list(only or [])
    return result


async def _finish(env: Environment, keep: bool) -> CleanupReport:
    """The clean-up, which never costs the run its verdicts: a failure of its own is listed as what it left."""
    try:
        return await clean_up(env, keep=keep)
    except Exception as exc:  # reported, not raised
        return CleanupReport(False, {}, [Leftover("cleanup", "", f"the clean-up failed: {type(exc).__name__}: {exc}")])


def _replay(env: Environment) -> dict[str, Any]:
    """What a standalone reproduction of an exchange needs besides the exchange: the fake LLM's port (the users'
    LLM configurations name it) and, per user role, who it is and how its token is obtained."""
    users = {}
    for role, user in env.users.items():
        if user.username:
            users[role] = {"username": user.username, "token": "controller"}
        else:
            users[role] = {"username": None, "token": f"target file: auth.tokens.{role}"}
    return {"fake_llm_port": httpx.URL(env.fake_llm_url).port, "base_url": env.base_url, "users": users}


def _applicable(
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


async def _run(target, jobs, chosen, selected, seed, keep, on_check_done, workdir, started, started_at) -> RunResult:
    records = spec.load_requirements()["requirements"]
    chosen, unable = _applicable(chosen, records, target.capabilities)
    chosen = sorted(chosen, key=lambda s: not s.slow)  # long waits first, so they overlap everything else
    with tempfile.TemporaryDirectory(prefix="copilot-conformance-") as tmp:
        work = workdir or Path(tmp)
        # No kept-alive connections: a server that drops one after an error (a 500, say) would otherwise fail the
        # next, unrelated request sent on it with a ReadError, and blame the wrong check.
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=httpx.Timeout(60), limits=limits, trust_env=False) as client:
            prepared = await prepare(target, work, client, seed)  # a HarnessError here: see run()
            try:
                semaphore = asyncio.Semaphore(jobs)
                done: list[CheckRun] = []

                async def one(check_spec: CheckSpec) -> CheckRun:
                    async with semaphore:
                        result = await run_check(check_spec, prepared.env)
                    done.append(result)
                    if on_check_done:
                        on_check_done(result, len(done), len(chosen))
                    return result

                check_runs = list(await asyncio.gather(*(one(s) for s in chosen)))
                await _rerun_transient(check_runs, {s.id: s for s in chosen}, prepared.env, semaphore)
                await _judge_alone(check_runs, {s.id: s for s in chosen}, prepared.env)
                cleanup = await _finish(prepared.env, keep)
            finally:
                for process in reversed(prepared.processes):
                    await asyncio.to_thread(process.stop, target.data.get("start", {}).get("stop_grace_seconds", 10))
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
    result = RunResult(
        target, prepared.env.base_url, verdicts, list(check_runs), time.monotonic() - started, started_at
    )
    result.cleanup, result.replay = cleanup, _replay(prepared.env)
    result.passed = run_passes(verdicts, target.baseline.not_testable, baseline=target.baseline.source is not None)
    # What reports must never show: the configured API keys and every bearer token of the run.
    result.secrets = {f"api_key_{i}": key for i, key in enumerate(prepared.env.api_keys)}
    result.secrets.update({f"token_{i}": token for i, token in enumerate(prepared.tokens)})
    if prepared.env.controller is not None:
        result.secrets["admin_token"] = prepared.env.controller.admin_token
    return result
