"""Run the suite against a target and write its reports: what every front-end does (`copilot-conformance run`, the
pytest plugin, the GNS3 and peers runners), each adding only what is its own (its arguments, its progress, how it
shows the result). A preflight that proves the target file wrong raises TargetError, which each front-end words."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from conformance.errors import TargetError
from conformance.harness.engine import run_suite
from conformance.harness.environment import DEFAULT_SEED
from conformance.harness.execution import CheckRun
from conformance.harness.target import Target, load_target
from conformance.harness.verdicts import RunResult

# The exit status of every front-end: the run passes, it does not, the target file or the arguments are wrong.
EXIT_PASSED, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
PREFLIGHT_STOPPED = "preflight stopped the run, change the target file"


@dataclass
class Reported:
    result: RunResult
    data: dict[str, Any]  # the reports' redacted view of the result
    files: dict[str, str] = field(default_factory=dict)  # report kind -> its path; empty when none could be written
    written: list[Path] = field(default_factory=list)  # the four reports, then the findings document if asked for
    error: str | None = None  # what could not be written, and why

    @property
    def status(self) -> int:
        return EXIT_PASSED if self.result.passed else EXIT_FAILED


def run_and_report(
    target: Target,
    report_dir: Path,
    *,
    jobs: int = 8,
    only: list[str] | None = None,
    seed: int = DEFAULT_SEED,
    keep: bool = False,
    on_check_done: Callable[[CheckRun, int, int], None] | None = None,
    findings_doc: Path | None = None,
    profile: str | None = None,
) -> Reported:
    """Run the suite (conformance.harness.engine.run_suite) under `profile` (the target's default when None) and
    write conformance.json, junit.xml, report.html and summary.txt into `report_dir`, and the findings document
    (conformance.reports.findings_doc) when `findings_doc` names it. A report that cannot be written is the result's
    `error`, never a lost run. The reports' data says which profile judged the run (`profile`)."""
    from conformance.reports import report_data, report_paths, write_reports
    from conformance.reports.findings_doc import write_findings

    result = run_suite(target, jobs=jobs, only=only, seed=seed, keep=keep, on_check_done=on_check_done, profile=profile)
    files = {kind: str(path) for kind, path in report_paths(report_dir).items()}
    data = report_data(result, files)
    data.setdefault("profile", result.profile)
    try:
        written = write_reports(result, report_dir, data=data)
    except OSError as exc:
        return Reported(result, data, error=f"cannot write the reports to {report_dir}: {exc}")
    reported = Reported(result, data, files, written)
    if findings_doc is not None:
        try:
            reported.written.append(write_findings(Path(files["json"]), findings_doc))
        except OSError as exc:
            reported.error = f"cannot write the findings document {findings_doc}: {exc}"
    return reported


def run_and_echo(
    target_file: str,
    report_dir: Path,
    findings_doc: Path,
    *,
    jobs: int,
    only: list[str] | None,
    profile: str | None = None,
) -> int:
    """What the GNS3 and the peers runners do inside their network namespace: run against a target file (under
    `profile`, the target's default when None), write the reports and the findings document, print the summary and
    every file written; the exit status."""
    from conformance.reports.console import summary_text

    target = load_target(target_file)
    try:
        reported = run_and_report(target, report_dir, jobs=jobs, only=only, findings_doc=findings_doc, profile=profile)
    except TargetError as exc:
        click.echo(f"{PREFLIGHT_STOPPED}: {exc}", err=True)
        return EXIT_USAGE
    click.echo(summary_text(reported.data))
    for path in reported.written:
        click.echo(f"wrote {path}")
    if reported.error:
        click.echo(reported.error, err=True)
        return EXIT_FAILED
    return reported.status
