"""Traceability of the suite: every requirement has checks or a written exclusion reason, every check it
names exists in conformance/checks/, and every check there is named by some requirement."""

from __future__ import annotations

import pytest

import gns3_copilot_spec as spec
from conformance.checks import load_all
from tests.quality.runs import SHARES_REFERENCE_RUN, reference_run


def test_every_requirement_has_an_existing_check_or_an_exclusion_reason():
    registry = load_all()
    records = spec.load_requirements()["requirements"]
    without = [r["id"] for r in records if not r.get("checks") and not str(r.get("excluded", "")).strip()]
    assert without == []
    named = {check for r in records for check in r.get("checks", [])}
    assert sorted(named - set(registry)) == [], "requirements name checks that conformance/checks/ does not define"
    assert sorted(set(registry) - named) == [], "checks that no requirement names (they would judge nothing)"
    for check in registry.values():  # each check judges exactly the requirements that name it
        assert set(check.requirements) == {r["id"] for r in records if check.id in r.get("checks", [])}


@pytest.mark.slow  # whole suite runs or servers: left out of --quick
@SHARES_REFERENCE_RUN  # the built-in run of tests/quality, made once per worker
def test_the_built_in_reference_run_judges_every_requirement_that_is_not_excluded():
    report = reference_run().report
    judged = {r["id"] for r in report["requirements"] if r["findings"]}
    expected = {r["id"] for r in spec.load_requirements()["requirements"] if "excluded" not in r}
    assert sorted(expected - judged) == []
