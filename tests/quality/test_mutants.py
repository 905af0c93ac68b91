"""Proof that the suite fails when it should: each mutant of the reference server fails exactly the
requirements it breaks (and their stated consequences), and the unmodified server fails none."""

from __future__ import annotations

from functools import partial

import pytest

import gns3_copilot_spec as spec
from conformance.harness.findings import Outcome, Verdict

from .mutants import MUTANTS
from .runs import SHARES_REFERENCE_RUN, gns3_mutants, mutant_run, not_passing, reference_run, result_of

pytestmark = pytest.mark.slow  # a suite run per mutant: left out of `python3 tasks.py test --quick`

XDIST_SPREAD = True  # each mutant's run is its own: any worker may take any test

# The run each test reads, started ahead of it (tests/ahead.py).
AHEAD = {"test_each_mutant_fails_exactly_what_it_breaks": lambda params: partial(mutant_run, params["name"])}


def test_there_are_at_least_seventy_mutants():
    assert len(gns3_mutants()) >= 70  # the channel mutants are counted in test_channel_mutants.py


@SHARES_REFERENCE_RUN
def test_the_reference_server_passes_every_must_and_should():
    main_job = reference_run()
    assert main_job.report.get("harness_error") is None, main_job.output[-6000:]
    assert main_job.not_passing() == {}
    assert main_job.report["passed"]
    print(f"\nreference run: {len(main_job.verdicts())} requirements in {main_job.report['wall_time_seconds']:.1f} s")


@pytest.mark.parametrize("name", gns3_mutants())
def test_each_mutant_fails_exactly_what_it_breaks(name):
    mutant = MUTANTS[name]
    result = result_of(mutant_run(name), name)
    assert result.harness_error is None, result.harness_error
    failing = not_passing(result)
    details = {
        rid: [f.message[:300] for f in v.findings if f.outcome != Outcome.PASSED][:2]
        for v in result.verdicts
        for rid in [v.id]
        if rid in failing
    }
    assert mutant.targets <= set(failing), f"{name}: targets not failing; failing: {details}"
    assert set(failing) == mutant.targets | mutant.consequences, f"{name}: {details}"
    for rid in mutant.targets:
        assert failing[rid] in (Verdict.FAIL, Verdict.WARN), (rid, failing[rid], details.get(rid))
    assert not result.passed or all(v == Verdict.WARN for v in failing.values())
    levels = {r["id"]: r["level"] for r in spec.load_requirements()["requirements"]}
    if any(levels[rid] == "MUST" for rid in mutant.targets):
        assert not result.passed, f"{name} breaks a MUST, and the run passed"
