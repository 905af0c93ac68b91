"""Conformance runs shared by the quality tests: the reference server as the suite starts it, each mutant,
and the reference server reached through a target file's base_url. Each is run once per test worker that needs it."""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from conformance.checks import AREAS, load_all
from conformance.harness.engine import run
from conformance.harness.findings import Verdict
from conformance.harness.target import Target, load_target, parse_target
from conformance.harness.verdicts import RunResult
from tests.ahead import once
from tests.readme import readme_command

from .fork_server import forked
from .mutants import MUTANTS
from .scenario_missing import SCENARIO_MISSING

REPOSITORY = Path(__file__).resolve().parents[2]

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


def mutant_selection(name: str) -> list[str]:
    """The `--only` selectors of a mutant's run: the requirements it breaks (its targets and stated consequences),
    which select every check that judges them, and the areas whose scenarios alone make it happen
    (Mutant.seen_in). The whole suite judges the unmodified server (reference_run); a mutant's run pays only for
    the checks of what it breaks, and fails exactly its targets and consequences among every requirement those
    checks judge. (Judging each mutant by whole areas instead cost the test command about 2 CPU-s a mutant, some
    400 CPU-s in all, and found nothing more: every mutant fails the same requirements either way, once a mutant
    whose consequence only another area's scenario makes names that area in seen_in.)"""
    mutant = MUTANTS[name]
    areas = [area for area in dict.fromkeys(AREAS.values()) if area in mutant.seen_in]
    return sorted(mutant.targets | mutant.consequences) + areas


# The tests that read the built-in run share it: one worker of the test command makes it.
SHARES_REFERENCE_RUN = pytest.mark.xdist_group("reference-run")


def mutant_target(name: str, *, fork: bool = True) -> Target:
    """The built-in target, served by the variant `name` (tests/quality/mutant_server.py): forked from this process's
    fork server (tests/quality/fork_server.py) unless `fork` is False or forking is not available."""
    base = load_target(None)
    data = copy.deepcopy(base.data)
    data["name"] = f"mutant-{name}"
    command = data["start"]["command"]
    at = command.index("reference_server")
    server = forked("tests.quality.mutant_server") if fork else ["tests.quality.mutant_server"]
    data["start"]["command"] = [*command[:at], *server, name, *command[at + 1 :]]
    data["start"]["env"] = {"PYTHONPATH": "{repo}"}
    return parse_target(data, path=base.path)


def not_passing(result: RunResult) -> dict[str, str]:
    """Requirement id -> verdict, for every verdict that is not a pass (N/A and EXCLUDED are not judged)."""
    return {
        v.id: v.verdict
        for v in result.verdicts
        if v.verdict not in (Verdict.PASS, Verdict.NOT_APPLICABLE, Verdict.EXCLUDED)
    }


# A variant server breaks a rule, or keeps a scenario from happening, by its code, not by chance: one attempt alone
# confirms what the run found, where a sound server's timed checks get three (the engine's default, which the built-in
# run keeps). The fifteen mutants of timed rules paid two more whole attempts of each failing check otherwise.
VARIANT_ALONE_ATTEMPTS = 1


def _one_run(target_name: str, only: list[str]) -> RunResult | BaseException:
    """One run, whose exception is kept as its result: a run that raises (a preflight refusal, say) fails the tests
    that read it, and is not started again by each of them."""
    try:
        return asyncio.run(run(mutant_target(target_name), only=only, alone_attempts=VARIANT_ALONE_ATTEMPTS))
    except Exception as exc:  # noqa: BLE001 - reported by the tests of this run
        return exc


def result_of(outcome: RunResult | BaseException, name: str) -> RunResult:
    if isinstance(outcome, BaseException):
        raise AssertionError(f"the run of {name} raised {type(outcome).__name__}: {outcome}") from outcome
    return outcome


# One run per test: the test command's workers (pytest-xdist) share the runs out, so a run is made by the worker that
# runs its test, and only there (tests/ahead.py starts it a test ahead). What the suite finally reports is judged: a
# timed check it judged again alone (CheckSpec.timed, .raced) is judged on that run, as a user's report would show it.


def mutant_run(name: str) -> RunResult | BaseException:
    """A mutant (GNS3 or channel), judged by the checks of what it breaks (mutant_selection)."""
    return once(("mutant", name), lambda: _one_run(name, mutant_selection(name)))


def breaker_run(name: str) -> RunResult | BaseException:
    """An answer breaker (listing and history bodies), judged by every GNS3 area: none may blame the suite."""
    return once(("breaker", name), lambda: _one_run(name, list(gns3_areas())))


def preventer_checks(name: str) -> list[str]:
    """The checks SCENARIO_MISSING assigns to a scenario preventer."""
    return sorted(check_id for check_id, entry in SCENARIO_MISSING.items() if entry.preventer == name)


def preventer_run(name: str) -> RunResult | BaseException:
    """One run of a scenario preventer, with the checks SCENARIO_MISSING assigns to it."""
    return once(("preventer", name), lambda: _one_run(name, preventer_checks(name)))


@dataclass(frozen=True)
class ReferenceRun:
    """The README's main job as a user runs it: its exit code, output and JSON report."""

    returncode: int
    output: str
    report: dict

    def verdicts(self) -> dict[str, str]:
        """Requirement id -> verdict, for every requirement of the registry."""
        return {r["id"]: r["verdict"] for r in self.report["requirements"]}

    def not_passing(self) -> dict[str, str]:
        """Requirement id -> verdict, for every verdict that is not a pass (N/A and EXCLUDED are not judged)."""
        judged_as_passing = {Verdict.PASS.value, Verdict.NOT_APPLICABLE.value, Verdict.EXCLUDED.value}
        return {rid: verdict for rid, verdict in self.verdicts().items() if verdict not in judged_as_passing}


@cache
def reference_run() -> ReferenceRun:
    """The whole suite against the built-in reference server, made once per worker by the README's main job,
    `python3 tasks.py conformance`, from the repository root (its reports go to reports/, as the README says): the
    run a user makes first is the one the tests of the built-in run read."""
    report_path = REPOSITORY / "reports" / "conformance.json"
    report_path.unlink(missing_ok=True)  # never an earlier run's
    completed = subprocess.run(
        readme_command("python3 tasks.py conformance"),
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=900,
    )
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    return ReferenceRun(completed.returncode, completed.stdout + completed.stderr, report)
