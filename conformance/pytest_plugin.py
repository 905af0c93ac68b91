"""pytest plugin of the conformance suite (entry point `copilot_conformance`):

    pytest --pyargs conformance --copilot-target NAME|FILE [--copilot-profile protocol|contract]
           [--copilot-report-dir DIR] [--copilot-only SELECTOR] [--copilot-seed N] [--copilot-keep] [--copilot-jobs N]
           [-k TITLE-003]

The engine runs once per session (a session-scoped fixture), writes the same reports as `copilot-conformance run`,
and conformance/test_requirements.py turns each requirement of the registry into one test, its id as the test id.
Selecting tests (`-k`, node ids) runs only the checks that judge the selected requirements.

The plugin is installed with the package, so pytest loads it in every run of the environment; it stays inactive
(adds its options, nothing else, and its requirement tests skip) unless one of its `--copilot-*` options is given.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conformance.harness.findings import Outcome, Verdict

REQUIREMENT_TESTS = Path(__file__).resolve().parent / "test_requirements.py"
OPTIONS = {  # option -> (dest, default): every option of the plugin, all prefixed
    "--copilot-target": ("copilot_target", None),
    "--copilot-profile": ("copilot_profile", None),
    "--copilot-report-dir": ("copilot_report_dir", None),
    "--copilot-only": ("copilot_only", []),
    "--copilot-seed": ("copilot_seed", None),
    "--copilot-keep": ("copilot_keep", False),
    "--copilot-jobs": ("copilot_jobs", None),
}


class ConformanceWarning(UserWarning):
    """A SHOULD the target does not meet (verdict WARN): reported, the run still passes."""


@dataclass
class ConformanceRun:
    """What the requirement tests read: the engine's result and its redacted report view."""

    target: Any = None
    only: list[str] = field(default_factory=list)  # --copilot-only, plus the requirements the tests selected
    profile: str | None = None  # --copilot-profile, or the target's default
    result: Any = None
    data: dict[str, Any] | None = None
    files: dict[str, str] = field(default_factory=dict)

    def entry(self, requirement_id: str) -> dict[str, Any] | None:
        return next((e for e in (self.data or {}).get("requirements", []) if e["id"] == requirement_id), None)


_STATE = pytest.StashKey[ConformanceRun]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("copilot-conformance", "conformance suite (pytest --pyargs conformance --copilot-target X)")
    group.addoption(
        "--copilot-target",
        dest="copilot_target",
        metavar="NAME|FILE",
        default=None,
        help="a target file or the name of a built-in target (`reference`: the built-in reference server)",
    )
    group.addoption(
        "--copilot-profile",
        dest="copilot_profile",
        choices=("protocol", "contract"),
        default=None,
        help="protocol: judge only the protocols' own rules; contract: those and the contract's (default: contract "
        "for a target with the GNS3 chat API, protocol for a channel-only target)",
    )
    group.addoption(
        "--copilot-report-dir",
        dest="copilot_report_dir",
        metavar="DIR",
        default=None,
        help="where conformance.json, junit.xml, report.html and summary.txt go (default: reports)",
    )
    group.addoption(
        "--copilot-only",
        dest="copilot_only",
        metavar="SELECTOR",
        action="append",
        default=[],
        help="run only the checks that judge these requirement ids, areas or check ids (repeatable, or commas)",
    )
    group.addoption(
        "--copilot-seed", dest="copilot_seed", type=int, default=None, help="seed of the generated requests"
    )
    group.addoption(
        "--copilot-keep",
        dest="copilot_keep",
        action="store_true",
        default=False,
        help="keep the users, projects and sessions the run made on the target",
    )
    group.addoption(
        "--copilot-jobs", dest="copilot_jobs", type=int, default=None, help="checks run at the same time (default 8)"
    )


def _active(config: pytest.Config) -> bool:
    """Whether any --copilot-* option was given: without one the plugin does nothing."""
    return any(config.getoption(dest) not in (default, None) for dest, default in OPTIONS.values())


def pytest_configure(config: pytest.Config) -> None:
    if _active(config):
        config.stash[_STATE] = ConformanceRun()


def _is_requirement_test(item: pytest.Item) -> bool:
    return Path(str(item.path)).resolve() == REQUIREMENT_TESTS


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected: the requirements left decide the checks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The target file is read (a bad one is a usage error) only when requirement tests are collected; the
    requirements of the tests left after deselection select the checks to run."""
    tests = [item for item in items if _is_requirement_test(item)]
    if not tests:
        return
    if _STATE not in config.stash:
        skip = pytest.mark.skip(reason="copilot-conformance is inactive: give --copilot-target NAME|FILE to run it")
        for item in tests:
            item.add_marker(skip)
        return
    import gns3_copilot_spec as spec
    from conformance.checks import SelectionError, profile_note, select
    from conformance.errors import TargetError
    from conformance.harness.findings import not_applicable
    from conformance.harness.target import load_target

    state = config.stash[_STATE]
    try:
        state.target = load_target(config.getoption("copilot_target"))
    except TargetError as exc:
        raise pytest.UsageError(f"copilot-conformance: bad target: {exc}") from None
    state.profile = config.getoption("copilot_profile") or state.target.default_profile
    only = list(config.getoption("copilot_only"))
    records = {record["id"]: record for record in spec.load_requirements()["requirements"]}
    wanted = {item.callspec.params["requirement_id"] for item in tests}
    if wanted != set(records):  # -k or node ids chose some requirements: run only the checks that judge them
        for item in tests:  # an excluded requirement, or one the profile leaves out: its test says why, without a run
            record = records[item.callspec.params["requirement_id"]]
            if "excluded" in record:
                item.add_marker(pytest.mark.skip(reason=f"EXCLUDED: {record['excluded']}"))
            elif (note := profile_note(record, state.profile)) is not None:
                reason = not_applicable(record, state.target.capabilities)
                item.add_marker(pytest.mark.skip(reason=f"N/A: {reason}" if reason else f"NOT SELECTED: {note}"))
        only += sorted(
            r for r in wanted if "excluded" not in records[r] and not profile_note(records[r], state.profile)
        )
        if not only:  # every selected test was skipped above: nothing to run
            return
    try:
        select(only, state.profile)
    except SelectionError as exc:
        raise pytest.UsageError(f"copilot-conformance: {exc}") from None
    state.only = only


@pytest.fixture(scope="session")
def conformance_run(request: pytest.FixtureRequest) -> ConformanceRun:
    """The suite, run once per session against --copilot-target, its reports written to --copilot-report-dir."""
    from conformance.errors import ClientsMissing, TargetError
    from conformance.harness.environment import DEFAULT_SEED
    from conformance.harness.run_and_report import PREFLIGHT_STOPPED, run_and_report
    from conformance.harness.target import load_target

    config = request.config
    state = config.stash[_STATE]
    if state.result is None:
        if state.target is None:
            state.target = load_target(config.getoption("copilot_target"))
        report_dir = Path(config.getoption("copilot_report_dir") or "reports")
        try:
            reported = run_and_report(
                state.target,
                report_dir,
                jobs=max(1, config.getoption("copilot_jobs") or 8),
                only=state.only or None,
                seed=DEFAULT_SEED if config.getoption("copilot_seed") is None else config.getoption("copilot_seed"),
                keep=config.getoption("copilot_keep"),
                profile=state.profile,
            )
        except TargetError as exc:  # preflight: the target file is wrong about the server
            pytest.exit(f"copilot-conformance: {PREFLIGHT_STOPPED}: {exc}", returncode=2)
        except ClientsMissing as exc:  # before anything started: the command that installs them
            pytest.exit(f"copilot-conformance: {exc}", returncode=2)
        state.result, state.data, state.files = reported.result, reported.data, reported.files
        if reported.error:  # every requirement test errors with it (a session fixture's failure is kept)
            pytest.fail(f"copilot-conformance: {reported.error}", pytrace=False)
    return state


def _failure_text(entry: dict[str, Any]) -> str:
    lines = [f"{entry['id']} ({entry['level']}, {entry['section']}) {entry['verdict']}: {entry['text']}"]
    if entry["note"]:
        lines.append(f"note: {entry['note']}")
    problems = [f for f in entry["findings"] if f["outcome"] != Outcome.PASSED]
    if not problems and entry["message"] and entry["message"] != entry["note"]:
        lines.append(entry["message"])
    for finding in problems:
        lines.append(f"[{finding['check']}] {finding['outcome'].replace('_', ' ')}: {finding['message']}")
        for evidence in finding["evidence"][-1:]:
            if evidence.get("reproduction"):
                lines.append(f"    reproduce: {evidence['reproduction']}")
    if entry.get("reproduce"):
        lines.append(f"rerun: {entry['reproduce']['rerun']}")
    return "\n".join(lines)


def assert_requirement(run: ConformanceRun, requirement_id: str) -> None:
    """Pass for PASS, WARN (with a ConformanceWarning) and XFAIL; skip for N/A, EXCLUDED, NOT SELECTED and a NOT
    TESTABLE the baseline accepts; fail for FAIL, STALE, ERROR and NOT TESTABLE, with the findings' messages."""
    entry = run.entry(requirement_id)
    if entry is None:
        pytest.fail(f"{requirement_id}: the run has no verdict for it", pytrace=False)
    verdict = entry["verdict"]
    if verdict in (Verdict.PASS, Verdict.XFAIL):
        return
    if verdict == Verdict.WARN:
        warnings.warn(ConformanceWarning(f"{requirement_id} ({entry['level']}) WARN: {entry['message']}"), stacklevel=2)
        return
    if verdict in (Verdict.NOT_APPLICABLE, Verdict.EXCLUDED, Verdict.NOT_SELECTED):
        pytest.skip(f"{verdict}: {entry['note']}")
    if verdict == Verdict.NOT_TESTABLE and not entry["failing"]:
        pytest.skip(f"NOT TESTABLE, accepted by the baseline: {entry['note']}")
    pytest.fail(_failure_text(entry), pytrace=False)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None or state.data is None:
        return
    from conformance.reports.console import summary_text

    terminalreporter.write_sep("=", "copilot-conformance")
    data = state.data
    terminalreporter.write_line(f"target {data['target']['name']} at {data['base_url'] or '(not started)'}")
    for line in summary_text(data, state.files, brief=True).rstrip().splitlines():
        terminalreporter.write_line(line)
