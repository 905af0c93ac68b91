"""A check that fails a duration or a race under the run's load is judged again alone: up to three attempts for
a failure nobody listed (a server that meets its bound passes one), one when the target's baseline lists every rule
it failed (a known failure is confirmed, or found gone)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from conformance.checks import CheckSpec
from conformance.harness import execution
from conformance.harness.execution import ALONE_ATTEMPTS, CheckRun, _judge_alone
from conformance.harness.findings import Finding, Outcome
from conformance.harness.target import Baseline

SPEC = CheckSpec("abort.running_turn", lambda ctx: None, ("ABORT-001", "ABORT-002"), timed=("ABORT-002",))


def _late(outcome: Outcome = Outcome.FAILED) -> CheckRun:
    finding = Finding("ABORT-002", outcome, "the stream ended 13 s after the abort request", SPEC.id)
    return CheckRun(SPEC.id, SPEC.requirements, 1.0, [Finding("ABORT-001", Outcome.PASSED, "", SPEC.id), finding])


def _attempts(baseline: Baseline, monkeypatch, alone: list[CheckRun], **most) -> tuple[int, CheckRun]:
    tried = []

    async def run_check(spec_, env):
        tried.append(spec_.id)
        return alone[len(tried) - 1]

    monkeypatch.setattr(execution, "run_check", run_check)
    runs = [_late()]
    env = SimpleNamespace(target=SimpleNamespace(baseline=baseline))
    asyncio.run(_judge_alone(runs, {SPEC.id: SPEC}, env, **most))
    return len(tried), runs[0]


def test_a_failure_nobody_listed_gets_every_attempt(monkeypatch):
    tried, judged = _attempts(Baseline(), monkeypatch, [_late() for _ in range(ALONE_ATTEMPTS)])
    assert tried == ALONE_ATTEMPTS == 3
    assert judged.failed_under_load == "the stream ended 13 s after the abort request"


def test_an_attempt_that_passes_ends_the_attempts(monkeypatch):
    tried, judged = _attempts(Baseline(), monkeypatch, [_late(), _late(Outcome.PASSED), _late()])
    assert tried == 2 and all(f.outcome == Outcome.PASSED for f in judged.findings)


def test_a_failure_the_baseline_lists_is_confirmed_once(monkeypatch):
    listed = Baseline(known_failures={"ABORT-002": "no abort within 5 s"})
    tried, judged = _attempts(listed, monkeypatch, [_late()])
    assert tried == 1 and judged.failed_under_load is not None


@pytest.mark.parametrize("listed", [{}, {"ABORT-001": "another rule"}])
def test_a_baseline_that_does_not_list_the_failed_rule_leaves_every_attempt(monkeypatch, listed):
    tried, _ = _attempts(Baseline(known_failures=listed), monkeypatch, [_late() for _ in range(ALONE_ATTEMPTS)])
    assert tried == ALONE_ATTEMPTS


def test_fewer_attempts_asked_are_the_most_tried(monkeypatch):
    """`run(..., alone_attempts=1)`: a server that fails on purpose (the tests' variant servers) is confirmed once."""
    tried, judged = _attempts(Baseline(), monkeypatch, [_late() for _ in range(ALONE_ATTEMPTS)], most=1)
    assert tried == 1 and judged.failed_under_load is not None
    listed = Baseline(known_failures={"ABORT-002": "no abort within 5 s"})
    assert _attempts(listed, monkeypatch, [_late()], most=2)[0] == 1  # a listed failure still gets one
