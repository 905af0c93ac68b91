"""The reports of a run, all drawn from one redacted view of it (`model.report_data`):

- conformance.json: everything, machine-readable;
- junit.xml: one testcase per requirement, for CI;
- report.html: one self-contained page for people;
- summary.txt: what the console printed, and the whole evidence of every requirement not met.

Every requirement of the registry appears in each, whatever its verdict (NOT SELECTED when `--only` left it out),
with its source: each speaks in two voices, the protocol violations (with the protocol text each cites) apart from
the contract deviations (voices.py). None cuts evidence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.reports import console, html, json_report, junit
from conformance.reports.model import REPORT_FILES, report_data

__all__ = ["REPORT_FILES", "report_data", "report_paths", "write_reports"]


def report_paths(report_dir: str | Path) -> dict[str, Path]:
    """Where write_reports puts each report (json, junit, html, summary)."""
    directory = Path(report_dir)
    return {kind: directory / name for kind, name in REPORT_FILES.items()}


def write_reports(result: Any, report_dir: str | Path, *, data: dict[str, Any] | None = None) -> list[Path]:
    """Write the four reports of `result` (an engine RunResult) into `report_dir` (created if needed); the paths,
    in the order json, junit, html, summary."""
    paths = report_paths(report_dir)
    Path(report_dir).mkdir(parents=True, exist_ok=True)
    shown = {kind: str(path) for kind, path in paths.items()}
    if data is None:
        data = report_data(result, shown)
    else:
        data = {**data, "reports": shown}
    return [
        json_report.write(data, paths["json"]),
        junit.write(data, paths["junit"]),
        html.write(data, paths["html"]),
        console.write(data, paths["summary"], shown),
    ]
