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
from conformance.checks import CheckSpec, select
from conformance.errors import HarnessError, TargetError
from conformance.harness.cleanup import finish
from conformance.harness.environment import DEFAULT_SEED
from conformance.harness.execution import CheckRun, run_checks
from conformance.harness.provisioning import prepare
from conformance.harness.target import Target
from conformance.harness.verdicts import RunResult, applicable, failed_run, judged_run


def run_suite(
    target: Target,
    *,
    jobs: int = 8,
    only: list[str] | None = None,
    seed: int = DEFAULT_SEED,
    keep: bool = False,
    on_check_done: Callable[[CheckRun, int, int], None] | None = None,
) -> RunResult:
    """`run`, from code that is not async (the front-ends, a user's script)."""
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
        result = failed_run(target, str(exc), str(exc), started, started_at)
    except Exception as exc:  # a suite bug, or a target broken in a way the engine does not catch
        message = f"harness error: {type(exc).__name__}: {exc}"
        details = message + "\n" + "".join(traceback.format_exception(exc)[-4:])
        result = failed_run(target, message, details, started, started_at)
    result.seed, result.only = seed, list(only or [])
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
    started: float,
    started_at: str,
) -> RunResult:
    chosen, unable = applicable(chosen, spec.load_requirements()["requirements"], target.capabilities)
    chosen = sorted(chosen, key=lambda s: not s.slow)  # long waits first, so they overlap everything else
    with tempfile.TemporaryDirectory(prefix="copilot-conformance-") as tmp:
        # No kept-alive connections: a server that drops one after an error (a 500, say) would otherwise fail the
        # next, unrelated request sent on it with a ReadError, and blame the wrong check.
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=httpx.Timeout(60), limits=limits, trust_env=False) as client:
            prepared = await prepare(target, workdir or Path(tmp), client, seed)  # a HarnessError here: see run()
            try:
                check_runs = await run_checks(chosen, prepared.env, jobs, on_check_done)
                cleanup = await finish(prepared.env, keep)
            finally:
                grace = target.data.get("start", {}).get("stop_grace_seconds", 10)
                for process in reversed(prepared.processes):
                    await asyncio.to_thread(process.stop, grace)
    wall_time = time.monotonic() - started
    result = judged_run(target, prepared.env.base_url, check_runs, unable, selected, wall_time, started_at)
    result.cleanup, result.replay, result.secrets = cleanup, prepared.replay(), prepared.secrets()
    return result
