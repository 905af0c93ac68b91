"""No requirement PASSes on a scenario that did not happen: for each check, a variant of the reference server on
which its scenario cannot happen (the model down, tools failing, a slow tool that does not wait, a stream sent
whole), and the check must say NOT TESTABLE, with the reason, for every requirement it judges (or FAIL the one
rule the variant really breaks). Checks whose scenario no server can prevent must judge as on a sound server."""

from __future__ import annotations

from functools import partial

import pytest

from conformance.checks import load_all
from conformance.harness.findings import Outcome, combine

from .runs import preventer_run, result_of
from .scenario_missing import SCENARIO_MISSING
from .scenario_preventers import PREVENTERS

pytestmark = pytest.mark.slow  # a suite run per scenario preventer: left out of `python3 tasks.py test --quick`

XDIST_SPREAD = True  # each test's run is its own (or its group's): any worker may take any test

# The run each test reads, started ahead of it (tests/ahead.py): its check's preventer's.
AHEAD = {
    "test_a_check_whose_scenario_did_not_happen_passes_nothing": lambda params: partial(
        preventer_run, SCENARIO_MISSING[params["check_id"]].preventer
    )
}


def test_every_check_says_how_its_scenario_can_be_missing():
    assert set(SCENARIO_MISSING) == set(load_all())
    for check_id, entry in SCENARIO_MISSING.items():
        assert entry.preventer in PREVENTERS, check_id
        assert bool(entry.always_happens) != bool(entry.blocked_by or entry.reason_has), check_id


@pytest.mark.parametrize(
    "check_id",
    # The checks of one preventer share its run: one worker of the test command makes it (xdist_group).
    [
        pytest.param(c, marks=pytest.mark.xdist_group(f"preventer-{e.preventer}"))
        for c, e in sorted(SCENARIO_MISSING.items())
    ],
)
def test_a_check_whose_scenario_did_not_happen_passes_nothing(check_id):
    entry = SCENARIO_MISSING[check_id]
    result = result_of(preventer_run(entry.preventer), entry.preventer)
    assert result.harness_error is None, result.harness_error
    (check_run,) = [r for r in result.checks if r.id == check_id]
    # What the suite finally reports: a check re-run after transient server errors is judged on its re-run, as a
    # timed check judged again alone is on that attempt (result.checks holds it).
    check_run = check_run.rerun or check_run
    # The check's own conclusion (another check of the same run may judge the same requirement otherwise).
    for requirement in check_run.requirements:
        own = [f for f in check_run.all_findings if f.requirement == requirement]
        shown = [f"{f.outcome}: {f.message[:200]}" for f in own]
        outcome = combine(own)
        if requirement in entry.fails:
            assert outcome == Outcome.FAILED, (requirement, shown)
        elif entry.always_happens:
            assert outcome == Outcome.PASSED, (requirement, shown)
        else:
            assert outcome == Outcome.NOT_TESTABLE, (requirement, shown)
            reasons = " ".join(f.message for f in own if f.outcome == Outcome.NOT_TESTABLE)
            wanted = (f"blocked by {entry.blocked_by}",) if entry.blocked_by else entry.reason_has
            wanted = (wanted,) if isinstance(wanted, str) else wanted
            assert any(phrase in reasons for phrase in wanted), (requirement, shown)
