"""The public surface of the suite as a library: exactly the names `conformance.__all__` lists, each usable."""

from __future__ import annotations

import pytest

import conformance

EXPECTED = {
    "Blocked",
    "ConformanceError",
    "Finding",
    "HarnessError",
    "NotTestable",
    "Outcome",
    "ParsedStream",
    "RequirementVerdict",
    "RunResult",
    "SelectionError",
    "SseSnapshotExtension",
    "Target",
    "TargetError",
    "Verdict",
    "Violation",
    "check_events",
    "load_target",
    "parse_stream",
    "parse_target",
    "requirement",
    "run",
    "run_suite",
    "snapshot_events",
    "snapshot_text",
}


def test_the_exported_names_are_exactly_the_intended_ones():
    assert set(conformance.__all__) == EXPECTED
    assert len(conformance.__all__) == len(EXPECTED)


def test_every_exported_name_resolves():
    for name in conformance.__all__:
        assert getattr(conformance, name) is not None, name


def test_the_error_hierarchy_has_one_base():
    for error in (conformance.TargetError, conformance.HarnessError, conformance.Blocked, conformance.NotTestable):
        assert issubclass(error, conformance.ConformanceError)


def test_requirement_looks_up_the_registry():
    assert conformance.requirement("STREAM-ORDER-003")["level"] == "MUST"
    try:
        conformance.requirement("NO-SUCH-001")
    except KeyError as error:
        assert "NO-SUCH-001" in str(error)
    else:
        raise AssertionError("an unknown id must raise KeyError")


@pytest.mark.slow  # whole suite runs or servers: left out of --quick
def test_run_suite_from_python_as_the_readme_shows():
    """README: `conformance.run_suite(conformance.load_target(...))` (here the built-in target, one check)."""
    result = conformance.run_suite(conformance.load_target("reference"), only=["prefix."])
    assert result.harness_error is None and result.passed
    verdicts = {v.id: v.verdict for v in result.verdicts}
    assert verdicts["PREFIX-001"] == conformance.Verdict.PASS
