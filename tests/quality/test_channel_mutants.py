"""Proof that the channel checks fail when they should: each channel mutant (tests/quality/mutants_channels.py) of
the reference server fails exactly the requirements it breaks (and their stated consequences) among the checks of
the checks of those requirements (runs.mutant_selection), and every rule of the channels is the target of a mutant."""

from __future__ import annotations

from functools import partial

import pytest

import gns3_copilot_spec as spec
from conformance.checks import AREAS, select
from conformance.harness.findings import Outcome, Verdict

from .mutants import MUTANTS
from .mutants_channels import NO_MUTANT, SUITE_GAPS
from .runs import CHANNEL_AREAS, channel_mutants, mutant_run, not_passing, result_of

pytestmark = pytest.mark.slow  # a suite run per mutant: left out of `python3 tasks.py test --quick`

XDIST_SPREAD = True  # each test's run is its own (or its group's): any worker may take any test

# The run each test reads, started ahead of it (tests/ahead.py).
AHEAD = {"test_each_channel_mutant_fails_exactly_what_it_breaks": lambda params: partial(mutant_run, params["name"])}

CHANNEL_SECTIONS = {section for section, area in AREAS.items() if area in CHANNEL_AREAS}


def channel_requirements() -> list[str]:
    return [
        r["id"]
        for r in spec.load_requirements()["requirements"]
        if r["section"] in CHANNEL_SECTIONS and "excluded" not in r
    ]


def test_there_are_at_least_twenty_five_channel_mutants():
    assert len(channel_mutants()) >= 25


def test_every_channel_requirement_is_the_target_of_a_mutant():
    targeted = {rid for name in channel_mutants() for rid in MUTANTS[name].targets}
    missing = [rid for rid in channel_requirements() if rid not in targeted and rid not in NO_MUTANT]
    assert not missing, f"channel requirements no mutant targets (and NO_MUTANT does not explain): {missing}"
    assert not set(NO_MUTANT) & targeted, "NO_MUTANT lists requirements that a mutant targets"


@pytest.mark.parametrize("name", channel_mutants())
def test_each_channel_mutant_selects_checks_of_what_it_breaks(name):
    """Its run selects a check of every requirement it expects to fail: else the failure could never be seen."""
    mutant = MUTANTS[name]
    assert set(mutant.only) <= CHANNEL_AREAS, mutant.only
    judged = {rid for check in select(mutant.only) for rid in check.requirements}
    assert mutant.targets | mutant.consequences <= judged, sorted(mutant.targets | mutant.consequences - judged)


@pytest.mark.parametrize("name", channel_mutants())
def test_each_channel_mutant_fails_exactly_what_it_breaks(name):
    mutant = MUTANTS[name]
    result = result_of(mutant_run(name), name)
    assert result.harness_error is None, result.harness_error
    failing = not_passing(result)
    details = {
        v.id: [f.message[:300] for f in v.findings if f.outcome != Outcome.PASSED][:2]
        for v in result.verdicts
        if v.id in failing
    }
    assert mutant.targets <= set(failing), f"{name}: targets not failing; failing: {details}"
    assert set(failing) == mutant.targets | mutant.consequences, f"{name}: {details}"
    for rid in mutant.targets:
        assert failing[rid] in (Verdict.FAIL, Verdict.WARN), (rid, failing[rid], details.get(rid))
    levels = {r["id"]: r["level"] for r in spec.load_requirements()["requirements"]}
    if any(levels[rid] == "MUST" for rid in mutant.targets):
        assert not result.passed, f"{name} breaks a MUST, and the run passed"


def test_the_suite_gaps_are_no_registered_mutants():
    """A mutant the suite does not catch yet is listed with what its check should see, not run (SUITE_GAPS)."""
    assert not set(SUITE_GAPS) & set(MUTANTS)
    assert all(should_see for _mutant, should_see in SUITE_GAPS.values())
