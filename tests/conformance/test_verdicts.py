"""How findings become verdicts (conformance/harness/findings.py), and verdicts a run's result; and how the engine turns
what a check does (judges, stops, gives up, crashes) into findings."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

import gns3_copilot_spec as spec
from conformance.checks import CheckSpec
from conformance.errors import BlockedBy, NotTestable
from conformance.harness.execution import run_check
from conformance.harness.findings import Finding, Outcome, Verdict, combine, judge, run_passes


def record(level="MUST", capability=None, rid="X-001", **extra):
    data = {"id": rid, "level": level, "section": "Test", "text": "a rule", "checks": ["x.check"], **extra}
    if capability:
        data["capability"] = capability
    return data


def found(outcome, rid="X-001", message=None):
    return Finding(rid, outcome, message or f"{outcome} message", "x.check")


def verdict_of(rec, findings, *, capabilities=(), known_failures=None, not_testable=None, gns3=True):
    """`gns3`: the target serves the GNS3 chat API (the default target's channel), where the test rules live."""
    return judge(
        rec,
        findings,
        capabilities=set(capabilities) | ({"channel_gns3"} if gns3 else set()),
        known_failures=known_failures or {},
        accepted_not_testable=not_testable or {},
    )


def passes(verdict, not_testable=None):
    return run_passes([verdict], not_testable or {})


def test_the_verdict_and_outcome_values_are_the_documented_ones():
    # conformance.json, the JUnit file and baselines carry these strings: they never change.
    assert [v.value for v in Verdict] == [
        "PASS",
        "FAIL",
        "WARN",
        "XFAIL",
        "STALE",
        "NOT TESTABLE",
        "N/A",
        "EXCLUDED",
        "ERROR",
        "NOT SELECTED",
        "FLAKY",
    ]
    assert [o.value for o in Outcome] == ["passed", "failed", "not_testable", "harness_error"]


def test_all_passed_is_pass():
    verdict = verdict_of(record(), [found(Outcome.PASSED), found(Outcome.PASSED)])
    assert verdict.verdict == Verdict.PASS and passes(verdict)


def test_a_failing_must_fails_the_run():
    verdict = verdict_of(
        record("MUST"), [found(Outcome.PASSED), found(Outcome.FAILED, message="sent X, got Y, expected Z")]
    )
    assert verdict.verdict == Verdict.FAIL
    assert not passes(verdict)
    assert [f.message for f in verdict.findings if f.outcome == Outcome.FAILED] == ["sent X, got Y, expected Z"]


def test_a_failing_should_warns_and_the_run_passes():
    verdict = verdict_of(record("SHOULD"), [found(Outcome.FAILED)])
    assert verdict.verdict == Verdict.WARN
    assert passes(verdict)


def test_a_may_without_capability_is_not_applicable_whatever_the_findings():
    for findings in ([], [found(Outcome.FAILED)], [found(Outcome.PASSED)]):
        verdict = verdict_of(record("MAY"), findings)
        assert verdict.verdict == Verdict.NOT_APPLICABLE
        assert verdict.note == "MAY without a capability: nothing to require"
        assert passes(verdict)


def test_an_undeclared_capability_is_not_applicable():
    verdict = verdict_of(record("MUST", capability="abort"), [found(Outcome.FAILED)], capabilities=["db_access"])
    assert verdict.verdict == Verdict.NOT_APPLICABLE
    assert verdict.note == "capability `abort` not declared"
    assert passes(verdict)


@pytest.mark.parametrize("level", ["MAY", "MUST"])
def test_a_declared_capability_that_fails_fails_the_run(level):
    verdict = verdict_of(record(level, capability="abort"), [found(Outcome.FAILED)], capabilities=["abort"])
    assert verdict.verdict == Verdict.FAIL
    assert not passes(verdict)


def test_a_declared_capability_that_passes():
    verdict = verdict_of(record("MAY", capability="abort"), [found(Outcome.PASSED)], capabilities=["abort"])
    assert verdict.verdict == Verdict.PASS


def test_the_real_abort_requirement_is_a_may_of_the_abort_capability():
    abort = next(r for r in spec.load_requirements()["requirements"] if r["id"] == "ABORT-001")
    assert verdict_of(abort, [found(Outcome.FAILED, "ABORT-001")], capabilities=["abort"]).verdict == Verdict.FAIL
    assert verdict_of(abort, [found(Outcome.FAILED, "ABORT-001")]).verdict == Verdict.NOT_APPLICABLE


def test_not_testable_is_red_and_fails_the_run():
    verdict = verdict_of(record(), [found(Outcome.PASSED), found(Outcome.NOT_TESTABLE)])
    assert verdict.verdict == Verdict.NOT_TESTABLE
    assert not passes(verdict)


def test_no_finding_at_all_is_not_testable():
    verdict = verdict_of(record(), [])
    assert verdict.verdict == Verdict.NOT_TESTABLE
    assert not passes(verdict)


def test_a_should_not_testable_still_fails_the_run():
    assert not passes(verdict_of(record("SHOULD"), [found(Outcome.NOT_TESTABLE)]))


def test_not_testable_accepted_by_the_baseline_passes_the_run_but_stays_not_testable():
    accepted = {"X-001": "the database is remote"}
    verdict = verdict_of(record(), [found(Outcome.NOT_TESTABLE)], not_testable=accepted)
    assert verdict.verdict == Verdict.NOT_TESTABLE and verdict.note == "the database is remote"
    assert passes(verdict, accepted)
    assert not passes(verdict)  # only the baseline makes it acceptable


def test_accepted_not_testable_but_testable_now_is_stale():
    accepted = {"X-001": "the database is remote"}
    verdict = verdict_of(record(), [found(Outcome.PASSED)], not_testable=accepted)
    assert verdict.verdict == Verdict.STALE
    assert "baseline says not testable (the database is remote), but it is passed" == verdict.note
    assert not passes(verdict, accepted)


def test_a_listed_failure_is_xfail_and_the_run_passes():
    known = {"X-001": "issue #12"}
    verdict = verdict_of(record(), [found(Outcome.FAILED)], known_failures=known)
    assert verdict.verdict == Verdict.XFAIL and verdict.note == "issue #12"
    assert passes(verdict)


@pytest.mark.parametrize(
    ("outcome", "described"),
    [(Outcome.PASSED, "passed"), (Outcome.NOT_TESTABLE, "not testable"), (Outcome.HARNESS_ERROR, "harness error")],
)
def test_a_listed_failure_that_no_longer_fails_as_listed_is_stale(outcome, described):
    verdict = verdict_of(record(), [found(outcome)], known_failures={"X-001": "issue #12"})
    assert verdict.verdict == Verdict.STALE
    assert verdict.note.lower() == f"baseline lists it as failing (issue #12), but it is {described}"
    assert not passes(verdict)


def test_a_listed_should_failure_is_xfail_not_warn():
    assert verdict_of(record("SHOULD"), [found(Outcome.FAILED)], known_failures={"X-001": "r"}).verdict == Verdict.XFAIL


def test_a_harness_error_is_error_and_fails_the_run():
    verdict = verdict_of(record(), [found(Outcome.PASSED), found(Outcome.HARNESS_ERROR)])
    assert verdict.verdict == Verdict.ERROR
    assert not passes(verdict)


def test_a_failure_outweighs_a_harness_error_and_not_testable():
    verdict = verdict_of(record(), [found(Outcome.HARNESS_ERROR), found(Outcome.NOT_TESTABLE), found(Outcome.FAILED)])
    assert verdict.verdict == Verdict.FAIL


def test_a_harness_error_outweighs_not_testable():
    assert verdict_of(record(), [found(Outcome.NOT_TESTABLE), found(Outcome.HARNESS_ERROR)]).verdict == Verdict.ERROR


def test_excluded_requirements_are_excluded_with_their_reason():
    verdict = verdict_of(record(excluded="not observable"), [found(Outcome.FAILED)])
    assert verdict.verdict == Verdict.EXCLUDED and verdict.note == "not observable"
    assert passes(verdict)


def test_one_failing_verdict_fails_the_whole_run():
    good = verdict_of(record(rid="A-1"), [found(Outcome.PASSED, "A-1")])
    warn = verdict_of(record("SHOULD", rid="A-2"), [found(Outcome.FAILED, "A-2")])
    bad = verdict_of(record(rid="A-3"), [found(Outcome.FAILED, "A-3")])
    assert run_passes([good, warn], {})
    assert not run_passes([good, warn, bad], {})


# --- what the engine makes of a check's behaviour ------------------------------------------------------------


def run_one(function, requirements=("A-1", "A-2")):
    no_server = SimpleNamespace(scripts={}, controller=None)  # the checks here make no request, nor a project
    return asyncio.run(run_check(CheckSpec("x.check", function, tuple(requirements)), no_server))


def outcomes(check_run):
    return {f.requirement: (f.outcome, f.message) for f in check_run.findings}


def combined(check_run):
    """Per requirement, the outcome of all its findings together and the message of the first that is no pass."""
    result = {}
    for requirement in {f.requirement for f in check_run.findings}:
        mine = [f for f in check_run.findings if f.requirement == requirement]
        outcome = combine(mine)
        result[requirement] = (outcome, next((f.message for f in mine if f.outcome == outcome), mine[0].message))
    return result


def test_a_check_that_judges_everything():
    async def check(ctx):
        ctx.findings.passed("A-1")
        ctx.findings.expect("A-2", False, "got 500, expected 200")

    result = run_one(check)
    assert outcomes(result) == {"A-1": (Outcome.PASSED, "ok"), "A-2": (Outcome.FAILED, "got 500, expected 200")}
    assert result.id == "x.check" and result.duration >= 0


def test_a_requirement_the_check_forgot_is_a_harness_error():
    async def check(ctx):
        ctx.findings.passed("A-1")

    outcome, message = outcomes(run_one(check))["A-2"]
    assert outcome == Outcome.HARNESS_ERROR and message == "the check ended without judging this requirement"


def test_a_blocked_check_fails_that_requirement_and_the_rest_is_not_reached():
    async def check(ctx):
        ctx.findings.require(False, "A-1", "the session was not created")

    found_ = outcomes(run_one(check))
    assert found_["A-1"] == (Outcome.FAILED, "the session was not created")
    assert found_["A-2"][0] == Outcome.NOT_TESTABLE
    assert found_["A-2"][1].startswith("not reached: the check stopped when A-1 failed")


def test_not_testable_raised_makes_the_unjudged_requirements_not_testable():
    async def check(ctx):
        ctx.findings.passed("A-1")
        raise NotTestable("the target declares no slow tool")

    # A-1 was judged in one state only: the check stopped before the others, so it is no PASS either.
    assert combined(run_one(check)) == {
        "A-1": (Outcome.NOT_TESTABLE, "judged only in part: the target declares no slow tool"),
        "A-2": (Outcome.NOT_TESTABLE, "the target declares no slow tool"),
    }


def test_a_crashing_check_is_a_harness_error_of_what_it_did_not_judge():
    async def check(ctx):
        ctx.findings.passed("A-1")
        raise KeyError("oops")

    found_ = combined(run_one(check))
    assert found_["A-1"][0] == Outcome.HARNESS_ERROR and found_["A-1"][1].startswith("judged only in part: harness")
    assert found_["A-2"][0] == Outcome.HARNESS_ERROR and "KeyError" in found_["A-2"][1]


def test_what_ctx_not_testable_records_is_judged_not_testable():
    async def check(ctx):
        ctx.findings.passed("A-1")
        ctx.findings.not_testable("A-2", "no second user")

    findings = run_one(check).findings
    verdict = verdict_of(record(rid="A-2"), [f for f in findings if f.requirement == "A-2"])
    assert verdict.verdict == Verdict.NOT_TESTABLE and not passes(verdict)


def test_a_check_may_not_judge_a_requirement_it_does_not_list():
    async def check(ctx):
        ctx.findings.passed("B-9")

    found_ = outcomes(run_one(check))
    assert {outcome for outcome, _ in found_.values()} == {Outcome.HARNESS_ERROR}
    assert "B-9" not in found_ and "does not list" in found_["A-1"][1]


def test_a_flaky_requirement_is_flaky_whatever_its_findings():
    verdict = verdict_of(record(), [found(Outcome.FAILED)], known_failures={"X-001": "r"})
    flaky = judge(
        record(),
        [found(Outcome.FAILED)],
        capabilities={"channel_gns3"},
        known_failures={"X-001": "r"},
        accepted_not_testable={},
        flaky={"X-001": "the server had transient errors"},
    )
    assert verdict.verdict == Verdict.XFAIL and flaky.verdict == Verdict.FLAKY
    assert flaky.note == "the server had transient errors"


def test_flaky_fails_a_run_on_its_own_and_is_only_listed_against_a_baseline():
    flaky = judge(
        record(), [], capabilities={"channel_gns3"}, known_failures={}, accepted_not_testable={}, flaky={"X-001": "t"}
    )
    assert not run_passes([flaky], {})
    assert run_passes([flaky], {}, baseline=True)


def test_a_failed_set_up_step_blames_nothing_and_blocks_the_rest():
    async def check(ctx):
        ctx.findings.passed("A-1")
        raise BlockedBy("TESTABILITY-001", "a plain turn the check needs first was not served normally")

    found_ = combined(run_one(check))
    reason = "blocked by TESTABILITY-001: a plain turn the check needs first was not served normally"
    assert found_["A-1"] == (Outcome.NOT_TESTABLE, f"judged only in part: {reason}")
    assert found_["A-2"] == (Outcome.NOT_TESTABLE, reason)
    assert "TESTABILITY-001" not in found_  # judged by its own check, never failed from here


def test_a_gns3_rule_is_not_applicable_to_a_target_without_the_gns3_api():
    verdict = verdict_of(record(), [found(Outcome.FAILED)], capabilities={"channel_openai"}, gns3=False)
    assert verdict.verdict == Verdict.NOT_APPLICABLE and "GNS3 chat API" in verdict.note


def test_a_shared_channel_rule_applies_to_a_target_with_any_channel_and_only_then():
    shared = record(section="Channels")
    assert verdict_of(shared, [found(Outcome.FAILED)]).verdict == Verdict.NOT_APPLICABLE  # GNS3 only
    judged = verdict_of(shared, [found(Outcome.FAILED)], capabilities={"channel_ag_ui"}, gns3=False)
    assert judged.verdict == Verdict.FAIL


def test_a_protocol_rule_applies_with_its_channel_only():
    rule = record(section="AG-UI channel", capability="channel_ag_ui")
    assert verdict_of(rule, [found(Outcome.PASSED)], capabilities={"channel_openai"}).verdict == Verdict.NOT_APPLICABLE
    assert verdict_of(rule, [found(Outcome.PASSED)], capabilities={"channel_ag_ui"}, gns3=False).verdict == Verdict.PASS
