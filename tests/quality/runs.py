"""Conformance runs shared by the quality tests: the reference server as the suite starts it, each mutant,
and the reference server reached through a target file's base_url. Each is run once per test session."""

from __future__ import annotations

import asyncio
import copy
from functools import cache

import gns3_copilot_spec as spec
from conformance.checks import AREAS, load_all
from conformance.engine import RunResult, run
from conformance.findings import Verdict
from conformance.target import Target, load_target, parse_target

from .answer_breakers import BREAKERS
from .mutants import MUTANTS
from .scenario_missing import SCENARIO_MISSING

CONCURRENT_RUNS = 2  # 2 cores: more would make timing rules (heartbeat gaps, concurrency) flaky
# The areas of the channels' rules: the GNS3 mutants, written before the channel checks, are not judged by them (nor
# by the fake LLM's area, which has no checks); each channel mutant names the areas it is judged by (Mutant.only).
CHANNEL_AREAS = frozenset({"channels", "across_channels", "channel_openai", "channel_ui", "channel_ag_ui"})


@cache
def gns3_areas() -> tuple[str, ...]:
    """The `--only` areas of a GNS3 mutant's run: every area with checks, but the channels'."""
    have = {spec_.area for spec_ in load_all().values()}
    return tuple(a for a in dict.fromkeys(AREAS.values()) if a in have and a not in CHANNEL_AREAS | {"fake_llm"})


def gns3_mutants() -> list[str]:
    return sorted(name for name, m in MUTANTS.items() if not m.only)


def channel_mutants() -> list[str]:
    return sorted(name for name, m in MUTANTS.items() if m.only)


# The stream areas every GNS3 mutant's run keeps: they make every kind of stream the rules observe (heartbeats and
# aborted tools included).
STREAM_AREAS = ("framing", "events", "grammar", "tool_calls", "content", "heartbeat", "abort")


def mutant_areas(name: str) -> list[str]:
    """The `--only` selectors of a mutant's run: Mutant.only for a channel mutant; for a GNS3 mutant, the areas of
    the checks that judge what it breaks (its targets and stated consequences) and the stream areas. The whole
    suite judges the unmodified server (reference_run); each mutant pays only for the checks that can see it, so
    that the test command keeps its time."""
    mutant = MUTANTS[name]
    if mutant.only:
        return list(mutant.only)
    records = {r["id"]: r for r in spec.load_requirements()["requirements"]}
    wanted = {check.split(".")[0] for rid in mutant.targets | mutant.consequences for check in records[rid]["checks"]}
    return [area for area in gns3_areas() if area in wanted or area in STREAM_AREAS]


def mutant_target(name: str) -> Target:
    base = load_target(None)
    data = copy.deepcopy(base.data)
    data["name"] = f"mutant-{name}"
    command = data["start"]["command"]
    at = command.index("reference_server")
    data["start"]["command"] = [*command[:at], "tests.quality.mutant_server", name, *command[at + 1 :]]
    data["start"]["env"] = {"PYTHONPATH": "{repo}"}
    return parse_target(data, path=base.path)


def not_passing(result: RunResult) -> dict[str, str]:
    """Requirement id -> verdict, for every verdict that is not a pass (N/A and EXCLUDED are not judged)."""
    return {
        v.id: v.verdict
        for v in result.verdicts
        if v.verdict not in (Verdict.PASS, Verdict.NOT_APPLICABLE, Verdict.EXCLUDED)
    }


async def _guarded(name: str, running) -> tuple[str, RunResult | BaseException]:
    """One run whose exception is kept as its result: a run that raises (a preflight refusal, say) fails its own
    test, instead of aborting the whole batch, which every test of the batch would then start again."""
    try:
        return name, await running
    except Exception as exc:  # noqa: BLE001 - reported by the test of this run
        return name, exc


def result_of(runs: dict[str, RunResult | BaseException], name: str) -> RunResult:
    outcome = runs[name]
    if isinstance(outcome, BaseException):
        raise AssertionError(f"the run of {name} raised {type(outcome).__name__}: {outcome}") from outcome
    return outcome


def _mutant_batch(names: list[str]) -> dict[str, RunResult | BaseException]:
    async def all_runs() -> dict[str, RunResult]:
        gate = asyncio.Semaphore(CONCURRENT_RUNS)

        async def one(name: str) -> tuple[str, RunResult | BaseException]:
            async with gate:
                return await _guarded(name, run(mutant_target(name), only=mutant_areas(name)))

        return dict(await asyncio.gather(*(one(name) for name in names)))

    return asyncio.run(all_runs())


@cache
def mutant_runs() -> dict[str, RunResult | BaseException]:
    """The GNS3 mutants, each judged by the GNS3 areas."""
    return _mutant_batch(gns3_mutants())


@cache
def channel_mutant_runs() -> dict[str, RunResult | BaseException]:
    """The channel mutants, each judged by the areas it names (Mutant.only)."""
    return _mutant_batch(channel_mutants())


@cache
def breaker_runs() -> dict[str, RunResult | BaseException]:
    """The answer breakers (listing and history bodies), each judged by the GNS3 areas."""

    async def all_runs() -> dict[str, RunResult]:
        gate = asyncio.Semaphore(CONCURRENT_RUNS)

        async def one(name: str) -> tuple[str, RunResult | BaseException]:
            async with gate:
                return await _guarded(name, run(mutant_target(name), only=list(gns3_areas())))

        return dict(await asyncio.gather(*(one(name) for name in BREAKERS)))

    return asyncio.run(all_runs())


@cache
def preventer_runs() -> dict[str, RunResult | BaseException]:
    """Per scenario preventer, one run of the checks SCENARIO_MISSING assigns to it."""
    chosen: dict[str, list[str]] = {}
    for check_id, entry in SCENARIO_MISSING.items():
        chosen.setdefault(entry.preventer, []).append(check_id)

    async def all_runs() -> dict[str, RunResult]:
        gate = asyncio.Semaphore(CONCURRENT_RUNS)

        async def one(name: str) -> tuple[str, RunResult | BaseException]:
            async with gate:
                return await _guarded(name, run(mutant_target(name), only=chosen[name]))

        return dict(await asyncio.gather(*(one(name) for name in chosen)))

    return asyncio.run(all_runs())


@cache
def reference_run() -> RunResult:
    return asyncio.run(run(load_target(None)))
