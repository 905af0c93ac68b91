"""A requirement whose verdict flips when a check that met a transient server error runs again is FLAKY, in
every report format, with the server's error text: never a plain FAIL (nor a PASS) of the requirement. A timed
check that fails under load is judged again with the server to itself."""

from __future__ import annotations

import asyncio

import pytest

from conformance.harness.engine import run
from conformance.harness.findings import Verdict
from conformance.reports import report_data
from conformance.reports.console import summary_text
from conformance.reports.junit import render

from .runs import mutant_target

pytestmark = pytest.mark.slow  # a suite run per test: left out of `python3 tasks.py test --quick`

XDIST_SPREAD = True  # each test's run is its own (or its group's): any worker may take any test


def test_a_transient_server_error_makes_the_requirement_flaky_not_failed():
    result = asyncio.run(run(mutant_target("first-stream-of-titles-once-500"), only=["titles.once"]))
    assert result.harness_error is None, result.harness_error
    verdicts = {v.id: v for v in result.verdicts}
    assert verdicts["TITLE-004"].verdict == Verdict.FLAKY, verdicts["TITLE-004"]
    assert "database is locked" in verdicts["TITLE-004"].note
    assert list(result.transient) == ["titles.once"]
    assert not result.passed  # a target without a baseline: an unreliable verdict is not a pass
    data = report_data(result)
    assert data["counts"][Verdict.FLAKY] >= 1 and "titles.once" in data["transient_errors"]
    text = summary_text(data)
    assert "1 check met server errors its scenario did not ask for and ran again (titles.once)" in text
    assert b"FLAKY" in render(data)


def test_a_failed_set_up_turn_blocks_the_check_instead_of_failing_its_rules():
    result = asyncio.run(
        run(mutant_target("set-up-turns-of-token-required-500"), only=["preconditions.token_required"])
    )
    assert result.harness_error is None, result.harness_error
    verdicts = {v.id: v for v in result.verdicts}
    for rid in ("AUTH-001", "AUTH-002", "PRECHECK-001"):
        assert verdicts[rid].verdict == Verdict.NOT_TESTABLE, (rid, verdicts[rid].verdict)
        assert any("blocked by TESTABILITY-001" in f.message for f in verdicts[rid].findings), rid


def test_a_timed_check_failed_under_load_is_judged_again_alone():
    result = asyncio.run(run(mutant_target("first-done-of-abort-running_turn-late"), only=["abort.running_turn"]))
    assert result.harness_error is None, result.harness_error
    verdicts = {v.id: v.verdict for v in result.verdicts}
    assert verdicts["ABORT-002"] == Verdict.PASS, verdicts
    assert "after the abort request; expected `done` within 5 s" in result.judged_alone["abort.running_turn"]
    assert result.passed
    data = report_data(result)
    assert list(data["judged_alone"]) == ["abort.running_turn"]
    text = summary_text(data)
    assert (
        "1 check of a duration or a race did not pass while other checks loaded the server and was judged again" in text
    )


def test_a_race_that_did_not_happen_under_load_is_judged_again_alone():
    """The first three races of the check are served one request after the other: no race, so PRECHECK-001 cannot
    be judged there (NOT TESTABLE, and both turns ran: CONCURRENCY-001 would fail). Judged again with the server to
    itself, the race happens and is refused with a 409: the verdicts come from that run, and the reports say so."""
    result = asyncio.run(
        run(mutant_target("first-races-of-busy_new_session-in-turn"), only=["concurrency.busy_new_session"])
    )
    assert result.harness_error is None, result.harness_error
    verdicts = {v.id: v.verdict for v in result.verdicts}
    assert verdicts["PRECHECK-001"] == verdicts["CONCURRENCY-001"] == Verdict.PASS, verdicts
    first = result.judged_alone["concurrency.busy_new_session"]
    assert "both ran" in first or "no request of 3 races on a new session was refused" in first, first
    assert result.passed
