"""pytest plugin of the conformance suite (entry point `copilot_conformance`, loaded by every pytest of this
environment): `pytest --pyargs conformance --target NAME|FILE [--report-dir DIR] [--only CHECK-PREFIX]`.

The engine runs once per session (a session-scoped fixture), writes the same reports as `copilot-conformance run`,
and conformance/test_requirements.py turns each requirement of the registry into one test. The plugin is inert
in any other test run: it only adds its options, and reads `--target` only when the requirement tests are
collected.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .findings import Outcome, Verdict

REQUIREMENT_TESTS = Path(__file__).resolve().parent / "test_requirements.py"


class ConformanceWarning(UserWarning):
    """A SHOULD the target does not meet (verdict WARN): reported, the run still passes."""


@dataclass
class ConformanceRun:
    """What the requirement tests read: the engine's result and its redacted report view."""

    target: Any = None
    result: Any = None
    data: dict[str, Any] | None = None
    files: dict[str, str] = field(default_factory=dict)

    def entry(self, requirement_id: str) -> dict[str, Any] | None:
        return next((e for e in (self.data or {}).get("requirements", []) if e["id"] == requirement_id), None)


_STATE = pytest.StashKey[ConformanceRun]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("copilot-conformance", "conformance suite (pytest --pyargs conformance)")
    group.addoption(
        "--target",
        dest="conformance_target",
        metavar="NAME|FILE",
        default=None,
        help="conformance suite: a target file or the name of a built-in target (default: the reference server)",
    )
    group.addoption(
        "--report-dir",
        dest="conformance_report_dir",
        metavar="DIR",
        default="reports",
        help="conformance suite: where conformance.json, junit.xml, report.html and summary.txt go (default: reports)",
    )
    group.addoption(
        "--only",
        dest="conformance_only",
        metavar="CHECK-PREFIX",
        action="append",
        default=[],
        help="conformance suite: run only the checks whose id starts with this prefix (repeatable)",
    )
    group.addoption(
        "--conformance-jobs",
        dest="conformance_jobs",
        type=int,
        default=8,
        help="conformance suite: checks run at the same time (default: 8)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_STATE] = ConformanceRun()


def _is_requirement_test(item: pytest.Item) -> bool:
    return Path(str(item.path)).resolve() == REQUIREMENT_TESTS


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The target file is read (and a bad one reported as a usage error) only when the requirement tests are
    collected."""
    if not any(_is_requirement_test(item) for item in items):
        return
    from .checks import select
    from .errors import TargetError
    from .target import load_target

    state = config.stash[_STATE]
    try:
        state.target = load_target(config.getoption("conformance_target"))
    except TargetError as exc:
        raise pytest.UsageError(f"copilot-conformance: bad target: {exc}") from None
    only = config.getoption("conformance_only")
    if only and not select(only):
        raise pytest.UsageError(f"copilot-conformance: --only {' '.join(only)} selects no check")


@pytest.fixture(scope="session")
def conformance_run(request: pytest.FixtureRequest) -> ConformanceRun:
    """The suite, run once per session against the --target, its reports written to --report-dir."""
    from .engine import run_suite
    from .errors import TargetError
    from .reports import report_data, report_paths, write_reports
    from .target import load_target

    config = request.config
    state = config.stash[_STATE]
    if state.result is None:
        if state.target is None:
            state.target = load_target(config.getoption("conformance_target"))
        report_dir = Path(config.getoption("conformance_report_dir"))
        try:
            state.result = run_suite(
                state.target,
                jobs=max(1, config.getoption("conformance_jobs")),
                only=config.getoption("conformance_only") or None,
            )
        except TargetError as exc:  # preflight: the target file is wrong about the server
            pytest.exit(f"copilot-conformance: preflight stopped the run, change the target file: {exc}", returncode=2)
        state.files = {kind: str(path) for kind, path in report_paths(report_dir).items()}
        state.data = report_data(state.result, state.files)
        write_reports(state.result, report_dir, data=state.data)
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
    return "\n".join(lines)


def assert_requirement(run: ConformanceRun, requirement_id: str) -> None:
    """Pass for PASS, WARN (with a ConformanceWarning) and XFAIL; skip for N/A, EXCLUDED, NOT RUN and a NOT
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
    if verdict in (Verdict.NOT_APPLICABLE, Verdict.EXCLUDED, Verdict.NOT_RUN):
        pytest.skip(f"{verdict}: {entry['note']}")
    if verdict == Verdict.NOT_TESTABLE and not entry["failing"]:
        pytest.skip(f"NOT TESTABLE, accepted by the baseline: {entry['note']}")
    pytest.fail(_failure_text(entry), pytrace=False)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None or state.data is None:
        return
    from .reports.console import summary_text

    terminalreporter.write_sep("=", "copilot-conformance")
    data = state.data
    terminalreporter.write_line(f"target {data['target']['name']} at {data['base_url'] or '(not started)'}")
    for line in summary_text(data, state.files, brief=True).rstrip().splitlines():
        terminalreporter.write_line(line)
