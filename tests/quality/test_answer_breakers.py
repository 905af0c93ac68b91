"""A 200 answer to a listing or a history call whose body is not JSON, or not the documented schema, is the
implementation's failure of the requirements that answer was read for, never the suite's ERROR."""

from __future__ import annotations

from functools import partial

import pytest

from conformance.harness.findings import Verdict

from .answer_breakers import BREAKERS
from .runs import breaker_run, result_of

pytestmark = pytest.mark.slow  # a suite run per breaker: left out of `python3 tasks.py test --quick`

XDIST_SPREAD = True  # each test's run is its own (or its group's): any worker may take any test

# The run each test reads, started ahead of it (tests/ahead.py).
AHEAD = {
    "test_a_bad_answer_fails_its_requirements_and_is_never_an_error": lambda params: partial(
        breaker_run, params["name"]
    )
}


@pytest.mark.parametrize("name", sorted(BREAKERS))
def test_a_bad_answer_fails_its_requirements_and_is_never_an_error(name):
    result = result_of(breaker_run(name), name)
    assert result.harness_error is None, result.harness_error
    verdicts = {v.id: v.verdict for v in result.verdicts}
    errors = {
        v.id: [f.message[:300] for f in v.findings if f.outcome != "passed"][:2]
        for v in result.verdicts
        if v.verdict == Verdict.ERROR
    }
    assert errors == {}, f"{name}: the suite blamed itself: {errors}"
    for requirement in BREAKERS[name].blamed:
        assert verdicts[requirement] == Verdict.FAIL, (requirement, verdicts[requirement])
    assert not result.passed
